package daemon

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/namesrv"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// TestSlaveBelowTheMastersRetentionStartsOver: a slave is down while its
// master (async replication) stores several segments and its retention
// removes the slave's end. Started again, the slave's log starts over from
// the master's first retained byte; it catches up, counts the restart in
// its replication status, answers a pull below the queue's new start with
// OFFSET_MOVED to the master's first retained queue offset, and serves the
// retained messages from there.
func TestSlaveBelowTheMastersRetentionStartsOver(t *testing.T) {
	ns, err := StartNameServer("127.0.0.1:0", namesrv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	mclk := clock.NewManual(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	mcfg := smallBrokerConfig()
	mcfg.NameServers = []string{ns.Addr().String()}
	mcfg.Store.SegmentBytes, mcfg.Store.MaxMessageBytes = 64<<10, 32<<10
	mcfg.Store.Clock = mclk // retention's age rule reads it
	mcfg.Store.FileReservedTime = time.Hour
	mcfg.Store.RetentionInterval = 1000 * time.Hour // run by hand
	mcfg.HA = HAConfig{Listen: "127.0.0.1:0"}
	mcfg.Broker.ReplicationAsync = true
	master, err := StartBroker(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	scfg := smallBrokerConfig()
	scfg.NameServers = []string{ns.Addr().String()}
	scfg.Store.SegmentBytes, scfg.Store.MaxMessageBytes = mcfg.Store.SegmentBytes, mcfg.Store.MaxMessageBytes
	scfg.Broker.BrokerID, scfg.Broker.Role = 1, broker.RoleSlave
	slave, err := StartBroker(scfg)
	if err != nil {
		t.Fatal(err)
	}
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()

	body := func(i int) []byte { return fmt.Appendf(nil, "m%04d-%s", i, bytes.Repeat([]byte("x"), 4000)) }
	send := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if r := invokeOn(t, cl, master.Advertised(), sendRequest("Orders", body(i))); r.Code != 0 {
				t.Fatalf("send %d: code %d %q", i, r.Code, r.Remark)
			}
		}
	}
	send(0, 10)
	caughtUp(t, slave, master, 0)
	if m := pullOne(t, cl, slave.Advertised(), "Orders", 9); !bytes.Equal(m.Body, body(9)) {
		t.Fatal("the slave serves another message at 9")
	}
	oldEnd := slave.Store().Written()
	if err := slave.Close(); err != nil {
		t.Fatal(err)
	}

	send(10, 100) // ~400 KiB: six 64 KiB segments
	mclk.Advance(2 * time.Hour)
	if _, err := master.Store().RunRetention(); err != nil {
		t.Fatal(err)
	}
	ms := master.Store()
	logStart, first := ms.CommitLogMinOffset(), ms.MinOffset("Orders", 0)
	if logStart <= oldEnd || first <= 10 {
		t.Fatalf("the master's log starts at %d (queue at %d), the slave's end %d is not gone", logStart, first, oldEnd)
	}

	slave, err = StartBroker(scfg) // the same data directory (its FS)
	if err != nil {
		t.Fatal(err)
	}
	defer slave.Close()
	ss := slave.Store()
	caughtUp(t, slave, master, logStart)
	if ss.MaxOffset("Orders", 0) != 100 {
		t.Fatalf("the slave's Orders/0 ends at %d, want 100", ss.MaxOffset("Orders", 0))
	}
	info, _ := slave.Core().ReplicationStatus()
	if info.LogRestarts != 1 {
		t.Fatalf("the slave reports %d log restarts, want 1", info.LogRestarts)
	}
	// A consumer whose offset the master no longer holds is moved to the
	// queue's new start, and reads the retained messages from there.
	r := invokeOn(t, cl, slave.Advertised(), pullRequest("Orders", 5))
	if r.Code != rmq.RespPullOffsetMoved || r.Ext("nextBeginOffset") != strconv.FormatInt(first, 10) {
		t.Fatalf("pull at 5 after the restart: code %d next %q, want OFFSET_MOVED (%d) to %d", r.Code, r.Ext("nextBeginOffset"), rmq.RespPullOffsetMoved, first)
	}
	for _, off := range []int64{first, 99} {
		if m := pullOne(t, cl, slave.Advertised(), "Orders", off); !bytes.Equal(m.Body, body(int(off))) {
			t.Fatalf("the slave serves another message at %d", off)
		}
	}
	// It replicates on.
	send(100, 101)
	if m := pullOne(t, cl, slave.Advertised(), "Orders", 100); !bytes.Equal(m.Body, body(100)) {
		t.Fatal("the slave serves another message at 100")
	}
}

// caughtUp waits until slave's log is master's from logStart (its first
// byte) to master's end, and dispatched.
func caughtUp(t *testing.T, slave, master *Broker, logStart int64) {
	t.Helper()
	ss, ms := slave.Store(), master.Store()
	deadline := time.Now().Add(30 * time.Second)
	for ss.Written() != ms.Written() || ss.CommitLogMinOffset() != logStart || ss.Dispatched() != ms.Written() {
		if time.Now().After(deadline) {
			t.Fatalf("the slave's log is [%d, %d), dispatched to %d; the master's [%d, %d)", ss.CommitLogMinOffset(), ss.Written(), ss.Dispatched(), ms.CommitLogMinOffset(), ms.Written())
		}
		time.Sleep(5 * time.Millisecond) // polls the slave's progress
	}
}
