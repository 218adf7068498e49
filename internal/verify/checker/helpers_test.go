package checker

import (
	"hash/crc32"
	"time"

	"github.com/petrelmq/petrel/internal/verify/history"
)

// t0 is the time of a synthetic history's first line; build spaces lines
// 1 ms apart.
var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func sumOf(id string) uint32 { return crc32.ChecksumIEEE([]byte(id)) }

// build numbers the lines and gives each without a Time t0 + index ms.
func build(ops ...history.Op) []history.Op {
	out := make([]history.Op, len(ops))
	for i, op := range ops {
		op.Index = int64(i)
		if op.Time.IsZero() {
			op.Time = t0.Add(time.Duration(i) * time.Millisecond)
		}
		out[i] = op
	}
	return out
}

func inv(wl, id string) history.Op {
	op := history.New(history.Invoke, history.Send)
	op.Workload, op.Process, op.ID, op.Topic, op.Sum = wl, wl+"-p0", id, "t-"+wl, sumOf(id)
	return op
}

func outcome(t history.Type, wl, id string) history.Op {
	op := history.New(t, history.Send)
	op.Workload, op.Process, op.ID = wl, wl+"-p0", id
	return op
}

func ok(wl, id string) history.Op    { return outcome(history.OK, wl, id) }
func fail(wl, id string) history.Op  { return outcome(history.Fail, wl, id) }
func doubt(wl, id string) history.Op { return outcome(history.InDoubt, wl, id) }

// sent is a send acknowledged at once.
func sent(wl, id string) []history.Op { return []history.Op{inv(wl, id), ok(wl, id)} }

func del(wl, proc, id string) history.Op {
	op := history.New(history.Info, history.Deliver)
	op.Workload, op.Process, op.ID, op.Topic, op.Queue, op.Sum = wl, proc, id, "t-"+wl, 0, sumOf(id)
	return op
}

func drain(wl, id string, queue int32, offset int64) history.Op {
	op := history.New(history.Info, history.Drain)
	op.Workload, op.Process, op.ID, op.Topic, op.Queue, op.Offset, op.Sum = wl, wl+"-drain", id, "t-"+wl, queue, offset, sumOf(id)
	return op
}

func start(wl, proc, role string) history.Op {
	op := history.New(history.Info, history.Start)
	op.Workload, op.Process, op.Role = wl, proc, role
	return op
}

func keyed(op history.Op, key string, seq int64) history.Op { op.Key, op.Seq = key, seq; return op }
func txn(op history.Op, intent string) history.Op           { op.Txn = intent; return op }
func at(op history.Op, t time.Time) history.Op              { op.Time = t; return op }
func dueAt(op history.Op, t time.Time) history.Op           { op.DeliverAt = t; return op }
func withSum(op history.Op, sum uint32) history.Op          { op.Sum = sum; return op }

func cat(parts ...any) []history.Op {
	var out []history.Op
	for _, p := range parts {
		switch p := p.(type) {
		case history.Op:
			out = append(out, p)
		case []history.Op:
			out = append(out, p...)
		default:
			panic("cat: not an Op")
		}
	}
	return build(out...)
}
