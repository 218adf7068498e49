//go:build verifyfault

package broker

// Test-only faults for `petrel verify` (package faults), built in only
// with the build tag verifyfault and switched on by the environment
// variable PETREL_TEST_FAULTS when the broker is created:
//
//   - lose-ack=N: 1 in N plain sends (the N-th, 2N-th, ... of this broker;
//     a batch counts as one) is answered SEND_OK with a plausible queue
//     offset and message id, and not stored. Transactional halves and
//     sends to %RETRY%/%DLQ% topics are never lost. The dedup claim of a
//     lost send is released, not committed, so the window never answers a
//     resend with a record that does not exist: a resend is stored.
//   - reorder: every pull answer holding ≥ 2 records hands them out in
//     reverse order (each record keeps its own queue offset, and the
//     answer's next offset is unchanged). A consumer that keeps up gets
//     one or two records per pull, often of different keys, which do not
//     come out of order: an answer of fewer than reorderBatch records is
//     held back (answered "no new message" at the requested offset) for up
//     to reorderHold, so that the next pull finds several of one key.

import (
	"os"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/faults"
	"github.com/petrelmq/petrel/internal/message"
)

// faultHooks is the broker's share of the test faults.
type faultHooks struct {
	spec faults.Spec
	lose *faults.OneIn // nil: lose-ack is off

	mu   sync.Mutex
	held map[heldKey]heldPull // reorder: single-record answers held back
}

// reorderHold is how long reorder holds back a pull answer of fewer than
// reorderBatch records.
const (
	reorderHold  = time.Second
	reorderBatch = 4
)

type heldKey struct {
	topic string
	queue int32
}

// heldPull is the offset of a single-record answer being held back, and
// since when.
type heldPull struct {
	offset int64
	since  time.Time
}

// initFaults reads the spec; an invalid one stops the broker from
// starting.
func (b *Broker) initFaults() error {
	spec, err := faults.FromEnv(os.Getenv)
	if err != nil {
		return errorf(KindSystemError, err, "the test faults cannot be set up")
	}
	b.faults.spec = spec
	if spec.LoseAck > 0 {
		b.faults.lose = faults.NewOneIn(spec.LoseAck)
	}
	if !spec.IsZero() {
		b.log.Warn("test faults are on: this broker loses or reorders messages on purpose", "faults", spec.String())
	}
	return nil
}

// loseSend answers p as stored, without storing it, when lose-ack picks
// it; it reports whether it did. p has its dedup claim (not a duplicate).
func (b *Broker) loseSend(p *pendingSend, done func(int, SendResult, error)) bool {
	if b.faults.lose == nil || p.req.Transactional || isGroupTopic(p.req.Topic) || !b.faults.lose.Next() {
		return false
	}
	// Where the messages would have gone: the queue's next offset and the
	// commit log's end, as a stored send's answer would say.
	m0 := p.msgs[0]
	res := SendResult{Status: SendOK, QueueID: p.qid, RegionID: DefaultRegionID,
		QueueOffset: b.st.MaxOffset(m0.Topic, m0.QueueID)}
	phys := b.st.Durable()
	for i := range p.msgs {
		if i > 0 {
			res.MsgID += ","
		}
		res.MsgID += message.OffsetID(b.st.Config().StoreHost, phys)
	}
	uk, _ := p.req.Properties.Get(message.PropertyUniqKey)
	keys, _ := p.req.Properties.Get(message.PropertyKeys)
	p.claim.Release()
	b.log.Warn("test fault lose-ack: acknowledged a send without storing it", "topic", p.req.Topic,
		"queue", p.qid, "queue_offset", res.QueueOffset, "uniq_key", uk, "keys", keys, "lost", b.faults.lose.Hits())
	b.sendDone(p.t0)
	done(p.i, res, nil)
	return true
}

// reorderPull reverses the records of res when reorder is on.
func (b *Broker) reorderPull(req *PullRequest, res *PullResult) {
	if !b.faults.spec.Reorder || res == nil || res.Count < 1 {
		return
	}
	if res.Count < reorderBatch && b.holdSmall(req, res) {
		return
	}
	if res.Count < 2 {
		return
	}
	body, err := faults.ReverseRecords(res.Body, res.Count)
	if err != nil {
		b.log.Warn("test fault reorder: the pull answer is not well-formed records; left as it is", "err", err)
		return
	}
	res.Release() // the store's buffer; body is a copy
	res.Body = body
}

// holdSmall answers a small pull "no new message" at the requested offset
// while that offset has been held back for less than reorderHold; it
// reports whether it did.
func (b *Broker) holdSmall(req *PullRequest, res *PullResult) bool {
	f := &b.faults
	k := heldKey{req.Topic, req.QueueID}
	now := b.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held == nil {
		f.held = make(map[heldKey]heldPull)
	}
	h, ok := f.held[k]
	if !ok || h.offset != req.Offset {
		h = heldPull{offset: req.Offset, since: now}
		f.held[k] = h
	}
	if now.Sub(h.since) >= reorderHold {
		delete(f.held, k)
		return false
	}
	res.Release()
	res.Status, res.Count, res.NextBeginOffset = PullNoNewMsg, 0, req.Offset
	return true
}
