package interop

// Automatic failover with the official clients: three name servers, each
// with an embedded controller voter, and broker group g of three replicas
// in controller mode (no --broker-id: the controller assigns the ids and
// the master role), sync replication. A second group h, a plain master,
// gives the 4.x producer somewhere to retry while its route (polled every
// 30 s) still names g's dead master.
//
// What each client does on a lost master (read in the clients' sources):
//   - 4.x (rocketmq-client-go/v2): a send to the dead address fails with a
//     connection error; the client retries at once on a queue of another
//     broker name (h). It sends to g again once a route refresh (every
//     30 s) names g's new master as broker id 0: the name servers learn it
//     from the new master's registration with the higher epoch.
//   - 5.x (rocketmq-clients golang v5): the endpoint is a TCP balancer
//     over the gRPC fronts of g's three replicas (frontBalancer); routes
//     list g's queues at that endpoint. A slave's front forwards sends,
//     receives and acks to the master the controller committed, so the
//     client writes again as soon as the controller has elected the new
//     master and it has taken its lease.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	rmq "github.com/apache/rocketmq-clients/golang/v5"
	"github.com/apache/rocketmq-clients/golang/v5/credentials"
)

// ctlGroup is the name of the controller-mode group; ctlOther the plain
// second group.
const (
	ctlGroup = "g"
	ctlOther = "h"
)

// ctlSegmentBytes is the brokers' commit-log segment size: 64 MiB, not
// the default 1 GiB, so that the two tests' eight brokers do not take
// 8 GiB of a shared disk (a broker refuses writes above 90 % in use).
const ctlSegmentBytes = "67108864"

// ctlCluster is the controller topology; the embedded haCluster holds
// the processes (brokers["g"] are g's replicas in start order, not by
// replica id; brokers["h"] the plain master).
type ctlCluster struct {
	*haCluster
	controllers []string         // --controller-listen of every voter
	grpc        map[*proc]string // gRPC front of each replica of g
	lb          *frontBalancer   // the 5.x clients' endpoint
}

func startCtlCluster(t *testing.T) *ctlCluster {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("cannot run the server: %v", buildErr)
	}
	hc := &haCluster{t: t, brokers: map[string][]*proc{}, addr: map[*proc]string{}, http: map[*proc]string{}}
	c := &ctlCluster{haCluster: hc, grpc: map[*proc]string{}}
	dir := t.TempDir()
	t.Cleanup(c.stopAll)

	var peers []string
	for i := range 3 {
		c.controllers = append(c.controllers, fmt.Sprintf("127.0.0.1:%d", freePort(t)))
		peers = append(peers, fmt.Sprintf("%d@%s", i+1, c.controllers[i]))
	}
	for i := range 3 {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		p := &proc{t: t, name: fmt.Sprintf("namesrv-%d", i+1), listen: []string{addr, c.controllers[i]},
			args: []string{"namesrv", "--namesrv-listen", addr,
				"--controller-id", strconv.Itoa(i + 1), "--controller-listen", c.controllers[i],
				"--controller-peers", strings.Join(peers, ","),
				"--data-dir", filepath.Join(dir, fmt.Sprintf("namesrv-%d", i+1))}}
		p.start()
		c.ns = append(c.ns, p)
		c.nsList = append(c.nsList, addr)
	}
	for i := range 3 {
		brAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		grpcAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		haAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		p := &proc{t: t, name: fmt.Sprintf("%s-%d", ctlGroup, i), listen: []string{brAddr, httpAddr, grpcAddr},
			args: []string{"broker",
				"--namesrv", strings.Join(c.nsList, ";"),
				"--controller", strings.Join(c.controllers, ","),
				"--broker-name", ctlGroup,
				"--data-dir", filepath.Join(dir, fmt.Sprintf("%s-%d", ctlGroup, i)),
				"--broker-listen", brAddr,
				"--http-listen", httpAddr,
				"--grpc-listen", grpcAddr,
				"--ha-listen", haAddr,
				"--flush", "sync",
				"--replication", "sync",
				"--slave-read-enable",
				"--segment-bytes", ctlSegmentBytes,
			}}
		p.start()
		c.brokers[ctlGroup] = append(c.brokers[ctlGroup], p)
		c.addr[p], c.http[p], c.grpc[p] = brAddr, httpAddr, grpcAddr
	}
	{
		brAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		p := &proc{t: t, name: ctlOther + "/0", listen: []string{brAddr, httpAddr},
			args: []string{"broker",
				"--namesrv", strings.Join(c.nsList, ";"),
				"--broker-name", ctlOther, "--broker-id", "0",
				"--data-dir", filepath.Join(dir, ctlOther),
				"--broker-listen", brAddr,
				"--http-listen", httpAddr,
				"--grpc-listen", "off",
				"--ha-listen=",
				"--flush", "sync",
				"--segment-bytes", ctlSegmentBytes,
			}}
		p.start()
		c.brokers[ctlOther] = append(c.brokers[ctlOther], p)
		c.addr[p], c.http[p] = brAddr, httpAddr
	}
	c.waitHealthy(nil)
	return c
}

