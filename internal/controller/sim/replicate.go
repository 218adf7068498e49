package sim

import (
	"slices"
	"time"

	"github.com/petrelmq/petrel/internal/ha/epoch"
)

// fetchReq is the slave's fetch (replication.md §2.4): its LEO acks what it
// wrote, durable what it fsynced. ackOnly: the durable-end ack a slave sends
// after an fsync (no answer).
type fetchReq struct {
	id        int64
	inc       uint64
	epoch     uint32 // the follower's known master epoch
	offset    int64  // its LEO
	lastEpoch uint32 // the epoch of its last record
	durable   int64
	ackOnly   bool
}

type respKind uint8

const (
	respRecords respKind = iota
	respDiverging
	respFenced     // the follower's epoch is behind: refresh the view
	respNewerEpoch // the master is stale
	respUnknownReplica
	respNotMaster
)

type fetchResp struct {
	kind       respKind
	base       int64 // records: where they start; diverging: where to cut
	recs       []rec
	epoch      uint32 // records: their epoch; diverging: the shared epoch
	epochStart int64
	hw         int64
}

// maxRecords bounds one fetch answer.
const maxRecords = 8

// maxWait is how long the master parks a fetch with nothing to send.
const maxWait = 500 * time.Millisecond

// fetch sends the slave's next fetch to the view's master (one in flight;
// re-sent after a second without an answer).
func (b *broker) fetch() {
	if b.role != roleSlave || b.fetchOut || b.stopped || !b.registered {
		if b.role == roleSlave && !b.fetchOut && !b.stopped {
			b.timer(100*time.Millisecond, b.fetch)
		}
		return
	}
	m := b.w.byID(b.view.Master)
	if m == nil {
		b.timer(100*time.Millisecond, b.fetch)
		return
	}
	b.fetchSeq++
	seq := b.fetchSeq
	b.fetchOut = true
	req := fetchReq{id: b.id, inc: b.inc, epoch: b.roleEpoch, offset: b.leo(), lastEpoch: b.lastEpoch(), durable: b.durable}
	b.fetchSentAt = b.now()
	b.send(m.idx, func() { m.onFetch(req, b, seq) })
}

func (b *broker) reply(to *broker, seq uint64, r fetchResp) {
	gen := to.gen
	b.w.net.send(b.idx, to.idx, func() {
		if to.gen == gen {
			to.onFetchResp(seq, r)
		}
	})
}

// onFetch is the master's side of a fetch.
func (b *broker) onFetch(req fetchReq, from *broker, seq uint64) {
	if b.role != roleMaster {
		if !req.ackOnly {
			b.reply(from, seq, fetchResp{kind: respNotMaster})
		}
		return
	}
	if req.epoch > b.roleEpoch {
		// NewerEpoch: this master is stale (MasterConfig.OnStale fences it).
		b.lease = 0
		if !req.ackOnly {
			b.reply(from, seq, fetchResp{kind: respNewerEpoch})
		}
		return
	}
	if req.epoch < b.roleEpoch {
		if !req.ackOnly {
			b.reply(from, seq, fetchResp{kind: respFenced})
		}
		return
	}
	if r, ok := b.view.Replica(req.id); !ok || r.Incarnation != req.inc {
		if !req.ackOnly {
			b.reply(from, seq, fetchResp{kind: respUnknownReplica})
		}
		return
	}
	leo := b.leo()
	// The prefix check comes first: a follower may hold more than this
	// master (the tail a restarted master lost, or a deposed master's).
	if !req.ackOnly && req.offset > baseOffset && b.w.o.Break != SkipDivergenceCheck {
		e, end := epoch.DivergencePoint(b.epochs, leo, req.lastEpoch, req.offset)
		if e != req.lastEpoch || end < req.offset {
			b.reply(from, seq, fetchResp{kind: respDiverging, epoch: e, base: end})
			return
		}
	}
	if req.offset > leo || req.durable > req.offset {
		return // protocol error: the connection is closed
	}
	b.tr.MasterProgress(leo, b.durable) // before any ack of these bytes
	if req.ackOnly {
		// An ack on the fetch connection: valid only within the session
		// the fetches opened (their prefix check covers these offsets).
		if s := b.sessions[req.id]; s != nil && s.inc == req.inc && req.offset == s.written {
			b.ack(req)
			b.checkInSync()
		}
		return
	}
	s := b.sessions[req.id]
	if s == nil || s.inc != req.inc {
		if s != nil {
			b.tr.SlaveGone(req.id) // the old incarnation's connection
		}
		s = &session{inc: req.inc}
		b.sessions[req.id] = s
	}
	s.written = req.offset
	if !b.ack(req) {
		return
	}
	b.checkInSync()
	if b.role != roleMaster { // the ack above cannot demote, but stay safe
		return
	}
	if req.offset == leo {
		b.held = append(b.held, heldFetch{req: req, from: from, seq: seq, at: b.now()})
		return
	}
	b.serve(req, from, seq)
}

// ack hands a slave's acked ends to the tracker; a refused ack (one that
// moves back, a retry overtaken by a later fetch) ends the session as ha's
// master closes the connection.
func (b *broker) ack(req fetchReq) bool {
	if err := b.tr.SlaveProgress(req.id, req.offset, req.durable); err != nil {
		b.tr.SlaveGone(req.id)
		delete(b.sessions, req.id)
		return false
	}
	b.takeHW()
	return true
}

