package daemon

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/namesrv"
	"github.com/petrelmq/petrel/internal/remoting"
)

// replicatedPair starts a name server, a master (sync replication, one
// slave required) and its slave, which finds the master's replication
// address through the name server.
func replicatedPair(t *testing.T, syncReplicas int, awaitFirst bool) (master, slave *Broker, client *remoting.Client) {
	t.Helper()
	ns, err := StartNameServer("127.0.0.1:0", namesrv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	mcfg := smallBrokerConfig()
	mcfg.NameServers = []string{ns.Addr().String()}
	mcfg.HA = HAConfig{Listen: "127.0.0.1:0", SyncReplicas: syncReplicas, AwaitFirstSlave: awaitFirst}
	mcfg.Broker.ReplicationTimeout = 5 * time.Second
	master, err = StartBroker(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { master.Close() })
	scfg := smallBrokerConfig()
	scfg.NameServers = []string{ns.Addr().String()}
	scfg.Broker.BrokerID, scfg.Broker.Role = 1, broker.RoleSlave
	slave, err = StartBroker(scfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	client = remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(func() { client.Close() })
	return master, slave, client
}

func invokeOn(t *testing.T, cl *remoting.Client, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, req)
	if err != nil {
		t.Fatalf("invoke code %d on %s: %v", req.Code, addr, err)
	}
	return resp
}

func pullRequest(topic string, offset int64) *remoting.Command {
	return remoting.NewRequest(11, map[string]string{
		"consumerGroup": "cg", "topic": topic, "queueId": "0", "queueOffset": strconv.FormatInt(offset, 10), "maxMsgNums": "32",
		"sysFlag": "6", "commitOffset": "0", "suspendTimeoutMillis": "1000", "subscription": "*", "subVersion": "0", "expressionType": "TAG",
	}, nil)
}

// pullOne pulls queue 0 of topic at offset from addr until it answers a
// message (a slave shows a record once the commit point covers it).
func pullOne(t *testing.T, cl *remoting.Client, addr, topic string, offset int64) *message.Message {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp := invokeOn(t, cl, addr, pullRequest(topic, offset))
		if resp.Code == 0 {
			m, _, err := message.Decode(resp.Body)
			if err != nil {
				t.Fatalf("pulled body from %s: %v", addr, err)
			}
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("pull of %s@%d from %s: code %d %q", topic, offset, addr, resp.Code, resp.Remark)
		}
	}
}

// TestMasterAndSlaveReplicateThroughTheDaemon: a sync send is answered
// SEND_OK once the slave holds it, the slave serves it to a pull, it
// forwards a send to the master the name servers name (stored there, not
// by the slave: issue 17's 4.x producers with a stale route), and it keeps
// serving what it has when the master is gone.
func TestMasterAndSlaveReplicateThroughTheDaemon(t *testing.T) {
	master, slave, cl := replicatedPair(t, 1, false)
	// The slave needs a moment to connect; until then a sync send answers
	// SLAVE_NOT_AVAILABLE (11), stored on the master but not replicated.
	var resp *remoting.Command
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp = invokeOn(t, cl, master.Advertised(), sendRequest("Orders", []byte("hello")))
		if resp.Code == 0 || time.Now().After(deadline) {
			break
		}
		if resp.Code != 11 {
			t.Fatalf("send before the slave caught up: code %d %q; want 0 or SLAVE_NOT_AVAILABLE (11)", resp.Code, resp.Remark)
		}
	}
	if resp.Code != 0 {
		t.Fatalf("send: code %d %q; want SEND_OK once the slave is in sync", resp.Code, resp.Remark)
	}
	off, _ := strconv.ParseInt(resp.Ext("queueOffset"), 10, 64)
	if m := pullOne(t, cl, slave.Advertised(), "Orders", off); string(m.Body) != "hello" {
		t.Fatalf("the slave served %q, want hello", m.Body)
	}
	// A slow master may leave the forward unanswered (14) or unreplicated
	// (11, 12) for a while; the retry carries the same message id, which
	// the master's dedup window answers as the original.
	deadline = time.Now().Add(20 * time.Second)
	for {
		r := invokeOn(t, cl, slave.Advertised(), sendWithID("Orders", "FORWARDED", []byte("x")))
		if r.Code == 0 {
			if r.Ext("queueOffset") != strconv.FormatInt(off+1, 10) {
				t.Fatalf("send to the slave: queue offset %q; want the master's next, %d", r.Ext("queueOffset"), off+1)
			}
			break
		}
		if (r.Code != 11 && r.Code != 12 && r.Code != 14) || time.Now().After(deadline) {
			t.Fatalf("send to the slave: code %d %q; want the master's SEND_OK", r.Code, r.Remark)
		}
	}
	if m := pullOne(t, cl, master.Advertised(), "Orders", off+1); string(m.Body) != "x" {
		t.Fatalf("the master holds %q after the forwarded send, want x", m.Body)
	}
	if err := master.Close(); err != nil {
		t.Fatal(err)
	}
	if m := pullOne(t, cl, slave.Advertised(), "Orders", off); string(m.Body) != "hello" {
		t.Fatalf("with the master gone the slave served %q, want hello", m.Body)
	}
}

// TestMasterWithoutSlavesIsASingleBrokerUntilOneJoins: with the default
// --sync-replicas a master that never had a slave acks alone; once a slave
// has joined, the master waits for it (and records that it did).
func TestMasterWithoutSlavesIsASingleBrokerUntilOneJoins(t *testing.T) {
	ns, err := StartNameServer("127.0.0.1:0", namesrv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	mcfg := smallBrokerConfig()
	mcfg.NameServers = []string{ns.Addr().String()}
	mcfg.HA = HAConfig{Listen: "127.0.0.1:0", SyncReplicas: 1, AwaitFirstSlave: true}
	master, err := StartBroker(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	if r := invokeOn(t, cl, master.Advertised(), sendRequest("Solo", []byte("one"))); r.Code != 0 {
		t.Fatalf("send to a master that never had a slave: code %d %q; want SEND_OK", r.Code, r.Remark)
	}
	if m := pullOne(t, cl, master.Advertised(), "Solo", 0); string(m.Body) != "one" {
		t.Fatalf("pulled %q", m.Body)
	}
	scfg := smallBrokerConfig()
	scfg.NameServers = []string{ns.Addr().String()}
	scfg.Broker.BrokerID, scfg.Broker.Role = 1, broker.RoleSlave
	slave, err := StartBroker(scfg)
	if err != nil {
		t.Fatal(err)
	}
	if m := pullOne(t, cl, slave.Advertised(), "Solo", 0); string(m.Body) != "one" {
		t.Fatalf("the slave served %q", m.Body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for master.repl.tracker.Stats().SyncReplicas != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the master does not require its slave after it joined")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := mcfg.Store.FS.Stat("/data/" + joinedFile); err != nil {
		t.Fatalf("the join is not recorded in the data dir: %v", err)
	}
	slave.Close()
	two := sendRequest("Solo", []byte("two"))
	two.ExtFields["properties"] = "UNIQ_KEY\x01TWO\x02KEYS\x01k2\x02" // not a resend of "one" for the dedup window
	r := invokeOn(t, cl, master.Advertised(), two)
	if r.Code != 11 && r.Code != 12 {
		t.Fatalf("send with the slave gone: code %d %q ext %v stats %+v; want SLAVE_NOT_AVAILABLE (11) or FLUSH_SLAVE_TIMEOUT (12), never a silent downgrade", r.Code, r.Remark, r.ExtFields, master.repl.tracker.Stats())
	}
}
