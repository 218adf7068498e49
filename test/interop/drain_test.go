package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rocketmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// The drain test (issue 19's acceptance item): "petrel broker drain moves
// producers to other groups within one route refresh while consumers
// finish the backlog; undrain restores it". Two name servers and two
// broker groups of one master each (real processes); the official Go
// client's producer sends continuously to a topic on both groups. The
// client refreshes routes every 30 s (a constant of the client, no
// option), so each step allows one refresh and a margin.

// routeRefresh is the Go client's route poll period; the margin covers
// the send that was in flight and a loaded machine.
const (
	routeRefresh = 30 * time.Second
	refreshSlack = 10 * time.Second
)

// startGroups starts two name servers and a master of each group.
func startGroups(t *testing.T, groups ...string) *haCluster {
	t.Helper()
	if buildErr != nil {
		t.Fatalf("cannot run the server: %v", buildErr)
	}
	c := &haCluster{t: t, brokers: map[string][]*proc{}, addr: map[*proc]string{}, http: map[*proc]string{}}
	dir := t.TempDir()
	t.Cleanup(c.stopAll)
	c.startNameServers(t, 2)
	for _, g := range groups {
		brAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		p := &proc{t: t, name: g, listen: []string{brAddr}, args: []string{"broker",
			"--namesrv", strings.Join(c.nsList, ";"), "--broker-name", g,
			"--data-dir", filepath.Join(dir, g), "--broker-listen", brAddr,
			"--http-listen", "", "--grpc-listen", "off", "--flush", "sync",
			// A master without slaves (it acknowledges alone).
			"--ha-listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--sync-replicas", "0"}}
		p.start()
		c.brokers[g] = []*proc{p}
		c.addr[p] = brAddr
	}
	c.waitRegistered(groups, 0)
	return c
}

