// Package history is the record `petrel verify` keeps of a run: one JSON
// object per line, one line per operation or event, appended as they
// happen by every client, the nemesis and the final drain. The checker
// (package checker) reads nothing else, so a saved history can be checked
// again offline (`petrel verify check FILE`).
//
// An operation that can fail is two lines: an Invoke when the client
// starts it and, when it ends, an OK (acknowledged), a Fail (refused: the
// broker answered an error, or the request never left the client) or an
// InDoubt (no answer: a timeout or a connection lost after the write, so
// the operation may or may not have taken effect). Deliveries, drain
// reads, faults and heals are single Info lines.
package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Type says where in an operation's life a line stands.
type Type string

const (
	Invoke  Type = "invoke"   // the client started the operation
	OK      Type = "ok"       // acknowledged
	Fail    Type = "fail"     // refused, known not to have taken effect
	InDoubt Type = "in_doubt" // no answer: it may or may not have taken effect
	Info    Type = "info"     // an event that has no outcome (delivery, drain, fault)
)

// Func names what a line is about.
type Func string

const (
	// Send is a producer's send (Invoke, then OK/Fail/InDoubt). On OK,
	// Queue and Offset are where the broker stored it (Offset -1 when the
	// protocol does not say, as over gRPC).
	Send Func = "send"
	// EndTxn is a producer's END_TRANSACTION for a half message it sent
	// (Invoke, then OK/Fail/InDoubt); Txn holds the decision sent.
	EndTxn Func = "end_txn"
	// CheckTxn is the producer answering a broker's check-back (Info);
	// Txn holds the answer.
	CheckTxn Func = "check_txn"
	// Deliver is a consumer receiving a message (Info). Process names the
	// consumer; for broadcasting, every member is its own Process.
	Deliver Func = "deliver"
	// Drain is a message found by the final read of every queue from its
	// first offset, after faults healed (Info); it is not a delivery.
	Drain Func = "drain"
	// Start is a client announcing itself and its Role (Info), so that a
	// broadcasting member that received nothing is still known.
	Start Func = "start"
	// Fault and Heal are the nemesis starting and ending a fault (Info);
	// Fault holds its kind, Target what it hit.
	Fault Func = "fault"
	Heal  Func = "heal"
	// Phase marks the run's phases (Info); Value is one of the Phase*
	// names below.
	Phase Func = "phase"
	// Compare is the end-of-run comparison of one broker group's replica
	// logs (Info): Group the group, Value what was compared, Error set
	// when a replica differs (the first differing offset) or the
	// comparison could not be made.
	Compare Func = "compare"
	// Security says how the run's clients and processes were protected
	// (Info, at most one, before the workloads start; none when neither
	// authentication nor TLS was on). Value is SecurityValue's.
	Security Func = "security"
)

// What a Security line names as on.
const (
	SecurityAuth = "auth" // --auth: every request signed and authorized
	SecurityTLS  = "tls"  // --tls: every connection in TLS
)

// SecurityValue is a Security line's Value: the comma-separated names of
// what was on (SecurityAuth, SecurityTLS), then ": " and detail.
func SecurityValue(on []string, detail string) string {
	return strings.Join(on, ",") + ": " + detail
}

// ParseSecurityValue splits a Security line's Value into the names of what
// was on and the detail.
func ParseSecurityValue(v string) (on []string, detail string) {
	names, detail, _ := strings.Cut(v, ": ")
	for _, n := range strings.Split(names, ",") {
		if n = strings.TrimSpace(n); n != "" {
			on = append(on, n)
		}
	}
	return on, detail
}

// Phase names (Op.Value of a Phase line).
const (
	PhaseWorkload = "workload" // producers and consumers started, faults may follow
	PhaseHealed   = "healed"   // faults stopped and every process is up again
	PhaseDrain    = "drain"    // consumers catching up, then the log read
	PhaseDone     = "done"     // the history is complete
)

// Roles of a Start line.
const (
	RoleProducer = "producer"
	RoleConsumer = "consumer"
)

// Transaction decisions (Op.Txn). On a Send of a half message, Txn is
// the outcome the producer intends: Commit or Rollback sent in
// END_TRANSACTION, or CheckCommit / CheckRollback when it sends no
// decision and answers the broker's check-back with that.
const (
	Commit        = "commit"
	Rollback      = "rollback"
	CheckCommit   = "check_commit"
	CheckRollback = "check_rollback"
)

