package broker

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// TestSuggestBrokerIDFollowsRocketMQsRule: the decision table of
// PullMessageProcessor (slaveReadEnable, slow, role, master reachable, the
// group's brokerId and whichBrokerWhenConsumeSlowly).
func TestSuggestBrokerIDFollowsRocketMQsRule(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    suggestion
		want int64
	}{
		{"slave reads off, master, slow", suggestion{slow: true, whenSlowly: 1}, 0},
		{"slave reads off, master, group brokerId 2", suggestion{groupBrokerID: 2, whenSlowly: 1}, 0},
		{"slave reads off, slave, slow, master down", suggestion{slave: true, slow: true, whenSlowly: 1}, 0},
		{"master, keeping up", suggestion{slaveRead: true, whenSlowly: 1}, 0},
		{"master, slow", suggestion{slaveRead: true, slow: true, whenSlowly: 1}, 1},
		{"master, slow, group says 2", suggestion{slaveRead: true, slow: true, whenSlowly: 2}, 2},
		{"master, keeping up, group brokerId 1", suggestion{slaveRead: true, groupBrokerID: 1, whenSlowly: 1}, 1},
		{"slave, keeping up, master up: back to the master", suggestion{slaveRead: true, slave: true, masterUp: true, groupBrokerID: 1, whenSlowly: 1}, 0},
		{"slave, keeping up, master down: the group's brokerId", suggestion{slaveRead: true, slave: true, groupBrokerID: 1, whenSlowly: 2}, 1},
		{"slave, keeping up, master down, default group", suggestion{slaveRead: true, slave: true, whenSlowly: 1}, 0},
		{"slave, slow, master up: stays on the slow-consumer broker", suggestion{slaveRead: true, slave: true, masterUp: true, slow: true, whenSlowly: 1}, 1},
		{"slave, slow, master down", suggestion{slaveRead: true, slave: true, slow: true, whenSlowly: 2}, 2},
	} {
		if got := suggestBrokerID(tc.s); got != tc.want {
			t.Errorf("%s: suggest %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestReadingSlowlyIsMoreThanTheRatioOfMemoryBehind: strictly more than
// ratio percent of memory behind the write point, without overflow for
// offsets and memory sizes above 2^31 and near 2^63.
func TestReadingSlowlyIsMoreThanTheRatioOfMemoryBehind(t *testing.T) {
	const gib = int64(1) << 30
	for _, tc := range []struct {
		write, last, memory int64
		ratio               int
		want                bool
	}{
		{1000, 600, 1000, 40, false}, // exactly 40 % behind
		{1000, 599, 1000, 40, true},
		{1000, 999, 1000, 40, false},
		{10 * gib, 10*gib - 4*gib, 10 * gib, 40, false},
		{10 * gib, 10*gib - 4*gib - 1, 10 * gib, 40, true},
		{5<<40 + 123, 5<<40 + 123 - 41*gib, 100 * gib, 40, true}, // offsets above 2^42
		{math.MaxInt64, 0, math.MaxInt64, 100, false},            // no overflow
		{math.MaxInt64, 0, math.MaxInt64 / 2, 100, true},
		{1000, 0, 0, 40, false},     // memory unknown
		{1000, -1, 1000, 40, false}, // no record read
	} {
		if got := readingSlowly(tc.write, tc.last, tc.memory, tc.ratio); got != tc.want {
			t.Errorf("write %d last %d memory %d ratio %d: slow %v, want %v", tc.write, tc.last, tc.memory, tc.ratio, got, tc.want)
		}
	}
}

// slowEnv is a broker with PhysicalMemory small enough that reading the
// first of n stored records of Orders/0 (~100 bytes each) is slow and
// reading the last is not.
func slowEnv(t *testing.T, slaveRead bool, edit func(*Config)) *env {
	t.Helper()
	return newEnv(t, func(_ *store.Config, c *Config) {
		c.SlaveReadEnable = slaveRead
		c.PhysicalMemory = 5_000 // 40 %: 2,000 bytes
		if edit != nil {
			edit(c)
		}
	})
}

func (e *env) suggested(group string, off int64) int64 {
	e.t.Helper()
	e.subscribe(1, "c-"+group, group, "Orders", "*")
	req := pullReq(group, "Orders", 0, off)
	req.MaxMsgs = 1
	res, err := e.b.Pull(context.Background(), req)
	if err != nil {
		e.t.Fatalf("pull at %d: %v", off, err)
	}
	defer res.Release()
	if res.Status != PullFound {
		e.t.Fatalf("pull at %d: status %v, want FOUND", off, res.Status)
	}
	return res.SuggestWhichBrokerID
}

func (e *env) fill(n int) {
	e.t.Helper()
	body := strings.Repeat("x", 100)
	for range n {
		e.send("Orders", 0, body)
	}
}

// TestPullFarBehindTheWritePointSuggestsASlave: on a master with
// SlaveReadEnable, a pull of the first of 100 records (~20 KB behind, over
// 40 % of 5,000 bytes) suggests whichBrokerWhenConsumeSlowly — 1 for a group
// not created, the group's own value for one that is — and a pull of the
// last the group's brokerId (0). Without SlaveReadEnable both suggest the
// master.
func TestPullFarBehindTheWritePointSuggestsASlave(t *testing.T) {
	e := slowEnv(t, true, nil)
	e.createTopic("Orders", 1)
	e.fill(100)
	if got := e.suggested("G", 0); got != 1 {
		t.Fatalf("slow pull, default group: suggest %d, want 1", got)
	}
	if got := e.suggested("G", 99); got != 0 {
		t.Fatalf("pull at the write point: suggest %d, want 0", got)
	}
	if err := e.b.UpdateGroup(GroupConfig{Name: "G2", ConsumeEnable: true, RetryQueueNums: 1, RetryMaxTimes: 16, WhichBrokerWhenConsumeSlowly: 2}); err != nil {
		t.Fatal(err)
	}
	if got := e.suggested("G2", 0); got != 2 {
		t.Fatalf("slow pull, group whichBrokerWhenConsumeSlowly 2: suggest %d, want 2", got)
	}

	off := slowEnv(t, false, nil)
	off.createTopic("Orders", 1)
	off.fill(100)
	if got := off.suggested("G", 0); got != 0 {
		t.Fatalf("slow pull without SlaveReadEnable: suggest %d, want 0", got)
	}

	// The ratio is the config's: at 100 % of 50 KB nothing here is slow.
	big := slowEnv(t, true, func(c *Config) { c.PhysicalMemory, c.AccessMessageInMemoryMaxRatio = 50_000, 100 })
	big.createTopic("Orders", 1)
	big.fill(100)
	if got := big.suggested("G", 0); got != 0 {
		t.Fatalf("pull 20 KB behind with 50 KB at 100 %%: suggest %d, want 0", got)
	}
}

// TestSlaveSendsConsumersBackToTheMaster: a slave answering a pull that
// keeps up suggests the master while its master answers its fetches, and
// the group's brokerId while it does not; a slow pull stays on
// whichBrokerWhenConsumeSlowly. So a consumer that read from the slave
// while the master was away goes back once it is there.
func TestSlaveSendsConsumersBackToTheMaster(t *testing.T) {
	var masterUp atomic.Bool
	e := slowEnv(t, true, func(c *Config) {
		c.BrokerID, c.Role = 1, RoleSlave
		c.ReplicationStatus = func() ReplicationInfo {
			return ReplicationInfo{Replicas: []ReplicaInfo{{ID: 1, InSync: masterUp.Load()}}}
		}
	})
	// What replication appended: records in the store.
	body := []byte(strings.Repeat("x", 100))
	for range 100 {
		m := &message.Message{Topic: "Orders", QueueID: 0, Body: body, BornHost: e.scfg.StoreHost, StoreHost: e.scfg.StoreHost}
		if err := e.st.Put(m); err != nil {
			t.Fatal(err)
		}
	}
	e.waitMax("Orders", 0, 100)
	// The group as the master's state stream gives it to the slave.
	if err := e.md.PutGroup(meta.Group{Name: "G", ConsumeEnable: true, RetryQueueNums: 1, RetryMaxTimes: 16, BrokerID: 1, WhichBrokerWhenConsumeSlowly: 1}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		up   bool
		off  int64
		want int64
	}{
		{true, 99, 0},  // keeping up, master there: back to it
		{false, 99, 1}, // master away: the group's brokerId
		{true, 0, 1},   // slow: whichBrokerWhenConsumeSlowly
		{false, 0, 1},
	} {
		masterUp.Store(tc.up)
		if got := e.suggested("G", tc.off); got != tc.want {
			t.Errorf("slave, master up %v, pull at %d: suggest %d, want %d", tc.up, tc.off, got, tc.want)
		}
	}
}

func TestLastRecordOffset(t *testing.T) {
	if got := lastRecordOffset(nil); got != -1 {
		t.Fatalf("no records: %d", got)
	}
	var body []byte
	for i, off := range []int64{300, 5 << 32, 100} {
		m := &message.Message{Topic: "T", Body: []byte{byte(i)}, PhysicalOffset: off}
		body = append(body, m.Encode()...)
	}
	if got := lastRecordOffset(body); got != 5<<32 {
		t.Fatalf("last record offset %d, want %d", got, int64(5<<32))
	}
	if got := lastRecordOffset(body[:len(body)-3]); got != 5<<32 {
		t.Fatalf("with a torn tail: %d, want %d", got, int64(5<<32))
	}
}

// TestConfigRefusesARatioOutsidePercent: AccessMessageInMemoryMaxRatio is a
// percent; the default is RocketMQ's 40.
func TestConfigRefusesARatioOutsidePercent(t *testing.T) {
	c := DefaultConfig()
	if c.AccessMessageInMemoryMaxRatio != 40 || c.SlaveReadEnable {
		t.Fatalf("defaults: ratio %d slaveReadEnable %v", c.AccessMessageInMemoryMaxRatio, c.SlaveReadEnable)
	}
	for _, r := range []int{-1, 101} {
		c.AccessMessageInMemoryMaxRatio = r
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "AccessMessageInMemoryMaxRatio") {
			t.Fatalf("ratio %d: %v", r, err)
		}
	}
}

// TestMemoryLimitHonoursTheCgroup: in a container the cgroup's memory
// limit, when below the machine's, is the memory of the rule; "max", a
// missing file or a huge v1 limit leave the machine's.
func TestMemoryLimitHonoursTheCgroup(t *testing.T) {
	const total = int64(64) << 30
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(p string) ([]byte, error) {
			if v, ok := m[p]; ok {
				return []byte(v), nil
			}
			return nil, errors.New("no such file")
		}
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
	}{
		{"no cgroup files", nil, total},
		{"v2 limit", map[string]string{"/sys/fs/cgroup/memory.max": "4294967296\n"}, 4 << 30},
		{"v2 max", map[string]string{"/sys/fs/cgroup/memory.max": "max\n"}, total},
		{"v1 limit", map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "2147483648\n"}, 2 << 30},
		{"v1 unlimited", map[string]string{"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, total},
		{"garbage", map[string]string{"/sys/fs/cgroup/memory.max": "lots"}, total},
	} {
		if got := memoryLimit(total, files(tc.files)); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := memoryLimit(0, files(map[string]string{"/sys/fs/cgroup/memory.max": "1000"})); got != 1000 {
		t.Errorf("machine memory unknown, cgroup 1000: %d", got)
	}
	if physicalMemory() <= 0 {
		t.Error("physicalMemory found no memory on this (Linux) machine")
	}
}
