package brokerfront_test

import (
	"bufio"
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
	"github.com/petrelmq/petrel/internal/store/commitlog"
)

// commitCounts records the commit log's group commits (their messages).
type commitCounts struct {
	mu sync.Mutex
	n  []int
}

func (c *commitCounts) observe(g commitlog.GroupCommit) {
	if g.Messages > 0 {
		c.mu.Lock()
		c.n = append(c.n, g.Messages)
		c.mu.Unlock()
	}
}

func (c *commitCounts) take() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.n
	c.n = nil
	return out
}

// memBroker runs a broker (no name server) on an in-memory network, where
// one Write of a client is one read of the broker, and returns a raw
// connection to it.
func memBroker(t *testing.T, mode commitlog.FlushMode, commits *commitCounts) (*daemon.Broker, *bufio.Reader, func([]byte)) {
	t.Helper()
	mem := netx.NewMem()
	c := daemontest.Start(t, func(cfg *daemon.BrokerConfig) {
		cfg.Network = mem.Host("10.0.0.1")
		cfg.Listen = "10.0.0.1:10911"
		cfg.NameServers = nil
		cfg.Store.FlushMode = mode
		cfg.Store.OnGroupCommit = commits.observe
	})
	nc, err := mem.Host("10.0.0.9").Dial(context.Background(), "10.0.0.1:10911")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	write := func(b []byte) {
		t.Helper()
		if _, err := nc.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	return c.Broker, bufio.NewReader(nc), write
}

// sendFrames encodes n sends to topic with opaques from first, every
// third a V2 header, the last (batch set) a SEND_BATCH_MESSAGE of two.
func sendFrames(t *testing.T, topic string, first, n int, batch bool) []byte {
	t.Helper()
	var out []byte
	for k := range n {
		i := first + k
		code, ext, body := rmq.CodeSendMessage, sendExt(topic, "", nil), []byte("m"+strconv.Itoa(i))
		if k%3 == 1 {
			code = codeSendMessageV2
			ext = map[string]string{"a": "pg", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0", "i": "", "j": "0", "k": "false", "l": "0", "m": "false"}
		}
		if batch && k == n-1 {
			code = rmq.CodeSendBatchMessage
			ext = sendExt(topic, "", map[string]string{"batch": "true"})
			body = message.EncodeBatch([]message.BatchItem{{Body: []byte("b1")}, {Body: []byte("b2")}})
		}
		cmd := remoting.NewRequest(code, ext, body)
		cmd.Opaque = int32(i)
		var err error
		if out, err = remoting.EncodeFrame(out, cmd); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// readSendAnswers reads n answers, checks each is a success for a distinct
// opaque, and returns the queue offsets by opaque.
func readSendAnswers(t *testing.T, br *bufio.Reader, n int) map[int32]string {
	t.Helper()
	got := make(map[int32]string, n)
	for range n {
		c, err := remoting.ReadFrame(br, 0)
		if err != nil {
			t.Fatalf("after %d of %d answers: %v", len(got), n, err)
		}
		if c.Code != rmq.RespSuccess {
			t.Fatalf("send %d answered %d %q", c.Opaque, c.Code, c.Remark)
		}
		if _, dup := got[c.Opaque]; dup {
			t.Fatalf("send %d answered twice", c.Opaque)
		}
		got[c.Opaque] = c.ExtFields["queueOffset"]
	}
	return got
}

// TestSendsOfOneReadAreOneGroupCommit: the sends (V1, V2 and a batch) that
// one read of the connection brought are stored by one group commit,
// under sync and async flush, and each is answered once.
func TestSendsOfOneReadAreOneGroupCommit(t *testing.T) {
	for _, mode := range []commitlog.FlushMode{commitlog.FlushSync, commitlog.FlushAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			commits := &commitCounts{}
			_, br, write := memBroker(t, mode, commits)
			write(sendFrames(t, "B", 1, 1, false)) // auto-creates the topic
			readSendAnswers(t, br, 1)
			commits.take()
			const n = 9
			write(sendFrames(t, "B", 100, n, true))
			offsets := readSendAnswers(t, br, n)
			seen := map[string]bool{}
			for _, off := range offsets {
				if seen[off] {
					t.Fatalf("two sends answered with queue offset %s: %v", off, offsets)
				}
				seen[off] = true
			}
			if got := commits.take(); len(got) != 1 || got[0] != n+1 {
				t.Fatalf("group commits of %v messages for %d sends (%d messages) of one read, want one", got, n, n+1)
			}
		})
	}
}

// TestConnectionFailingMidBatchLosesNoSend: sends read just before a
// malformed frame in the same read are stored once and answered before
// the connection closes.
func TestConnectionFailingMidBatchLosesNoSend(t *testing.T) {
	commits := &commitCounts{}
	d, br, write := memBroker(t, commitlog.FlushSync, commits)
	write(sendFrames(t, "C", 1, 1, false))
	readSendAnswers(t, br, 1)
	stream := sendFrames(t, "C", 10, 5, false)
	stream = append(stream, 0, 0, 0, 6, 0, 0, 0, 9, '{', '}') // header longer than frame
	write(stream)
	readSendAnswers(t, br, 5)
	if _, err := remoting.ReadFrame(br, 0); err == nil {
		t.Fatal("a frame after the five answers; want the connection closed")
	}
	// Answered sends are durable; the consume queue follows at dispatch.
	deadline := time.Now().Add(5 * time.Second)
	for d.Core().MaxOffset("C", 0) < 6 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := d.Core().MaxOffset("C", 0); n != 6 {
		t.Fatalf("queue C/0 holds %d messages, want 6 (each send once)", n)
	}
}