// petrelCLI runs an operator command against the cluster's name servers.
func (c *haCluster) petrelCLI(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(petrelBin, append(args, "--namesrv", strings.Join(c.nsList, ";"))...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("petrel %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// lastOn is the latest begin time of an acked send that landed on broker.
func lastOn(acked []ackedMsg, broker string) time.Time {
	var last time.Time
	for _, m := range acked {
		if m.broker == broker && m.began.After(last) {
			last = m.began
		}
	}
	return last
}

func TestDrainMovesProducersAndUndrainRestores(t *testing.T) {
	c := startGroups(t, "broker-a", "broker-b")
	topic := uniqueName(t, "t")
	c.petrelCLI(t, "topic", "create", topic, "--queues", "4")
	c.awaitRoutedOverBoth(t, topic)
	resolver := primitive.NewPassthroughResolver(c.nsList)
	prod := c.startProducer(t, resolver)
	hp := startHAProducer(t, prod, topic, uniqueName(t, "m"), 10*time.Millisecond)
	hp.waitAcked(t, 60*time.Second, "50 acknowledged sends on each group", func(acked []ackedMsg) (bool, string) {
		na, nb := countOn(acked, "broker-a", time.Time{}), countOn(acked, "broker-b", time.Time{})
		return na >= 50 && nb >= 50, fmt.Sprintf("broker-a %d, broker-b %d", na, nb)
	})

	// Drain broker-a on both name servers.
	out := c.petrelCLI(t, "broker", "drain", "broker-a", "-o", "json")
	drained := time.Now()
	var res struct {
		Action      string `json:"action"`
		NameServers []struct {
			Address string `json:"address"`
			Topics  int    `json:"topics"`
		} `json:"nameServers"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Action != "drained" || len(res.NameServers) != 2 {
		t.Fatalf("drain answered %q (%v), want both name servers", out, err)
	}
	for _, a := range res.NameServers {
		if a.Topics < 1 {
			t.Fatalf("name server %s routes %d topics of broker-a, want the topic created", a.Address, a.Topics)
		}
	}
	for _, ns := range c.nsList {
		r, _, err := queryRoute(ns, topic)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range r.QueueDatas {
			if want := map[string]int{"broker-a": 4, "broker-b": 6}[q.BrokerName]; q.Perm != want {
				t.Fatalf("name server %s routes %s with perm %d after the drain, want %d", ns, q.BrokerName, q.Perm, want)
			}
		}
	}

	// Within one route refresh the producer sends only to broker-b, and
	// it still does after a further refresh and a heartbeat of the
	// broker (every 30 s: its registration does not undo the drain).
	hp.waitAcked(t, 2*routeRefresh+2*refreshSlack, "sends beginning after one route refresh and a broker heartbeat to land on broker-b only", func(acked []ackedMsg) (bool, string) {
		last := lastOn(acked, "broker-a")
		settled := drained.Add(routeRefresh + refreshSlack)
		if last.After(settled) {
			t.Fatalf("a send that began %v after the drain landed on broker-a (one route refresh is %v)", last.Sub(drained).Round(time.Millisecond), routeRefresh)
		}
		past := drained.Add(routeRefresh + refreshSlack + 5*time.Second)
		return countOn(acked, "broker-b", past) >= 100, fmt.Sprintf("last send to broker-a began %v after the drain; %d sends to broker-b began after %v",
			last.Sub(drained).Round(time.Millisecond), countOn(acked, "broker-b", past), past.Sub(drained))
	})
	acked, failed := hp.snapshot()
	if failed > 0 {
		t.Fatalf("%d sends failed across the drain; stale routes must still be served", failed)
	}
	t.Logf("the last send to broker-a began %v after the drain", lastOn(acked, "broker-a").Sub(drained).Round(time.Millisecond))

	// A consumer started now (broker-a drained) reads broker-a's backlog
	// to its end: every message acknowledged there.
	var onA []string
	for _, m := range acked {
		if m.broker == "broker-a" {
			onA = append(onA, m.body)
		}
	}
	col := newCollector()
	pc, err := rocketmq.NewPushConsumer(
		consumer.WithNsResolver(resolver),
		consumer.WithGroupName(uniqueName(t, "cg")),
		consumer.WithInstance(uniqueName(t, "ci")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		consumer.WithPullInterval(0),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			col.add(m.Queue.BrokerName, m)
		}
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	c.afterStop(func() { pc.Suspend(); _ = pc.Shutdown() })
	col.waitAll(t, 90*time.Second, fmt.Sprintf("the %d messages acknowledged on the drained broker-a", len(onA)), onA)

	// Undrain: within one route refresh sends land on broker-a again.
	out = c.petrelCLI(t, "broker", "undrain", "broker-a")
	if !strings.Contains(out, "broker broker-a undrained") {
		t.Fatalf("undrain printed %q", out)
	}
	undrained := time.Now()
	for _, ns := range c.nsList {
		r, _, err := queryRoute(ns, topic)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range r.QueueDatas {
			if q.Perm != 6 {
				t.Fatalf("name server %s routes %s with perm %d after the undrain, want 6", ns, q.BrokerName, q.Perm)
			}
		}
	}
	hp.waitAcked(t, routeRefresh+2*refreshSlack, "sends to land on broker-a again within one route refresh of the undrain", func(acked []ackedMsg) (bool, string) {
		n := countOn(acked, "broker-a", undrained)
		return n >= 50, fmt.Sprintf("%d sends to broker-a began after the undrain", n)
	})
	acked, _ = hp.snapshot()
	first := time.Time{}
	for _, m := range acked {
		if m.broker == "broker-a" && m.began.After(undrained) && (first.IsZero() || m.began.Before(first)) {
			first = m.began
		}
	}
	t.Logf("the first send to broker-a after the undrain began %v after it; %d messages sent in all", first.Sub(undrained).Round(time.Millisecond), len(acked))
	if _, failed := hp.snapshot(); failed > 0 {
		t.Fatalf("%d sends failed across the drain and undrain", failed)
	}
}
