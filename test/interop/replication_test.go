package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

// The replication tests run a cluster of real processes: two name servers
// (petrel namesrv) and two broker groups, broker-a and broker-b, each a
// master (broker id 0) and one slave (broker id 1), on 127.0.0.1. The
// official Go 4.x client produces to a topic spread over both groups and a
// push consumer reads it; the master of broker-a is killed with SIGKILL
// mid-stream and started again later.
//
// What the client does, and what Petrel must give it (read in the client's
// source):
//   - Pulls: the client asks for brokerAddrs[suggested id] of the queue's
//     broker name, starting at 0 (the master) and following each pull
//     answer's suggestWhichBrokerId; when that id is not listed it takes any
//     listed address. So the name servers must keep broker-a's queues in the
//     route with brokerAddrs {1: slave} while its master is gone, and a
//     slave answers suggestWhichBrokerId 0 (as RocketMQ's does), so that
//     the client returns to the master as soon as the route lists it again.
//   - Sends: the client sends only to queues whose broker name lists a
//     master (id 0), and its retries pick another queue; so once its route
//     drops broker-a's master (it refreshes routes every 30 s) every send
//     goes to broker-b.
//   - Offsets: the client commits offsets only to brokerAddrs[0] (the
//     master); pulls from a slave carry no commit flag. While the master is
//     away the running consumer keeps its place in memory and commits it
//     to the master once the master is routed again.

// proc is one petrel process (a name server or a broker) that a test can
// kill and start again with the same arguments.
type proc struct {
	t      testing.TB
	name   string
	args   []string
	listen []string // addresses that accept once it is up

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	out    *lockedBuffer
	starts int
}

func (p *proc) start() {
	p.t.Helper()
	p.mu.Lock()
	p.starts++
	if p.out == nil {
		p.out = &lockedBuffer{}
	}
	if p.starts > 1 {
		p.out.WriteString(fmt.Sprintf("----- start #%d -----\n", p.starts))
	}
	cmd := exec.Command(petrelBin, p.args...)
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		p.mu.Unlock()
		p.t.Fatalf("start %s: %v", p.name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	for _, addr := range p.listen {
		waitFor(p.t, startupTimeout, p.name+" accepts connections on "+addr, func() (bool, string) {
			select {
			case <-done:
				return false, "exited: " + tail(p.out.String(), 3000)
			default:
			}
			return accepts(addr)
		})
	}
}

func (p *proc) running() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// signal sends sig and waits up to timeout for the exit; then it kills.
func (p *proc) signal(sig syscall.Signal, timeout time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return errors.New("not started")
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
		return nil
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s still running %v after %v; killed", p.name, timeout, sig)
	}
}

// haCluster is two name servers and broker groups of a master and a slave.
type haCluster struct {
	t       testing.TB
	ns      []*proc
	nsList  []string
	brokers map[string][]*proc // broker name -> by broker id
	addr    map[*proc]string   // client address of a broker
	http    map[*proc]string   // HTTP address of a broker
	stopped []func()
}

// startHACluster starts the name servers, the masters of groups and, once
// the masters are registered (so the slaves learn their replication
// addresses from the name servers' answer), the slaves.
func startHACluster(t *testing.T, replication string, groups ...string) *haCluster {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("cannot run the server: %v", buildErr)
	}
	c := &haCluster{t: t, brokers: map[string][]*proc{}, addr: map[*proc]string{}, http: map[*proc]string{}}
	dir := t.TempDir() // removed after stopAll, which is registered later
	t.Cleanup(c.stopAll)
	c.startNameServers(t, 2)
	for id := range 2 {
		for _, g := range groups {
			brAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
			httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
			args := []string{"broker",
				"--namesrv", strings.Join(c.nsList, ";"),
				"--broker-name", g, "--broker-id", strconv.Itoa(id),
				"--data-dir", filepath.Join(dir, fmt.Sprintf("%s-%d", g, id)),
				"--broker-listen", brAddr,
				"--http-listen", httpAddr,
				"--grpc-listen", "off",
				"--flush", "sync",
				// Pull answers' suggestWhichBrokerId by RocketMQ's rule
				// (nothing is slow here: the consumers follow the master).
				"--slave-read-enable",
			}
			listen := []string{brAddr, httpAddr}
			if id == 0 {
				haAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
				args = append(args, "--ha-listen", haAddr, "--replication", replication)
				listen = append(listen, haAddr)
			}
			p := &proc{t: t, name: fmt.Sprintf("%s/%d", g, id), args: args, listen: listen}
			p.start()
			c.brokers[g] = append(c.brokers[g], p)
			c.addr[p], c.http[p] = brAddr, httpAddr
		}
		if id == 0 {
			c.waitRegistered(groups, 0)
		}
	}
	c.waitRegistered(groups, 1)
	return c
}