// serve answers with the records from req.offset on, never across an
// epoch boundary.
func (b *broker) serve(req fetchReq, from *broker, seq uint64) {
	i, ok := b.find(req.offset)
	if !ok {
		if req.offset == b.leo() {
			b.reply(from, seq, fetchResp{kind: respRecords, base: req.offset, hw: b.hw})
		}
		return // not a record boundary: the connection is closed
	}
	first := b.log[i]
	j := i
	for j < len(b.log) && j-i < maxRecords && b.log[j].epoch == first.epoch {
		j++
	}
	start := int64(-1)
	for _, e := range b.epochs {
		if e.Epoch == first.epoch {
			start = e.Start
		}
	}
	if start < 0 {
		b.w.fail("model", "n%d: record %d of epoch %d not in its history %v", b.idx, first.id, first.epoch, b.epochs)
		return
	}
	b.reply(from, seq, fetchResp{kind: respRecords, base: req.offset, recs: slices.Clone(b.log[i:j]),
		epoch: first.epoch, epochStart: start, hw: b.hw})
}

// answerHeld answers parked long polls: with records when the log grew,
// with the commit point when it rose (hwOnly).
func (b *broker) answerHeld(hwOnly bool) {
	if len(b.held) == 0 {
		return
	}
	held := b.held
	b.held = nil
	for _, h := range held {
		if h.req.offset < b.leo() {
			b.serve(h.req, h.from, h.seq)
		} else if hwOnly {
			b.reply(h.from, h.seq, fetchResp{kind: respRecords, base: h.req.offset, hw: b.hw})
		} else {
			b.held = append(b.held, h)
		}
	}
}

// expireHeld answers the long polls parked for maxWait (500 ms) or more.
func (b *broker) expireHeld(now int64) {
	keep := b.held[:0]
	for _, h := range b.held {
		if now-h.at >= int64(maxWait) {
			b.reply(h.from, h.seq, fetchResp{kind: respRecords, base: h.req.offset, hw: b.hw})
		} else {
			keep = append(keep, h)
		}
	}
	b.held = keep
}

// onFetchResp is the slave's side.
func (b *broker) onFetchResp(seq uint64, r fetchResp) {
	if b.role != roleSlave || seq != b.fetchSeq || !b.fetchOut {
		return
	}
	b.fetchOut = false
	next := time.Millisecond
	switch r.kind {
	case respRecords:
		if r.base != b.leo() {
			break // re-sync from the log's end
		}
		if len(r.recs) > 0 {
			if r.epoch > b.lastEpoch() {
				b.appendEpoch(epoch.Entry{Epoch: r.epoch, Start: r.epochStart})
			}
			for _, x := range r.recs {
				if b.w.err != nil {
					return
				}
				b.appendRec(x)
			}
			b.startFsync()
		}
		b.lastHW = max(b.lastHW, r.hw)
		b.raiseCP()
	case respDiverging:
		b.truncate(epoch.CutPoint(b.epochs, b.leo(), r.epoch, r.base), r.epoch)
	default:
		next = 100 * time.Millisecond
	}
	if next == time.Millisecond {
		b.fetch()
	} else {
		b.timer(next, b.fetch)
	}
}

// raiseCP: the slave's commit point is min(the master's HW, its durable
// end), never backwards (ha.Slave.raiseCP).
func (b *broker) raiseCP() {
	cp := min(b.lastHW, b.durable)
	if cp > b.cp {
		old := b.cp
		b.cp = cp
		b.w.chk.onCommitPointRaised(b, old, cp)
	}
}

// truncate cuts the log and the epoch history at off (part C): refused
// below the commit point, which the simulation counts as a violation (it
// can only come from a bug or an unclean election).
func (b *broker) truncate(off int64, shared uint32) {
	if off < b.cp {
		b.w.fail("no truncation below the commit point", "n%d (id %d) told to cut at %d (shared epoch %d), its commit point is %d",
			b.idx, b.id, off-baseOffset, shared, b.cp-baseOffset)
		b.stopped = true
		return
	}
	i := len(b.log)
	for i > 0 && b.log[i-1].off >= off {
		i--
	}
	if i > 0 && b.log[i-1].end() > off {
		b.w.fail("replicas identical up to the commit point", "n%d: the divergence point %d falls inside its record %d: the logs differ below it",
			b.idx, off-baseOffset, b.log[i-1].id)
		return
	}
	cut := b.log[i:]
	for _, r := range cut {
		b.w.chk.onTruncate(b, r)
	}
	b.w.res.Truncated += len(cut)
	if len(cut) > 0 {
		b.w.logf("n%d (id %d) truncates %d records above %d (shared epoch %d)", b.idx, b.id, len(cut), off-baseOffset, shared)
	}
	b.log = b.log[:i]
	b.durable = min(b.durable, max(off, baseOffset))
	n := 0
	for n < len(b.epochs) && b.epochs[n].Start < off {
		n++
	}
	b.epochs = b.epochs[:n] // History.TruncateAfter(off)
	b.recount()
}