// Op is one line of a history. Fields that do not apply are left zero and
// omitted from the JSON, except Queue and Offset, which use -1 for "not
// known" (queue 0 and offset 0 are real positions).
type Op struct {
	// Index is the line's position in the history, from 0; the Writer
	// sets it.
	Index int64 `json:"index"`
	// Time is when the line was written (wall clock of the verify
	// process; every client and the nemesis share it).
	Time     time.Time `json:"time"`
	Type     Type      `json:"type"`
	F        Func      `json:"f"`
	Workload string    `json:"workload,omitempty"` // queue, broadcast, ordered, delay, txn, grpc
	Process  string    `json:"process,omitempty"`  // the client: "queue-p0", "broadcast-c2", "nemesis", "drain"
	Role     string    `json:"role,omitempty"`     // Start lines: RoleProducer or RoleConsumer
	// ID is the message's unique id, chosen by the workload; every send
	// of a history has its own.
	ID    string `json:"id,omitempty"`
	Topic string `json:"topic,omitempty"`
	Queue int32  `json:"queue"`
	// Offset is the message's offset in its queue.
	Offset int64 `json:"offset"`
	// Sum is the CRC-32 (IEEE) of the body: as sent on a Send, as
	// received on a Deliver or Drain.
	Sum uint32 `json:"sum,omitempty"`
	// Corrupt is set on a Deliver or Drain whose body could not be parsed
	// back into the id it carries (so ID may come from the properties).
	Corrupt bool `json:"corrupt,omitempty"`
	// Key and Seq: ordered workload's sharding key and the message's
	// sequence number within the key, from 1.
	Key string `json:"key,omitempty"`
	Seq int64  `json:"seq,omitempty"`
	// DeliverAt is a delayed message's due time (delay workload's Send).
	DeliverAt time.Time `json:"deliver_at,omitzero"`
	// Txn: see the transaction decisions above.
	Txn string `json:"txn,omitempty"`
	// Fault is a Fault/Heal line's kind (kill, pause, partition,
	// restart, slow-disk); Target the process or link it hit.
	Fault  string `json:"fault,omitempty"`
	Target string `json:"target,omitempty"`
	// Group is a broker group (--broker-name): on a Send line the broker
	// of the queue it went to (empty when the client does not pick one,
	// as over gRPC), on a Fault line the group whose master the fault
	// hits, on a Compare line the group compared.
	Group string `json:"group,omitempty"`
	// Value is free text: a Phase name, or a detail of the event.
	Value string `json:"value,omitempty"`
	// Error says why an operation failed or is in doubt.
	Error string `json:"error,omitempty"`
	// Latency is an OK/Fail/InDoubt's time since its Invoke.
	Latency time.Duration `json:"latency_ns,omitempty"`
}

// New returns an Op with Queue and Offset "not known" (-1).
func New(t Type, f Func) Op { return Op{Type: t, F: f, Queue: -1, Offset: -1} }

// Writer appends Ops to a history file. It is safe for concurrent use;
// lines are numbered and timestamped in the order Append is called.
type Writer struct {
	mu    sync.Mutex
	w     *bufio.Writer
	f     io.Closer
	n     int64
	now   func() time.Time
	err   error
	ops   []Op // kept in memory too when Keep is on
	keep  bool
	close bool
}

// Create makes (truncates) the history file at path.
func Create(path string) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	w := NewWriter(f)
	w.f = f
	return w, nil
}

// NewWriter writes to w. Close flushes it (and closes it if it came from
// Create).
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 64<<10), now: time.Now}
}

// SetClock replaces time.Now for the lines' timestamps (tests).
func (w *Writer) SetClock(now func() time.Time) { w.mu.Lock(); w.now = now; w.mu.Unlock() }

// Keep makes the writer also hold every Op in memory, for Ops.
func (w *Writer) Keep() { w.mu.Lock(); w.keep = true; w.mu.Unlock() }

// Append stamps op with its index and, when op.Time is zero, the time,
// and writes it. It returns op as written. A write error is kept and
// returned by Append and Close from then on.
func (w *Writer) Append(op Op) (Op, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return op, w.err
	}
	if w.close {
		return op, errors.New("history: append after close")
	}
	op.Index = w.n
	if op.Time.IsZero() {
		op.Time = w.now()
	}
	b, err := json.Marshal(op)
	if err != nil {
		w.err = fmt.Errorf("history: %w", err)
		return op, w.err
	}
	b = append(b, '\n')
	if _, err := w.w.Write(b); err != nil {
		w.err = fmt.Errorf("history: %w", err)
		return op, w.err
	}
	w.n++
	if w.keep {
		w.ops = append(w.ops, op)
	}
	return op, nil
}

// Flush writes buffered lines out.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if err := w.w.Flush(); err != nil {
		w.err = fmt.Errorf("history: %w", err)
	}
	return w.err
}

// Len is the number of lines written.
func (w *Writer) Len() int64 { w.mu.Lock(); defer w.mu.Unlock(); return w.n }

// Ops returns a copy of the lines written so far (Keep must be on).
func (w *Writer) Ops() []Op {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Op(nil), w.ops...)
}

// Close flushes and closes the file. Appends after Close fail.
func (w *Writer) Close() error {
	err := w.Flush()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.close = true
	if w.f != nil {
		if cerr := w.f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("history: %w", cerr)
		}
		w.f = nil
	}
	return err
}

// MaxLine bounds one line of a history being read (a history is our own
// output, but `verify check` reads files users hand it).
const MaxLine = 1 << 20

// Read parses a history. A malformed line is an error naming its line
// number; a torn last line (a run killed mid-write) is an error too, so
// that a partial history is never checked as if whole.
func Read(r io.Reader) ([]Op, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	var ops []Op
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		op := Op{Queue: -1, Offset: -1}
		if err := json.Unmarshal(b, &op); err != nil {
			return nil, fmt.Errorf("history: line %d: %w", line, err)
		}
		ops = append(ops, op)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("history: line %d: %w", line+1, err)
	}
	return ops, nil
}

// ReadFile reads the history at path.
func ReadFile(path string) ([]Op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	return Read(f)
}