// waitRegistered waits until every name server lists broker id of groups.
func (c *haCluster) waitRegistered(groups []string, id int) {
	c.t.Helper()
	for _, ns := range c.nsList {
		for _, g := range groups {
			want := c.addr[c.brokers[g][id]]
			waitFor(c.t, 30*time.Second, fmt.Sprintf("name server %s to list %s/%d", ns, g, id), func() (bool, string) {
				got, err := clusterAddrs(ns, g)
				if err != nil {
					return false, err.Error()
				}
				return got[strconv.Itoa(id)] == want, fmt.Sprintf("brokerAddrs %v", got)
			})
		}
	}
}

// clusterAddrs is brokerAddrs of broker name g in a name server's cluster
// info (GET_BROKER_CLUSTER_INFO, 106).
func clusterAddrs(ns, g string) (map[string]string, error) {
	resp, err := rawCall(ns, 106, nil, 5*time.Second)
	if err != nil {
		return nil, err
	}
	if resp.Code != codeSuccess {
		return nil, fmt.Errorf("cluster info: code %d remark %q", resp.Code, resp.Remark)
	}
	var ci struct {
		BrokerAddrTable map[string]struct {
			BrokerAddrs map[string]string `json:"brokerAddrs"`
		} `json:"brokerAddrTable"`
	}
	body := unquotedIntKey.ReplaceAll(resp.Body, []byte(`$1"$2":`))
	if err := json.Unmarshal(body, &ci); err != nil {
		return nil, fmt.Errorf("cluster info %q: %w", resp.Body, err)
	}
	return ci.BrokerAddrTable[g].BrokerAddrs, nil
}

// afterStop has fn run once every process is stopped at the end of the
// test (clients whose shutdown must not race a live broker).
func (c *haCluster) afterStop(fn func()) { c.stopped = append(c.stopped, fn) }

func (c *haCluster) stopAll() {
	var all []*proc
	names := make([]string, 0, len(c.brokers))
	for g := range c.brokers {
		names = append(names, g)
	}
	sort.Strings(names)
	for _, g := range names {
		all = append(all, c.brokers[g]...)
	}
	all = append(all, c.ns...)
	for _, p := range all {
		if p.running() {
			if err := p.signal(syscall.SIGTERM, 20*time.Second); err != nil {
				c.t.Errorf("%v", err)
			}
		}
	}
	for _, fn := range c.stopped {
		fn()
	}
	if c.t.Failed() {
		for _, p := range all {
			c.t.Logf("----- %s: petrel %s\n%s", p.name, strings.Join(p.args, " "), tail(p.out.String(), 6000))
		}
	}
}

// replicationStatus is a replica's row of petrel cluster list -o json.
type replicationStatus struct {
	Broker      string `json:"broker"`
	ID          int64  `json:"id"`
	Replication struct {
		Epoch       uint32  `json:"epoch"`
		CommitPoint int64   `json:"commitPoint"`
		LagBytes    int64   `json:"lagBytes"`
		LagSeconds  float64 `json:"lagSeconds"`
		InSync      bool    `json:"inSync"`
	} `json:"replication"`
}