// ctlGroupView is a group of `petrel cluster groups -o json`.
type ctlGroupView struct {
	Group    string  `json:"group"`
	Master   int64   `json:"master"`
	Epoch    uint32  `json:"epoch"`
	ISR      []int64 `json:"isr"`
	Replicas []struct {
		ID    int64  `json:"id"`
		Addr  string `json:"addr"`
		Alive bool   `json:"alive"`
		LEO   int64  `json:"leo"`
	} `json:"replicas"`
}

// group asks the controller (through the CLI) for group g.
func (c *ctlCluster) group() (ctlGroupView, error) {
	out, err := exec.Command(petrelBin, "cluster", "groups", "--controller", strings.Join(c.controllers, ","),
		"--group", ctlGroup, "-o", "json", "--timeout", "3s").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ctlGroupView{}, fmt.Errorf("petrel cluster groups: %w: %s", err, ee.Stderr)
		}
		return ctlGroupView{}, fmt.Errorf("petrel cluster groups: %w", err)
	}
	var v struct {
		Groups []ctlGroupView `json:"groups"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return ctlGroupView{}, fmt.Errorf("petrel cluster groups output %q: %w", out, err)
	}
	for _, g := range v.Groups {
		if g.Group == ctlGroup {
			return g, nil
		}
	}
	return ctlGroupView{}, fmt.Errorf("the controller knows no group %s: %s", ctlGroup, out)
}

// replica is the process of g's replica id in view v (nil: none).
func (c *ctlCluster) replica(v ctlGroupView, id int64) *proc {
	for _, r := range v.Replicas {
		if r.ID != id {
			continue
		}
		for _, p := range c.brokers[ctlGroup] {
			if c.addr[p] == r.Addr {
				return p
			}
		}
	}
	return nil
}

// idOf is p's replica id in view v (0: not listed).
func (c *ctlCluster) idOf(v ctlGroupView, p *proc) int64 {
	for _, r := range v.Replicas {
		if r.Addr == c.addr[p] {
			return r.ID
		}
	}
	return 0
}

// waitHealthy waits until g has a master, every running replica of g is
// alive and in the in-sync set, every name server routes g's master as
// broker id 0 and h, and cond (if any) holds; it returns the view.
func (c *ctlCluster) waitHealthy(cond func(v ctlGroupView) (bool, string)) ctlGroupView {
	c.t.Helper()
	var v ctlGroupView
	waitFor(c.t, 90*time.Second, "group "+ctlGroup+" healthy: a master, every running replica alive and in sync, routed as master by every name server", func() (bool, string) {
		var err error
		v, err = c.group()
		if err != nil {
			return false, err.Error()
		}
		if v.Master == 0 {
			return false, fmt.Sprintf("no master: %+v", v)
		}
		for _, p := range c.brokers[ctlGroup] {
			if !p.running() {
				continue
			}
			id := c.idOf(v, p)
			alive := false
			for _, r := range v.Replicas {
				alive = alive || (r.ID == id && r.Alive)
			}
			if id == 0 || !alive || !slices.Contains(v.ISR, id) {
				return false, fmt.Sprintf("%s (replica %d) not alive and in sync: %+v", p.name, id, v)
			}
		}
		master := c.replica(v, v.Master)
		if master == nil {
			return false, fmt.Sprintf("no process for master %d: %+v", v.Master, v)
		}
		for _, ns := range c.nsList {
			got, err := clusterAddrs(ns, ctlGroup)
			if err != nil {
				return false, err.Error()
			}
			if got["0"] != c.addr[master] {
				return false, fmt.Sprintf("name server %s lists %s as %v, master %d is %s", ns, ctlGroup, got, v.Master, c.addr[master])
			}
			other, err := clusterAddrs(ns, ctlOther)
			if err != nil {
				return false, err.Error()
			}
			if other["0"] != c.addr[c.brokers[ctlOther][0]] {
				return false, fmt.Sprintf("name server %s lists %s as %v", ns, ctlOther, other)
			}
		}
		if cond != nil {
			return cond(v)
		}
		return true, ""
	})
	return v
}

// topics creates the 4.x topic (over g and h) and the 5.x topic and waits
// until the name servers route the first over both groups and every
// replica of g knows the second (its gRPC front answers routes from its
// own topic table).
func (c *ctlCluster) topics() (t4, t5 string) {
	c.t.Helper()
	t4, t5 = uniqueName(c.t, "t4"), uniqueName(c.t, "t5")
	for _, topic := range []string{t4, t5} {
		if out, err := exec.Command(petrelBin, "topic", "create", topic, "--queues", "4", "--namesrv", strings.Join(c.nsList, ";")).CombinedOutput(); err != nil {
			c.t.Fatalf("petrel topic create %s: %v\n%s", topic, err, out)
		}
	}
	for _, ns := range c.nsList {
		waitFor(c.t, 30*time.Second, "name server "+ns+" to route "+t4+" over both groups", func() (bool, string) {
			r, ok, err := queryRoute(ns, t4)
			if err != nil || !ok {
				return false, fmt.Sprint(ok, err)
			}
			return len(r.QueueDatas) == 2, fmt.Sprintf("%+v", r)
		})
	}
	for _, p := range c.brokers[ctlGroup] {
		waitFor(c.t, 30*time.Second, p.name+" to know topic "+t5, func() (bool, string) {
			resp, err := rawCall(c.addr[p], 21, nil, 5*time.Second)
			if err != nil {
				return false, err.Error()
			}
			return strings.Contains(string(resp.Body), `"`+t5+`"`), "not in its topic table yet"
		})
	}
	return t4, t5
}

// endpoint5 is the 5.x clients' endpoint: a TCP balancer over every
// gRPC front of g (see frontBalancer).
func (c *ctlCluster) endpoint5() string {
	c.t.Helper()
	if c.lb == nil {
		var backends []string
		for _, p := range c.brokers[ctlGroup] {
			backends = append(backends, c.grpc[p])
		}
		c.lb = startFrontBalancer(c.t, backends)
	}
	return c.lb.addr
}

// frontBalancer is a TCP load balancer, what a deployment puts in front
// of the replicas' gRPC fronts: each connection goes to the next backend
// that accepts it. The 5.x clients are not given the fronts' addresses
// themselves ("a;b;c"): the Go client v5.1.2 picks one of an endpoint's
// addresses at random for each call, and a new connection is dialled
// blocking (grpc.WithBlock, 5 s DialTimeout, not configurable from the
// producer) while it holds the lock of its connection table
// (client_manager.go getRpcClient), so one dead address stalls every call
// of the client for 5 s each time it is picked.
type frontBalancer struct {
	addr     string
	backends []string
	ln       net.Listener
	mu       sync.Mutex
	next     int
	conns    map[net.Conn]bool
	wg       sync.WaitGroup
}

func startFrontBalancer(t testing.TB, backends []string) *frontBalancer {
	t.Helper()
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	if err != nil {
		t.Fatalf("front balancer: %v", err)
	}
	b := &frontBalancer{addr: ln.Addr().String(), backends: backends, ln: ln, conns: map[net.Conn]bool{}}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				b.serve(in)
			}()
		}
	}()
	t.Cleanup(b.close)
	return b
}

// serve relays in to the first backend (from the next in turn) that
// accepts a connection; none: in is closed.
func (b *frontBalancer) serve(in net.Conn) {
	b.mu.Lock()
	first := b.next
	b.next = (b.next + 1) % len(b.backends)
	b.mu.Unlock()
	var out net.Conn
	for i := range b.backends {
		c, err := net.DialTimeout("tcp", b.backends[(first+i)%len(b.backends)], time.Second)
		if err == nil {
			out = c
			break
		}
	}
	if out == nil || !b.track(in, out) {
		_ = in.Close()
		if out != nil {
			_ = out.Close()
		}
		return
	}
	done := make(chan struct{}, 2)
	relay := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go relay(out, in)
	go relay(in, out)
	<-done
	_ = in.Close()
	_ = out.Close()
	<-done
	b.mu.Lock()
	delete(b.conns, in)
	delete(b.conns, out)
	b.mu.Unlock()
}

// track records a relayed pair; false once the balancer is closed.
func (b *frontBalancer) track(in, out net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.conns == nil {
		return false
	}
	b.conns[in], b.conns[out] = true, true
	return true
}

func (b *frontBalancer) close() {
	_ = b.ln.Close()
	b.mu.Lock()
	for c := range b.conns {
		_ = c.Close()
	}
	b.conns = nil
	b.mu.Unlock()
	b.wg.Wait()
}

// startProducer5 starts a 5.x producer of topic on g's fronts; it stops
// before the processes do.
func (c *ctlCluster) startProducer5(t *testing.T, topic string) rmq.Producer {
	t.Helper()
	prod, err := rmq.NewProducer(&rmq.Config{Endpoint: c.endpoint5(), Credentials: &credentials.SessionCredentials{}},
		rmq.WithTopics(topic))
	if err != nil {
		t.Fatalf("new 5.x producer: %v", err)
	}
	initIsolated(t, prod)
	if err := prod.Start(); err != nil {
		t.Fatalf("start the 5.x producer: %v", err)
	}
	t.Cleanup(func() { _ = prod.GracefulStop() })
	return prod
}

// sendWith4 and sendWith5 are one send of body with each client; they return the
// broker name that acknowledged it.
func sendWith4(prod rocketmq.Producer, topic string) func(ctx context.Context, body string) (string, error) {
	return func(ctx context.Context, body string) (string, error) {
		res, err := prod.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
		if err != nil {
			return "", err
		}
		if res.Status != primitive.SendOK {
			return "", fmt.Errorf("send status %s (%d) from %s", sendStatusNames[res.Status], res.Status, res.MessageQueue.BrokerName)
		}
		return res.MessageQueue.BrokerName, nil
	}
}

// sendStatusNames names the 4.x client's send statuses other than SEND_OK.
var sendStatusNames = map[primitive.SendStatus]string{
	primitive.SendFlushDiskTimeout: "FLUSH_DISK_TIMEOUT", primitive.SendFlushSlaveTimeout: "FLUSH_SLAVE_TIMEOUT",
	primitive.SendSlaveNotAvailable: "SLAVE_NOT_AVAILABLE", primitive.SendUnknownError: "UNKNOWN_ERROR",
}

func sendWith5(prod rmq.Producer, topic string) func(ctx context.Context, body string) (string, error) {
	return func(ctx context.Context, body string) (string, error) {
		rs, err := prod.Send(ctx, &rmq.Message{Topic: topic, Body: []byte(body)})
		if err != nil {
			return "", err
		}
		if len(rs) != 1 || rs[0].MessageID == "" {
			return "", fmt.Errorf("receipts %v", rs)
		}
		return ctlGroup, nil
	}
}

// sentMsg is a send that was acknowledged (SEND_OK).
type sentMsg struct {
	body   string
	broker string
	began  time.Time // of the attempt that was acknowledged
	acked  time.Time
	fails  int // failed attempts of this message before
}

// sendFailure is one failed attempt.
type sendFailure struct {
	body string
	at   time.Time
	err  string
}

// sendLoop sends distinct messages one after the other with one client;
// a failed send is tried again (the same body) after retryDelay until it
// is acknowledged, so every failure window shows as the failed attempts
// of one message.
type sendLoop struct {
	name string
	mu   sync.Mutex
	sent []sentMsg
	fail []sendFailure
	stop chan struct{}
	done chan struct{}
}

func startSendLoop(t *testing.T, name string, pace, retryDelay time.Duration, send func(ctx context.Context, body string) (string, error)) *sendLoop {
	l := &sendLoop{name: name, stop: make(chan struct{}), done: make(chan struct{})}
	prefix := uniqueName(t, name)
	go func() {
		defer close(l.done)
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				return
			case <-time.After(pace):
			}
			body := fmt.Sprintf("%s-%06d", prefix, i)
			for fails := 0; ; fails++ {
				began := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				broker, err := send(ctx, body)
				cancel()
				now := time.Now()
				l.mu.Lock()
				if err == nil {
					l.sent = append(l.sent, sentMsg{body: body, broker: broker, began: began, acked: now, fails: fails})
				} else {
					l.fail = append(l.fail, sendFailure{body: body, at: now, err: err.Error()})
				}
				l.mu.Unlock()
				if err == nil {
					break
				}
				select {
				case <-l.stop:
					return
				case <-time.After(retryDelay):
				}
			}
		}
	}()
	t.Cleanup(l.halt)
	return l
}

func (l *sendLoop) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
}

func (l *sendLoop) snapshot() ([]sentMsg, []sendFailure) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.sent), slices.Clone(l.fail)
}

// waitSent waits until cond over the acknowledged sends holds.
func (l *sendLoop) waitSent(t *testing.T, timeout time.Duration, what string, cond func(sent []sentMsg) (bool, string)) {
	t.Helper()
	waitFor(t, timeout, l.name+": "+what, func() (bool, string) {
		sent, fail := l.snapshot()
		ok, why := cond(sent)
		last := ""
		if len(fail) > 0 {
			last = "; last failure: " + fail[len(fail)-1].err
		}
		return ok, fmt.Sprintf("%s (%d acknowledged, %d failed attempts%s)", why, len(sent), len(fail), last)
	})
}

// bodies of every acknowledged send.
func (l *sendLoop) bodies() []string {
	sent, _ := l.snapshot()
	out := make([]string, len(sent))
	for i, m := range sent {
		out[i] = m.body
	}
	return out
}

// firstAckAfter is the first send acknowledged in an attempt begun after
// from (on broker, "" any), and whether there is one.
func firstAckAfter(sent []sentMsg, from time.Time, broker string) (sentMsg, bool) {
	for _, m := range sent {
		if m.began.After(from) && (broker == "" || m.broker == broker) {
			return m, true
		}
	}
	return sentMsg{}, false
}

func countAfter(sent []sentMsg, from time.Time, broker string) int {
	n := 0
	for _, m := range sent {
		if m.began.After(from) && (broker == "" || m.broker == broker) {
			n++
		}
	}
	return n
}

// failureWindows summarises the failures: the most failed attempts of one
// message and the longest time from a message's first failed attempt to
// its acknowledgement.
func failureWindows(sent []sentMsg, fail []sendFailure) (maxFails int, longest time.Duration, worst string) {
	first := map[string]time.Time{}
	for _, f := range fail {
		if _, ok := first[f.body]; !ok {
			first[f.body] = f.at
		}
	}
	for _, m := range sent {
		if m.fails > maxFails {
			maxFails = m.fails
		}
		if at, ok := first[m.body]; ok && m.acked.Sub(at) > longest {
			longest, worst = m.acked.Sub(at), m.body
		}
	}
	// A message whose attempts were still failing when the loop stopped.
	acked := map[string]bool{}
	for _, m := range sent {
		acked[m.body] = true
	}
	open := map[string]int{}
	for _, f := range fail {
		if !acked[f.body] {
			open[f.body]++
		}
	}
	for b, n := range open {
		if n > maxFails {
			maxFails, worst = n, b
		}
	}
	return maxFails, longest, worst
}

// failureText lists a loop's failed attempts (at most n) for a message.
func failureText(fail []sendFailure, from time.Time, n int) string {
	var b strings.Builder
	for i, f := range fail {
		if i == n {
			fmt.Fprintf(&b, "  ... %d more\n", len(fail)-n)
			break
		}
		fmt.Fprintf(&b, "  %s at +%v: %s\n", f.body, f.at.Sub(from).Round(time.Millisecond), f.err)
	}
	return b.String()
}

// consumer5 is a 5.x simple consumer loop that receives and acks, recording
// every received message into col (member "v5").
type consumer5 struct {
	mu          sync.Mutex
	recvErrs    int
	ackErrs     int
	lastRecvErr string
	stop, done  chan struct{}
}

func (c *ctlCluster) startConsumer5(t *testing.T, topic string, col *collector) *consumer5 {
	t.Helper()
	group := uniqueName(t, "cg5")
	sc, err := rmq.NewSimpleConsumer(&rmq.Config{Endpoint: c.endpoint5(), ConsumerGroup: group, Credentials: &credentials.SessionCredentials{}},
		rmq.WithAwaitDuration(receiveAwait), rmq.WithSubscriptionExpressions(map[string]*rmq.FilterExpression{topic: rmq.SUB_ALL}))
	if err != nil {
		t.Fatalf("new 5.x simple consumer: %v", err)
	}
	if err := sc.Start(); err != nil {
		t.Fatalf("start the 5.x simple consumer: %v", err)
	}
	cs := &consumer5{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(cs.done)
		for {
			select {
			case <-cs.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), receiveAwait+10*time.Second)
			mvs, err := sc.Receive(ctx, 16, 10*time.Second)
			cancel()
			if err != nil {
				var st *rmq.ErrRpcStatus
				if errors.As(err, &st) && st.GetCode() == 40401 { // MESSAGE_NOT_FOUND: nothing new
					continue
				}
				cs.mu.Lock()
				cs.recvErrs++
				cs.lastRecvErr = err.Error()
				cs.mu.Unlock()
				select { // a front down: try again shortly
				case <-cs.stop:
					return
				case <-time.After(200 * time.Millisecond):
				}
				continue
			}
			for _, mv := range mvs {
				col.add("v5", &primitive.MessageExt{Message: primitive.Message{Body: mv.GetBody()}})
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := sc.Ack(ctx, mv); err != nil {
					cs.mu.Lock()
					cs.ackErrs++
					cs.mu.Unlock()
				}
				cancel()
			}
		}
	}()
	t.Cleanup(func() {
		select {
		case <-cs.stop:
		default:
			close(cs.stop)
		}
		<-cs.done
		_ = sc.GracefulStop()
	})
	return cs
}

func (cs *consumer5) errors() (recv, ack int, last string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.recvErrs, cs.ackErrs, cs.lastRecvErr
}

// ctlClients are both clients producing and consuming.
type ctlClients struct {
	l4, l5 *sendLoop
	col4   *collector // 4.x push consumer (child process), member "c"
	col5   *collector // 5.x simple consumer, member "v5"
	c5     *consumer5
	t4, t5 string
}

// startClients starts a 4.x producer and push consumer (on a topic of g
// and h) and a 5.x producer and simple consumer (on a topic of g), and
// waits until each producer has 100 acknowledged sends (the 4.x one 30 on
// g) and both consumers consumed.
func (c *ctlCluster) startClients(t *testing.T, retryDelay time.Duration) *ctlClients {
	t.Helper()
	rmq5Config(&petrel{}, "") // the 5.x client's log settings, before any 5.x client runs
	t4, t5 := c.topics()
	cl := &ctlClients{t4: t4, t5: t5, col4: newCollector(), col5: newCollector()}
	startHAChild(t, c.haCluster, t4, uniqueName(t, "cg4"), cl.col4)
	cl.c5 = c.startConsumer5(t, t5, cl.col5)
	prod4 := c.startProducer(t, primitive.NewPassthroughResolver(c.nsList))
	prod5 := c.startProducer5(t, t5)
	cl.l4 = startSendLoop(t, "v4", 10*time.Millisecond, retryDelay, sendWith4(prod4, t4))
	cl.l5 = startSendLoop(t, "v5", 10*time.Millisecond, retryDelay, sendWith5(prod5, t5))
	cl.l4.waitSent(t, 60*time.Second, "100 acknowledged sends, 30 of them on g", func(sent []sentMsg) (bool, string) {
		g := countAfter(sent, time.Time{}, ctlGroup)
		return len(sent) >= 100 && g >= 30, fmt.Sprintf("%d on g", g)
	})
	cl.l5.waitSent(t, 60*time.Second, "100 acknowledged sends", func(sent []sentMsg) (bool, string) {
		return len(sent) >= 100, ""
	})
	for _, col := range []*collector{cl.col4, cl.col5} {
		if !col.waitUntil(90*time.Second, func(c *collector) bool { return len(c.all) >= 50 }) {
			t.Fatalf("a consumer consumed fewer than 50 messages in 90 s (4.x %d, 5.x %d)", len(cl.col4.snapshot()), len(cl.col5.snapshot()))
		}
	}
	return cl
}

// finish stops both producers and waits until every acknowledged message
// was consumed; it logs the duplicates.
func (cl *ctlClients) finish(t *testing.T, what string) {
	t.Helper()
	cl.l4.halt()
	cl.l5.halt()
	for _, x := range []struct {
		name string
		l    *sendLoop
		col  *collector
	}{{"4.x", cl.l4, cl.col4}, {"5.x", cl.l5, cl.col5}} {
		want := x.l.bodies()
		x.col.waitAll(t, 180*time.Second, what+": every message the "+x.name+" producer got SEND_OK for consumed by the "+x.name+" consumer", want)
		deliveries := len(x.col.snapshot())
		wanted := map[string]bool{}
		for _, b := range want {
			wanted[b] = true
		}
		distinct := 0
		x.col.mu.Lock()
		extra := 0
		for b, n := range x.col.byBody {
			distinct++
			if !wanted[b] {
				extra += n
			}
		}
		x.col.mu.Unlock()
		t.Logf("%s: %s client: %d acknowledged, all consumed; %d deliveries of %d distinct messages: %d duplicates, %d deliveries of messages stored without SEND_OK",
			what, x.name, len(want), deliveries, distinct, deliveries-distinct, extra)
	}
	recvErrs, ackErrs, last := cl.c5.errors()
	t.Logf("%s: 5.x consumer: %d failed receives (last: %s), %d failed acks", what, recvErrs, last, ackErrs)
}

// TestControllerFailoverOfficialClients: the official 4.x and 5.x Go
// clients produce and consume through a kill -9 of g's master; the
// controller elects a new master from the in-sync slaves with a higher
// epoch, both clients write again (the time from the kill to each one's
// first acknowledged send is logged), and every message acknowledged
// with SEND_OK is consumed afterwards (duplicates allowed, counted),
// also once the old master has come back as a slave.
func TestControllerFailoverOfficialClients(t *testing.T) {
	t.Parallel()
	c := startCtlCluster(t)
	cl := c.startClients(t, 100*time.Millisecond)

	before, err := c.group()
	if err != nil {
		t.Fatal(err)
	}
	old := c.replica(before, before.Master)
	if old == nil {
		t.Fatalf("no process for master %d: %+v", before.Master, before)
	}
	killed := time.Now()
	if err := old.signal(syscall.SIGKILL, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed %s, the master (replica %d) of %s at epoch %d, in-sync set %v", old.name, before.Master, ctlGroup, before.Epoch, before.ISR)

	var after ctlGroupView
	waitFor(t, 30*time.Second, "the controller to elect a new master of "+ctlGroup+" with a higher epoch", func() (bool, string) {
		after, err = c.group()
		if err != nil {
			return false, err.Error()
		}
		return after.Master != 0 && after.Master != before.Master && after.Epoch > before.Epoch, fmt.Sprintf("%+v", after)
	})
	promoted := time.Since(killed)
	if !slices.Contains(before.ISR, after.Master) {
		t.Errorf("new master %d was not in the in-sync set %v", after.Master, before.ISR)
	}
	if slices.Contains(after.ISR, before.Master) {
		t.Errorf("the dead master %d is still in the in-sync set %v", before.Master, after.ISR)
	}
	t.Logf("promotion seen %v after the kill: master %d, epoch %d -> %d, in-sync set %v", promoted.Round(time.Millisecond), after.Master, before.Epoch, after.Epoch, after.ISR)

	cl.l5.waitSent(t, 60*time.Second, "50 acknowledged sends begun after the kill", func(sent []sentMsg) (bool, string) {
		n := countAfter(sent, killed, "")
		return n >= 50, fmt.Sprintf("%d since the kill", n)
	})
	// The 4.x client writes to g again once its route names the new
	// master (route poll every 30 s).
	cl.l4.waitSent(t, 120*time.Second, "30 acknowledged sends on g begun after the kill", func(sent []sentMsg) (bool, string) {
		n := countAfter(sent, killed, ctlGroup)
		return n >= 30, fmt.Sprintf("%d on g since the kill", n)
	})
	sent4, fail4 := cl.l4.snapshot()
	sent5, fail5 := cl.l5.snapshot()
	first4, _ := firstAckAfter(sent4, killed, "")
	first4g, _ := firstAckAfter(sent4, killed, ctlGroup)
	first5, _ := firstAckAfter(sent5, killed, "")
	t.Logf("failover time, kill to first acknowledged send: 5.x client %v (via the fronts of g's surviving replicas); 4.x client %v (on %s), to g's new master %v (after its route refresh)",
		first5.acked.Sub(killed).Round(time.Millisecond), first4.acked.Sub(killed).Round(time.Millisecond), first4.broker, first4g.acked.Sub(killed).Round(time.Millisecond))
	// The bound: writes back within 10 s (session timeout 4 s,
	// the old lease surely expired after 3.35 s, then the promotion).
	if d := first5.acked.Sub(killed); d > failoverBound {
		t.Errorf("the 5.x client's first acknowledged send came %v after the kill, more than %v", d, failoverBound)
	}
	for _, x := range []struct {
		name string
		sent []sentMsg
		fail []sendFailure
	}{{"4.x", sent4, fail4}, {"5.x", sent5, fail5}} {
		maxFails, longest, worst := failureWindows(x.sent, x.fail)
		t.Logf("%s producer: %d failed attempts (most for one message %d; longest from a first failure to the ack %v, %s)\n%s",
			x.name, len(x.fail), maxFails, longest.Round(time.Millisecond), worst, failureText(x.fail, killed, 8))
	}

	// The old master comes back as a slave of the new one (cutting any
	// tail it had alone) while both clients go on.
	old.start()
	back := time.Now()
	rejoined := c.waitHealthy(func(v ctlGroupView) (bool, string) {
		return v.Master == after.Master && v.Epoch == after.Epoch, fmt.Sprintf("master %d epoch %d, want %d at %d", v.Master, v.Epoch, after.Master, after.Epoch)
	})
	t.Logf("the old master rejoined as a slave %v after its restart: in-sync set %v", time.Since(back).Round(time.Millisecond), rejoined.ISR)
	for _, l := range []*sendLoop{cl.l4, cl.l5} {
		l.waitSent(t, 60*time.Second, "20 acknowledged sends after the old master rejoined", func(sent []sentMsg) (bool, string) {
			n := countAfter(sent, back, "")
			return n >= 20, fmt.Sprintf("%d since", n)
		})
	}

	cl.finish(t, "through the kill of the master")
}

// failoverBound is the longest a 5.x client may wait after the kill of
// the master for its first acknowledged send (issue 17: writes back
// within 10 s).
const failoverBound = 10 * time.Second

// rollingRetryDelay is the pause before a failed send is tried again in
// the rolling restart.
const rollingRetryDelay = time.Second

// TestRollingRestartTransferFirst: every replica of g is restarted in
// turn (SIGTERM, start again on the same ports and data directory), the
// master only after `petrel cluster transfer` handed its role to an
// in-sync slave, each once the group is healthy again. Both official
// clients keep producing: no send fails for longer than one retry (a
// failed send is tried again after rollingRetryDelay and that try must
// be acknowledged), and every acknowledged message is consumed.
func TestRollingRestartTransferFirst(t *testing.T) {
	t.Parallel()
	c := startCtlCluster(t)
	cl := c.startClients(t, rollingRetryDelay)
	start, err := c.group()
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	replicas := slices.Clone(c.brokers[ctlGroup])
	sort.Slice(replicas, func(i, j int) bool { return c.idOf(start, replicas[i]) < c.idOf(start, replicas[j]) })
	transfers := 0
	for _, p := range replicas {
		v, err := c.group()
		if err != nil {
			t.Fatal(err)
		}
		id := c.idOf(v, p)
		if v.Master == id {
			out, err := exec.Command(petrelBin, "cluster", "transfer", "--group", ctlGroup, "--controller", strings.Join(c.controllers, ","), "--wait", "30s").CombinedOutput()
			if err != nil {
				t.Fatalf("petrel cluster transfer --group %s (master %d, epoch %d): %v\n%s", ctlGroup, id, v.Epoch, err, out)
			}
			nv, err := c.group()
			if err != nil {
				t.Fatal(err)
			}
			if nv.Master == id || nv.Master == 0 || nv.Epoch <= v.Epoch {
				t.Fatalf("after petrel cluster transfer the group is %+v (before: master %d epoch %d); output:\n%s", nv, id, v.Epoch, out)
			}
			transfers++
			t.Logf("+%v transfer: master %d -> %d, epoch %d -> %d: %s", time.Since(began).Round(time.Millisecond), id, nv.Master, v.Epoch, nv.Epoch, strings.TrimSpace(string(out)))
		}
		if err := p.signal(syscall.SIGTERM, 30*time.Second); err != nil {
			t.Fatalf("stop %s: %v", p.name, err)
		}
		stopped := time.Now()
		p.start()
		c.waitHealthy(func(v ctlGroupView) (bool, string) {
			return v.Master != id, fmt.Sprintf("replica %d is master again", id)
		})
		restarted := time.Now()
		t.Logf("+%v restarted %s (replica %d, was master: %v): back alive and in sync %v after its stop", time.Since(began).Round(time.Millisecond), p.name, id, v.Master == id, restarted.Sub(stopped).Round(time.Millisecond))
		for _, l := range []*sendLoop{cl.l4, cl.l5} {
			l.waitSent(t, 60*time.Second, "20 acknowledged sends after "+p.name+" is back", func(sent []sentMsg) (bool, string) {
				n := countAfter(sent, restarted, "")
				return n >= 20, fmt.Sprintf("%d since", n)
			})
		}
	}
	end, err := c.group()
	if err != nil {
		t.Fatal(err)
	}
	// Each transfer is one election; a restart caused none (the transfer
	// target may be restarted later, and is transferred away from then).
	if transfers == 0 || end.Epoch != start.Epoch+uint32(transfers) {
		t.Errorf("%d transfers, epoch %d -> %d: want at least one transfer and one epoch more per transfer, no other election", transfers, start.Epoch, end.Epoch)
	}
	cl.l4.halt()
	cl.l5.halt()
	for _, x := range []struct {
		name string
		l    *sendLoop
	}{{"4.x", cl.l4}, {"5.x", cl.l5}} {
		sent, fail := x.l.snapshot()
		maxFails, longest, worst := failureWindows(sent, fail)
		t.Logf("rolling restart: %s producer: %d acknowledged (%d on g), %d failed attempts; most for one message %d, longest from a first failure to the ack %v\n%s",
			x.name, len(sent), countAfter(sent, time.Time{}, ctlGroup), len(fail), maxFails, longest.Round(time.Millisecond), failureText(fail, began, 10))
		if maxFails > 1 {
			t.Errorf("rolling restart: the %s producer's message %s failed %d times in a row (retried every %v): a send failed for longer than one retry", x.name, worst, maxFails, rollingRetryDelay)
		}
	}
	cl.finish(t, "rolling restart")
}
