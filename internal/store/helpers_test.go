package store

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/vfs"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// smallConfig returns a config with tiny files so tests cross every file
// boundary, on fsys with a manual clock.
func smallConfig(fsys vfs.FS, clk clock.Clock) Config {
	cfg := DefaultConfig("/data")
	cfg.FS = fsys
	cfg.Clock = clk
	cfg.SegmentBytes = 8 << 10
	cfg.MaxMessageBytes = 4 << 10
	cfg.ConsumeQueueEntriesPerFile = 16
	cfg.IndexSlotsPerFile = 8
	cfg.IndexEntriesPerFile = 32
	cfg.StoreHost = netip.MustParseAddrPort("127.0.0.1:10911")
	return cfg
}

func mustOpen(t testing.TB, cfg Config) *Store {
	t.Helper()
	s, err := Open(cfg)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	return s
}

func newMsg(topic string, qid int32, body string, keys string) *message.Message {
	m := &message.Message{
		Topic:         topic,
		QueueID:       qid,
		Body:          []byte(body),
		BornTimestamp: t0.UnixMilli(),
		BornHost:      netip.MustParseAddrPort("127.0.0.2:40000"),
	}
	if keys != "" {
		m.SetProperty(message.PropertyKeys, keys)
	}
	m.SetProperty(message.PropertyUniqKey, fmt.Sprintf("U%s%d%s", topic, qid, body))
	return m
}

// waitDispatched waits until everything durable is in the consume queues.
func waitDispatched(t testing.TB, s *Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.disp.Load().WaitDispatched(ctx, s.Durable()); err != nil {
		t.Fatalf("wait for dispatch to %d: %v", s.Durable(), err)
	}
}

// getOne reads the message at offset of a queue.
func getOne(t testing.TB, s *Store, topic string, qid int32, off int64) (*message.Message, GetStatus) {
	t.Helper()
	res, err := s.GetMessages(topic, qid, off, 1, 0, nil)
	if err != nil {
		t.Fatalf("get %s/%d@%d: %v", topic, qid, off, err)
	}
	defer res.Release()
	if res.Status != Found {
		return nil, res.Status
	}
	m, _, err := message.Decode(res.Body)
	if err != nil {
		t.Fatalf("decode %s/%d@%d: %v", topic, qid, off, err)
	}
	return m, res.Status
}
