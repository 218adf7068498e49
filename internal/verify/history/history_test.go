package history

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWriteRead(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	w.Keep()
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	w.SetClock(func() time.Time { return t0 })
	send := New(Invoke, Send)
	send.ID, send.Workload, send.Process, send.Sum = "m1", "queue", "queue-p0", 42
	if _, err := w.Append(send); err != nil {
		t.Fatal(err)
	}
	ok := New(OK, Send)
	ok.ID, ok.Queue, ok.Offset, ok.Latency = "m1", 0, 0, time.Millisecond
	if _, err := w.Append(ok); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ok); err == nil {
		t.Fatal("append after close succeeded")
	}
	ops, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 2 {
		t.Fatalf("read %d ops, want 2", len(ops))
	}
	if ops[0].Queue != -1 || ops[0].Offset != -1 {
		t.Errorf("unknown queue/offset read back as %d/%d, want -1/-1", ops[0].Queue, ops[0].Offset)
	}
	if ops[1].Queue != 0 || ops[1].Offset != 0 || ops[1].Index != 1 || !ops[1].Time.Equal(t0) || ops[1].Latency != time.Millisecond {
		t.Errorf("ok op read back as %+v", ops[1])
	}
	if got := w.Ops(); len(got) != 2 || got[0].ID != "m1" {
		t.Errorf("kept ops %+v", got)
	}
}

func TestReadRejectsTornLine(t *testing.T) {
	_, err := Read(strings.NewReader(`{"index":0,"type":"info","f":"phase"}` + "\n" + `{"index":1,"ty`))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("torn last line: err %v, want one naming line 2", err)
	}
}

func TestConcurrentAppendNumbersEveryLine(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				if _, err := w.Append(New(Info, Deliver)); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ops, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for i, op := range ops {
		if op.Index != int64(i) {
			t.Fatalf("line %d has index %d", i, op.Index)
		}
	}
	if len(ops) != 800 {
		t.Fatalf("%d lines, want 800", len(ops))
	}
}

// FuzzRead: `verify check` reads files users hand it; any input is an
// error or ops that write back and read again the same.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"index":0,"time":"2026-12-01T00:00:00Z","type":"invoke","f":"send","id":"a","queue":-1,"offset":-1,"sum":7}` + "\n"))
	f.Add([]byte(`{"index":1,"type":"info","f":"deliver","queue":0,"offset":3,"deliver_at":"2026-12-01T00:00:01Z","latency_ns":5}` + "\n\n"))
	f.Add([]byte("{\"index\":0,\"ty"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ops, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		w := NewWriter(&buf)
		for _, op := range ops {
			if _, err := w.Append(op); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		again, err := Read(&buf)
		if err != nil {
			t.Fatalf("a history we wrote does not read back: %v", err)
		}
		if len(again) != len(ops) {
			t.Fatalf("%d ops read back as %d", len(ops), len(again))
		}
	})
}
