package interop

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// Offsets committed on a slave while its master is away are kept (issue
// 16 item 5, the hand-back rule of the state stream): the master owns a
// group's offsets; a commit on a slave is stored there and handed back to
// the master once it is reachable; the master takes it when it is ahead of
// its own.
//
// The consumer that commits on the slave is played by raw remoting
// requests: the Go 4.x client never commits to a slave (it sends
// UPDATE_CONSUMER_OFFSET only to brokerAddrs[0] and keeps its place in
// memory), while the Java client does (its offset store falls back to any
// broker of the group when the route has no master). After the master's
// return an official Go push consumer of the same group starts and must
// begin where the slave's commits left it, skipping nothing.

const (
	reqPullMessage          = 11
	reqUpdateConsumerOffset = 15
)

func updateOffset(t *testing.T, addr, group, topic string, q int, off int64) {
	t.Helper()
	resp, err := rawCall(addr, reqUpdateConsumerOffset, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(q), "commitOffset": strconv.FormatInt(off, 10),
	}, 5*time.Second)
	if err != nil || resp.Code != codeSuccess {
		t.Fatalf("UPDATE_CONSUMER_OFFSET %s/%d=%d on %s: %v %+v", topic, q, off, addr, err, resp)
	}
}

// rawPullNext pulls up to n messages of a queue from addr at offset
// (committing commit with the pull's flag when commit ≥ 0) and returns the
// next offset to pull.
func rawPullNext(t *testing.T, addr, group, topic string, q int, offset, commit int64, n int) int64 {
	t.Helper()
	sysFlag := 4 // subscription
	if commit >= 0 {
		sysFlag |= 1 // commit offset
	}
	resp, err := rawCall(addr, reqPullMessage, map[string]string{
		"consumerGroup": group, "topic": topic, "queueId": strconv.Itoa(q), "queueOffset": strconv.FormatInt(offset, 10),
		"maxMsgNums": strconv.Itoa(n), "sysFlag": strconv.Itoa(sysFlag), "commitOffset": strconv.FormatInt(max(commit, 0), 10),
		"suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0", "expressionType": "TAG",
	}, 10*time.Second)
	if err != nil || resp.Code != codeSuccess {
		t.Fatalf("PULL %s/%d@%d from %s: %v %+v", topic, q, offset, addr, err, resp)
	}
	next, err := strconv.ParseInt(resp.ExtFields["nextBeginOffset"], 10, 64)
	if err != nil || next <= offset {
		t.Fatalf("PULL %s/%d@%d from %s: nextBeginOffset %q", topic, q, offset, addr, resp.ExtFields["nextBeginOffset"])
	}
	return next
}

func TestReplicationSlaveCommittedOffsetsAreKept(t *testing.T) {
	t.Parallel()
	c := startHACluster(t, "sync", "broker-a")
	c.waitInSync("broker-a")
	a0, a1 := c.brokers["broker-a"][0], c.brokers["broker-a"][1]
	master, slave := c.addr[a0], c.addr[a1]

	topic, group := uniqueName(t, "t"), uniqueName(t, "cg")
	out, err := exec.Command(petrelBin, "topic", "create", topic, "--queues", "2", "--namesrv", strings.Join(c.nsList, ";")).CombinedOutput()
	if err != nil {
		t.Fatalf("petrel topic create: %v\n%s", err, out)
	}
	waitRoute(t, c.nsList[0], topic)
	prod, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver(c.nsList)),
		producer.WithGroupName(uniqueName(t, "pg")),
		producer.WithInstanceName(uniqueName(t, "pi")),
		producer.WithRetry(2),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := prod.Start(); err != nil {
		t.Fatal(err)
	}
	c.afterStop(func() { _ = prod.Shutdown() })
	send := func(n int, prefix string) {
		for i := range n {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, err := prod.SendSync(ctx, primitive.NewMessage(topic, []byte(fmt.Sprintf("%s-%03d", prefix, i))))
			cancel()
			if err != nil || res.Status != primitive.SendOK {
				t.Fatalf("send %d: %v %v", i, res, err)
			}
		}
	}
	send(60, "before")
	ends := map[int]int64{}
	for q := range 2 {
		if ends[q], err = maxOffset(master, topic, q); err != nil || ends[q] < 20 {
			t.Fatalf("queue %d holds %d messages (%v); want ≥ 20", q, ends[q], err)
		}
	}

	// The consumer committed 5 on each queue to the master; the state
	// stream carries it to the slave.
	for q := range 2 {
		updateOffset(t, master, group, topic, q, 5)
	}
	for q := range 2 {
		waitFor(t, 30*time.Second, fmt.Sprintf("the slave to answer the master's offset 5 of queue %d", q), func() (bool, string) {
			off, err := committedOffset(slave, group, topic, q)
			return err == nil && off == 5, fmt.Sprint(off, err)
		})
	}

	// The master dies; the consumer goes on on the slave and commits there:
	// queue 0 by UPDATE_CONSUMER_OFFSET, queue 1 by a pull's commit flag.
	if err := a0.signal(syscall.SIGKILL, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	committed := map[int]int64{}
	next0 := rawPullNext(t, slave, group, topic, 0, 5, -1, 10)
	updateOffset(t, slave, group, topic, 0, next0)
	committed[0] = next0
	next1 := rawPullNext(t, slave, group, topic, 1, 5, -1, 10)
	rawPullNext(t, slave, group, topic, 1, next1, next1, 1)
	committed[1] = next1
	for q, want := range committed {
		off, err := committedOffset(slave, group, topic, q)
		if err != nil || off != want {
			t.Fatalf("the slave answers %d (%v) for queue %d after its own commit of %d", off, err, q, want)
		}
	}
	t.Logf("committed on the slave while the master was down: %v (the master had 5, 5)", committed)

	// The master returns: the slave hands its commits back, the master
	// takes them (they are ahead of its 5).
	a0.start()
	c.waitRegistered([]string{"broker-a"}, 0)
	c.waitInSync("broker-a")
	for q, want := range committed {
		waitFor(t, 60*time.Second, fmt.Sprintf("the master's offset of queue %d to reach the slave's commit %d", q, want), func() (bool, string) {
			off, err := committedOffset(master, group, topic, q)
			return err == nil && off >= want, fmt.Sprint(off, err)
		})
	}
	send(20, "after")

	// An official consumer of the group starts where the slave's commits
	// left it, and nothing is skipped.
	col := newCollector()
	startHAChild(t, c, topic, group, col)
	for q := range 2 {
		if ends[q], err = maxOffset(master, topic, q); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 90*time.Second, "the Go consumer to consume every message from the slave's commits to the end", func() (bool, string) {
		seen := map[int]map[int64]bool{0: {}, 1: {}}
		for _, d := range col.snapshot() {
			seen[d.queueID][d.offset] = true
		}
		for q := range 2 {
			for off := committed[q]; off < ends[q]; off++ {
				if !seen[q][off] {
					return false, fmt.Sprintf("queue %d offset %d not consumed yet (ends %v)", q, off, ends)
				}
			}
		}
		return true, ""
	})
	for _, d := range col.snapshot() {
		if int64(d.offset) < committed[d.queueID] {
			t.Fatalf("the consumer got queue %d offset %d, below the offset %d committed on the slave: the commit was not kept", d.queueID, d.offset, committed[d.queueID])
		}
	}
	for q, want := range committed {
		off, err := committedOffset(master, group, topic, q)
		if err != nil || off < want {
			t.Fatalf("the master's offset of queue %d is %d (%v), below the slave's commit %d", q, off, err, want)
		}
	}
}
