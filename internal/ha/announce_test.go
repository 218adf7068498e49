package ha

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// A master that dies right after answering a sync send leaves the send
// readable on its slave: WaitReplicated returns only once the slave that
// holds the bytes was sent a commit point covering them. Before, the
// commit point waited for the next bytes (HWPushDelay) and a master killed
// meanwhile left the send on the slave's disk above the commit point it
// knew, so its dispatcher never showed it (TestReplicationSyncFailoverReads
// failed on CI: 1 of 222 acknowledged messages not readable on the slave).
func TestCommitPointReachesTheSlaveBeforeTheSendIsAnswered(t *testing.T) {
	for _, delay := range []time.Duration{0, 2 * time.Millisecond, 50 * time.Millisecond} {
		t.Run(delay.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newCluster(t, syncCfg(1), big, func(c *cluster) { c.hwDelay = delay })
				n := c.addSlave(1, newMemLog(0, true), nil)
				c.await("the slave joins", c.inSync(1))
				var end int64
				for i := range 20 {
					end = c.put(i)
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					err := c.m.WaitReplicated(ctx, end)
					cancel()
					if err != nil {
						t.Fatalf("send %d: %v", i, err)
					}
				}
				// The master dies at once: nothing more is written to the
				// slave, what was written still arrives.
				c.m.Close()
				c.m = nil
				c.await("the slave sees its master gone", func() bool { return !n.s.Status().Connected })
				if cp := n.log.CommitPoint(); cp < end {
					t.Fatalf("the slave's commit point is %d after its master answered a send ending at %d and died: the send is on its disk (durable %d) but not readable there",
						cp, end, n.log.Durable())
				}
				c.check()
			})
		})
	}
}

// Covered, which lets the broker answer the sends queued behind one
// without waiting, stops where the slaves' knowledge does: a commit point
// move held back by HWPushDelay is not covered until it is sent.
func TestCoveredWaitsForTheCommitPointToBeSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, syncCfg(1), big, func(c *cluster) { c.hwDelay = 50 * time.Millisecond })
		c.addSlave(1, newMemLog(0, true), nil)
		c.await("the slave joins", c.inSync(1))
		c.await("the slave is told the commit point", func() bool { return c.m.Covered() == c.mlog.Written() })
		end := c.put(1)
		synctest.Wait() // copied and acked; the move waits for more bytes
		if hw := c.tr.HW(); hw != end {
			t.Fatalf("tracker HW %d, want %d once the slave acked", hw, end)
		}
		if cv := c.m.Covered(); cv >= end {
			t.Fatalf("Covered %d reaches the send ending at %d before the slave was sent that commit point", cv, end)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.m.WaitReplicated(ctx, end); err != nil {
			t.Fatal(err)
		}
		if cv := c.m.Covered(); cv < end {
			t.Fatalf("Covered %d below %d after WaitReplicated", cv, end)
		}
	})
}