func (c *haCluster) status() ([]replicationStatus, error) {
	cmd := exec.Command(petrelBin, "cluster", "list", "-o", "json", "--namesrv", c.nsList[0])
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("petrel cluster list: %w", err)
	}
	var v struct {
		Brokers []replicationStatus `json:"brokers"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, fmt.Errorf("petrel cluster list output %q: %w", out, err)
	}
	return v.Brokers, nil
}

// waitInSync waits until the slave (id 1) of every group is in sync.
func (c *haCluster) waitInSync(groups ...string) {
	c.t.Helper()
	waitFor(c.t, 60*time.Second, "the slaves of "+strings.Join(groups, ", ")+" to be in sync", func() (bool, string) {
		st, err := c.status()
		if err != nil {
			return false, err.Error()
		}
		in := map[string]bool{}
		for _, s := range st {
			if s.ID == 1 && s.Replication.InSync {
				in[s.Broker] = true
			}
		}
		for _, g := range groups {
			if !in[g] {
				return false, fmt.Sprintf("%+v", st)
			}
		}
		return true, ""
	})
}

// metric reads an unlabelled counter or gauge from a broker's /metrics.
// startNameServers starts n name servers on free loopback ports.
func (c *haCluster) startNameServers(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		p := &proc{t: t, name: fmt.Sprintf("namesrv-%d", i+1), listen: []string{addr},
			args: []string{"namesrv", "--namesrv-listen", addr}}
		p.start()
		c.ns = append(c.ns, p)
		c.nsList = append(c.nsList, addr)
	}
}

// awaitRoutedOverBoth waits until every name server routes topic over
// both groups.
func (c *haCluster) awaitRoutedOverBoth(t *testing.T, topic string) {
	t.Helper()
	for _, ns := range c.nsList {
		waitFor(t, 30*time.Second, "name server "+ns+" to route "+topic+" over both groups", func() (bool, string) {
			r, ok, err := queryRoute(ns, topic)
			if err != nil || !ok {
				return false, fmt.Sprint(ok, err)
			}
			return len(r.QueueDatas) == 2, fmt.Sprintf("%+v", r)
		})
	}
}

func (c *haCluster) metric(p *proc, name string) (float64, error) {
	resp, err := http.Get("http://" + c.http[p] + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	sum, found := 0.0, false
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("metric line %q: %w", line, err)
		}
		sum, found = sum+v, true
	}
	if !found {
		return 0, fmt.Errorf("no %s in /metrics of %s", name, p.name)
	}
	return sum, nil
}

// ackedMsg is a message the producer got SEND_OK for.
type ackedMsg struct {
	body   string
	broker string
	queue  int
	offset int64
	began  time.Time // when its send began
}

// haProducer sends distinct messages one after the other until stopped,
// recording every SEND_OK.
type haProducer struct {
	mu     sync.Mutex
	acked  []ackedMsg
	failed int
	paused bool
	cond   *sync.Cond
	stop   chan struct{}
	done   chan struct{}
}

func startHAProducer(t *testing.T, prod rocketmq.Producer, topic, prefix string, pace time.Duration) *haProducer {
	hp := &haProducer{stop: make(chan struct{}), done: make(chan struct{})}
	hp.cond = sync.NewCond(&hp.mu)
	go func() {
		defer close(hp.done)
		for i := 0; ; i++ {
			select {
			case <-hp.stop:
				return
			case <-time.After(pace):
			}
			body := fmt.Sprintf("%s-%06d", prefix, i)
			began := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, err := prod.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
			cancel()
			hp.mu.Lock()
			if err == nil && res.Status == primitive.SendOK {
				hp.acked = append(hp.acked, ackedMsg{body: body, broker: res.MessageQueue.BrokerName,
					queue: res.MessageQueue.QueueId, offset: res.QueueOffset, began: began})
			} else {
				hp.failed++
			}
			hp.cond.Broadcast()
			hp.mu.Unlock()
		}
	}()
	t.Cleanup(hp.halt)
	return hp
}

func (hp *haProducer) halt() {
	select {
	case <-hp.stop:
	default:
		close(hp.stop)
	}
	<-hp.done
}

func (hp *haProducer) snapshot() ([]ackedMsg, int) {
	hp.mu.Lock()
	defer hp.mu.Unlock()
	return append([]ackedMsg(nil), hp.acked...), hp.failed
}

// waitAcked waits until cond over the acked messages holds.
func (hp *haProducer) waitAcked(t *testing.T, timeout time.Duration, what string, cond func(acked []ackedMsg) (bool, string)) {
	t.Helper()
	waitFor(t, timeout, what, func() (bool, string) {
		acked, failed := hp.snapshot()
		ok, why := cond(acked)
		return ok, fmt.Sprintf("%s (%d acked, %d failed sends)", why, len(acked), failed)
	})
}

// countOn counts acked messages on broker whose send began after from.
func countOn(acked []ackedMsg, broker string, from time.Time) int {
	n := 0
	for _, m := range acked {
		if m.broker == broker && m.began.After(from) {
			n++
		}
	}
	return n
}

// gate holds a consumer's callbacks while closed.
type gate struct {
	mu   sync.Mutex
	open chan struct{}
}

func newGate() *gate {
	g := &gate{open: make(chan struct{})}
	close(g.open)
	return g
}

func (g *gate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
		g.open = make(chan struct{})
	default:
	}
}

func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

func (g *gate) wait() {
	g.mu.Lock()
	ch := g.open
	g.mu.Unlock()
	<-ch
}

// TestReplicationSyncFailoverReads is the sync-replication acceptance run.
func TestReplicationSyncFailoverReads(t *testing.T) {
	t.Parallel()
	missing := runReplicationFailover(t, "sync")
	if missing != 0 {
		t.Errorf("under sync replication %d acknowledged messages of broker-a were not readable on its slave when its master was killed", missing)
	}
}

// TestReplicationAsyncFailoverReads is the async variant: it reports how
// many acknowledged messages the slave did not have at the kill.
func TestReplicationAsyncFailoverReads(t *testing.T) {
	t.Parallel()
	runReplicationFailover(t, "async")
}

// runReplicationFailover runs the scenario and returns how many messages
// acknowledged on broker-a before its master was killed were not readable
// on its slave then.
func runReplicationFailover(t *testing.T, replication string) int {
	groups := []string{"broker-a", "broker-b"}
	c := startHACluster(t, replication, groups...)
	c.waitInSync(groups...)
	a0, a1 := c.brokers["broker-a"][0], c.brokers["broker-a"][1]

	topic := uniqueName(t, "t")
	c.petrelCLI(t, "topic", "create", topic, "--queues", "4")
	c.awaitRoutedOverBoth(t, topic)
	resolver := primitive.NewPassthroughResolver(c.nsList)

	prod := c.startProducer(t, resolver)

	// The consumer keeps little in memory (8 messages a queue), so that
	// what it has not consumed when the master dies is still on the
	// brokers and must be read from the slave. It runs in a child process:
	// the client's flow control races itself (an unsynchronised counter).
	col := newCollector()
	group := uniqueName(t, "cg")
	g := startHAChild(t, c, topic, group, col)

	hp := startHAProducer(t, prod, topic, uniqueName(t, "m"), 5*time.Millisecond)
	start := time.Time{}
	hp.waitAcked(t, 60*time.Second, "100 acknowledged sends on each group", func(acked []ackedMsg) (bool, string) {
		na, nb := countOn(acked, "broker-a", start), countOn(acked, "broker-b", start)
		return na >= 100 && nb >= 100, fmt.Sprintf("broker-a %d, broker-b %d", na, nb)
	})
	if !col.waitUntil(90*time.Second, func(c *collector) bool { return len(c.all) >= 100 }) {
		t.Fatal("the consumer consumed fewer than 100 messages in 60 s")
	}

	// Hold the consumer, let a backlog build on both groups, then kill
	// broker-a's master.
	g.hold()
	acked, _ := hp.snapshot()
	holdAt := countOn(acked, "broker-a", start)
	hp.waitAcked(t, 30*time.Second, "100 more sends on broker-a while the consumer is held", func(acked []ackedMsg) (bool, string) {
		n := countOn(acked, "broker-a", start)
		return n >= holdAt+100, fmt.Sprintf("broker-a %d", n)
	})
	slaveGetsBefore, err := c.metric(a1, "petrel_get_messages_total")
	if err != nil {
		t.Fatal(err)
	}
	if err := a0.signal(syscall.SIGKILL, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	ackedAtKill, _ := hp.snapshot()

	// What the slave can serve: its queue ends once its dispatch settled
	// (nothing reaches it any more).
	slaveEnds := map[int]int64{}
	for q := range 4 {
		var last int64 = -1
		waitFor(t, 10*time.Second, fmt.Sprintf("broker-a's slave's end of queue %d to settle", q), func() (bool, string) {
			off, err := maxOffset(c.addr[a1], topic, q)
			if err != nil {
				return false, err.Error()
			}
			settled := off == last
			last = off
			if !settled {
				time.Sleep(500 * time.Millisecond)
			}
			return settled, strconv.FormatInt(off, 10)
		})
		slaveEnds[q] = last
	}
	missingOnSlave := 0
	var onA []string
	for _, m := range ackedAtKill {
		if m.broker != "broker-a" {
			continue
		}
		if m.offset >= slaveEnds[m.queue] {
			missingOnSlave++
		} else {
			onA = append(onA, m.body)
		}
	}
	t.Logf("%s replication: at the kill of broker-a's master %d messages were acknowledged on broker-a; %d of them were not readable on its slave (slave queue ends %v)",
		replication, len(onA)+missingOnSlave, missingOnSlave, slaveEnds)

	// The producer continues on broker-b.
	hp.waitAcked(t, 90*time.Second, "100 acknowledged sends on broker-b after the kill", func(acked []ackedMsg) (bool, string) {
		n := countOn(acked, "broker-b", killed)
		return n >= 100, fmt.Sprintf("broker-b %d since the kill", n)
	})
	acked, failed := hp.snapshot()
	if n := countOn(acked, "broker-a", killed); n != 0 {
		t.Fatalf("%d sends begun after broker-a's master was killed were acknowledged by broker-a", n)
	}
	t.Logf("after the kill: %d sends failed so far (the client's retries and route refresh move it to broker-b)", failed)

	// The consumer reads broker-a's backlog from the slave.
	g.release()
	col.waitAll(t, 120*time.Second, "broker-a's messages readable on its slave, consumed while its master is down", onA)
	slaveGets, err := c.metric(a1, "petrel_get_messages_total")
	if err != nil {
		t.Fatal(err)
	}
	if slaveGets <= slaveGetsBefore {
		t.Fatalf("broker-a's slave served no message while its master was down (petrel_get_messages_total %v, %v before the kill)", slaveGets, slaveGetsBefore)
	}
	t.Logf("broker-a's slave served %v messages (%v before the kill)", slaveGets-slaveGetsBefore, slaveGetsBefore)

	// The master returns with its own log; its slave catches up and the
	// producer and the consumer come back to it.
	a0.start()
	restarted := time.Now()
	c.waitRegistered([]string{"broker-a"}, 0)
	c.waitInSync("broker-a")
	hp.waitAcked(t, 90*time.Second, "50 acknowledged sends on broker-a after its master's restart", func(acked []ackedMsg) (bool, string) {
		n := countOn(acked, "broker-a", restarted)
		return n >= 50, fmt.Sprintf("broker-a %d since the restart", n)
	})
	hp.halt()
	acked, failed = hp.snapshot()
	all := make([]string, len(acked))
	for i, m := range acked {
		all[i] = m.body
	}
	col.waitAll(t, 120*time.Second, "every acknowledged message (acked ⊆ consumed)", all)
	masterGets, err := c.metric(a0, "petrel_get_messages_total")
	if err != nil {
		t.Fatal(err)
	}
	if masterGets == 0 {
		t.Fatal("consumption did not move back to broker-a's restarted master: it served no message")
	}
	// Back on the master, the client commits its offsets there again.
	ends := map[int]int64{}
	for _, m := range acked {
		if m.broker == "broker-a" {
			ends[m.queue] = max(ends[m.queue], m.offset+1)
		}
	}
	for q, end := range ends {
		waitFor(t, 30*time.Second, fmt.Sprintf("the committed offset of queue %d on broker-a's master to reach %d", q, end), func() (bool, string) {
			off, err := committedOffset(c.addr[a0], group, topic, q)
			if err != nil {
				return false, err.Error()
			}
			return off >= end, strconv.FormatInt(off, 10)
		})
	}
	// No message skipped: on every queue of both groups every offset up
	// to the last acknowledged one was delivered (also messages whose send
	// was not acknowledged but stored).
	type qkey struct {
		broker string
		queue  int
	}
	last := map[qkey]int64{}
	for _, m := range acked {
		k := qkey{m.broker, m.queue}
		last[k] = max(last[k], m.offset)
	}
	seen := map[qkey]map[int64]bool{}
	for _, d := range col.snapshot() {
		k := qkey{d.broker, d.queueID}
		if seen[k] == nil {
			seen[k] = map[int64]bool{}
		}
		seen[k][d.offset] = true
	}
	for k, end := range last {
		for off := int64(0); off <= end; off++ {
			if !seen[k][off] {
				t.Fatalf("queue %d of %s: offset %d was never delivered (last acknowledged offset %d)", k.queue, k.broker, off, end)
			}
		}
	}
	if off, err := committedOffset(c.addr[a1], group, topic, 0); err == nil {
		t.Logf("broker-a's slave answers committed offset %d for queue 0 (the Go client never commits to a slave)", off)
	}
	delivered := col.snapshot()
	dup := len(delivered) - len(all)
	t.Logf("%s replication: %d acknowledged, %d sends failed, %d deliveries (%d beyond one per acknowledged message); restarted master served %v messages",
		replication, len(acked), failed, len(delivered), dup, masterGets)
	return missingOnSlave
}

// haChildEnv runs this test binary as the replication tests' push consumer
// (see runHAChild).
const haChildEnv = "PETREL_INTEROP_HA_CHILD"

// runHAChild is a push consumer of INTEROP_GROUP on INTEROP_TOPIC of the
// name servers INTEROP_NS (semicolon-separated), from the first offset,
// keeping at most 8 messages a queue in memory. It reports STARTED, then
// "M <broker> <queue> <offset> <body>" for each consumed message. Lines on
// stdin: HOLD makes its callback wait, RELEASE lets it go on; the end of
// stdin shuts it down.
func runHAChild() int {
	emit := childEmitter()
	ns := strings.Split(os.Getenv("INTEROP_NS"), ";")
	topic, group := os.Getenv("INTEROP_TOPIC"), os.Getenv("INTEROP_GROUP")
	g := newGate()
	c, err := rocketmq.NewPushConsumer(
		consumer.WithNsResolver(primitive.NewPassthroughResolver(ns)),
		consumer.WithGroupName(group),
		consumer.WithInstance(group+"_child"),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithPullInterval(0),
		consumer.WithPullBatchSize(4),
		consumer.WithPullThresholdForQueue(8),
		consumer.WithPullThresholdForTopic(64), // else the client sets 102400 / queues a queue
	)
	if err != nil {
		emit("ERROR new consumer: %v", err)
		return 1
	}
	err = c.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		g.wait()
		for _, m := range msgs {
			emit("M %s %d %d %s", m.Queue.BrokerName, m.Queue.QueueId, m.QueueOffset, m.Body)
		}
		return consumer.ConsumeSuccess, nil
	})
	if err != nil {
		emit("ERROR subscribe: %v", err)
		return 1
	}
	if err := c.Start(); err != nil {
		emit("ERROR start: %v", err)
		return 1
	}
	emit("STARTED")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch sc.Text() {
		case "HOLD":
			g.hold()
		case "RELEASE":
			g.release()
		}
	}
	g.release()
	_ = c.Shutdown()
	return 0
}

// haChild is the parent's handle on the child consumer.
type haChild struct {
	mu    sync.Mutex
	stdin io.Writer
}

func (h *haChild) hold()    { h.send("HOLD") }
func (h *haChild) release() { h.send("RELEASE") }

func (h *haChild) send(line string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, _ = io.WriteString(h.stdin, line+"\n")
}

// startHAChild starts the child consumer and records its messages into
// col (member "c"); it is stopped once the cluster is.
func startHAChild(t *testing.T, c *haCluster, topic, group string, col *collector) *haChild {
	t.Helper()
	ch := startChildProcess(t, "replication consumer child", haChildEnv+"=1", "GORACE=exitcode=0",
		"INTEROP_NS="+strings.Join(c.nsList, ";"), "INTEROP_TOPIC="+topic, "INTEROP_GROUP="+group)
	started := make(chan string, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(ch.stdout)
		for sc.Scan() {
			line := sc.Text()
			if f := strings.SplitN(line, " ", 5); len(f) == 5 && f[0] == "M" {
				q, _ := strconv.Atoi(f[2])
				off, _ := strconv.ParseInt(f[3], 10, 64)
				col.add("c", &primitive.MessageExt{Message: primitive.Message{Body: []byte(f[4]),
					Queue: &primitive.MessageQueue{BrokerName: f[1], QueueId: q}}, QueueOffset: off})
				continue
			}
			select {
			case started <- line:
			default:
			}
		}
		_ = ch.cmd.Wait()
	}()
	c.afterStop(func() {
		_ = ch.stdin.Close()
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = ch.cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("replication consumer child stderr (tail; the client's own data races are expected):\n%s", tail(ch.stderr.String(), 4000))
		}
	})
	select {
	case line := <-started:
		if line != "STARTED" {
			t.Fatalf("replication consumer child: %s", line)
		}
	case <-exited:
		t.Fatalf("replication consumer child exited before starting:\n%s", tail(ch.stderr.String(), 4000))
	case <-time.After(startupTimeout):
		t.Fatalf("replication consumer child did not start within %v", startupTimeout)
	}
	return &haChild{stdin: ch.stdin}
}

// startProducer starts an official 4.x producer (retry 2, 3 s send
// timeout) that finds the brokers through resolver; it shuts down when the
// cluster stops.
func (c *haCluster) startProducer(t *testing.T, resolver primitive.NsResolver) rocketmq.Producer {
	t.Helper()
	prod, err := rocketmq.NewProducer(
		producer.WithNsResolver(resolver),
		producer.WithGroupName(uniqueName(t, "pg")),
		producer.WithInstanceName(uniqueName(t, "pi")),
		producer.WithRetry(2),
		producer.WithSendMsgTimeout(3*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := prod.Start(); err != nil {
		t.Fatal(err)
	}
	c.afterStop(func() { _ = prod.Shutdown() })
	return prod
}
