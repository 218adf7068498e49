package sim

import (
	"slices"
)

// checker holds the simulation's oracle: the group's committed log as the
// masters' commit points defined it, every acked record, and which master
// acked in which epoch. Each hook checks the invariants the event can
// break, so a violation is found at the step that causes it.
type checker struct {
	w        *world
	truth    []rec // the committed log, contiguous from baseOffset
	truthEnd int64
	acked    map[uint64]rec
	ackOrder []rec
	ackers   map[uint32]int // epoch → the node that acked in it
	// elected: the highest epoch the controller committed for each master
	// (the same replica may get a newer epoch while its running process
	// still acks in the old one, e.g. a duplicated Register: no second
	// master, so only other replicas' epochs count against an ack).
	elected map[int64]uint32
}

func newChecker(w *world) *checker {
	return &checker{w: w, truthEnd: baseOffset, acked: map[uint64]rec{}, ackers: map[uint32]int{}, elected: map[int64]uint32{}}
}

func (c *checker) truthAt(off int64) (rec, bool) {
	i, ok := slices.BinarySearchFunc(c.truth, off, func(r rec, off int64) int {
		switch {
		case r.off < off:
			return -1
		case r.off > off:
			return 1
		}
		return 0
	})
	if !ok {
		return rec{}, false
	}
	return c.truth[i], true
}

// has reports whether b's log holds r at r's offset.
func has(b *broker, r rec) bool {
	i, ok := b.find(r.off)
	return ok && b.log[i].id == r.id
}

func (c *checker) onElect(master int64, e uint32) {
	if e > c.elected[master] {
		c.elected[master] = e
	}
}

// onCommit: master b's commit point rose from old to hw: the records in
// between join the committed log, or must equal what it holds there.
func (c *checker) onCommit(b *broker, old, hw int64) {
	i := 0
	if old > baseOffset {
		i, _ = slices.BinarySearchFunc(b.log, old, func(r rec, off int64) int {
			if r.off < off {
				return -1
			}
			if r.off > off {
				return 1
			}
			return 0
		})
	}
	for ; i < len(b.log) && b.log[i].end() <= hw; i++ {
		r := b.log[i]
		switch {
		case r.off < c.truthEnd:
			t, ok := c.truthAt(r.off)
			if !ok || t.id != r.id {
				c.w.fail("replicas identical up to the commit point",
					"master n%d (id %d, epoch %d) commits record %d at %d where record %d was committed",
					b.idx, b.id, b.roleEpoch, r.id, r.off-baseOffset, t.id)
				return
			}
		case r.off == c.truthEnd:
			c.truth = append(c.truth, r)
			c.truthEnd = r.end()
		default:
			c.w.fail("model", "commit gap at %d (committed log ends at %d)", r.off, c.truthEnd)
			return
		}
	}
}

// onCommitPointRaised: slave b's commit point rose: its log up to there
// must be the committed log.
func (c *checker) onCommitPointRaised(b *broker, old, cp int64) {
	if cp > c.truthEnd {
		c.w.fail("replicas identical up to the commit point", "n%d's commit point %d is above the group's %d",
			b.idx, cp-baseOffset, c.truthEnd-baseOffset)
		return
	}
	i, _ := b.find(old)
	for ; i < len(b.log) && b.log[i].off < cp; i++ {
		r := b.log[i]
		if t, ok := c.truthAt(r.off); !ok || t.id != r.id || t.size != r.size {
			c.w.fail("replicas identical up to the commit point",
				"n%d (id %d) holds record %d at %d below its commit point %d; the committed record there is %d",
				b.idx, b.id, r.id, r.off-baseOffset, cp-baseOffset, t.id)
			return
		}
	}
}

// onAck: master b answered SEND_OK for r.
func (c *checker) onAck(b *broker, r rec) {
	w := c.w
	if t, ok := c.truthAt(r.off); !ok || t.id != r.id {
		w.fail("no acked record lost", "n%d acked record %d at %d, which is not committed", b.idx, r.id, r.off-baseOffset)
		return
	}
	for m, e := range c.elected {
		if m != b.id && e > b.roleEpoch {
			w.fail("one master acks at a time", "n%d (id %d) acked record %d as master of epoch %d after replica %d was elected at epoch %d",
				b.idx, b.id, r.id, b.roleEpoch, m, e)
			return
		}
	}
	if n, ok := c.ackers[b.roleEpoch]; ok && n != b.idx {
		w.fail("at most one master acks per epoch", "n%d and n%d both acked in epoch %d", n, b.idx, b.roleEpoch)
		return
	} else if !ok {
		c.holdsAllAcked(b) // the first ack of an epoch: nothing acked before is lost
		if w.err != nil {
			return
		}
	}
	c.ackers[b.roleEpoch] = b.idx
	if g := w.ctl.group(); g != nil {
		for _, id := range g.ISR {
			m := w.byID(id)
			if m == nil || !has(m, r) || m.durable < r.end() {
				w.fail("acked record on every ISR member", "record %d (at %d, acked by n%d) is not durable on ISR member %d (isr %v, version %d)",
					r.id, r.off-baseOffset, b.idx, id, g.ISR, g.ISRVersion)
				return
			}
		}
	}
	c.acked[r.id] = r
	c.ackOrder = append(c.ackOrder, r)
}

// onPromote: a new master must hold every acked record. A broker that
// promotes on a stale view (a late answer) is not the committed master and
// can get no lease; it is checked at its first ack instead.
func (c *checker) onPromote(b *broker) {
	if g := c.w.ctl.group(); g == nil || g.Master != b.id || g.Epoch != b.roleEpoch {
		return
	}
	c.holdsAllAcked(b)
}

func (c *checker) holdsAllAcked(b *broker) {
	for _, r := range c.ackOrder {
		if !has(b, r) {
			c.w.fail("no acked record lost", "new master n%d (id %d, epoch %d) lacks acked record %d at %d (its log ends at %d)",
				b.idx, b.id, b.roleEpoch, r.id, r.off-baseOffset, b.leo()-baseOffset)
			return
		}
	}
}

func (c *checker) onTruncate(b *broker, r rec) {
	if _, ok := c.acked[r.id]; ok {
		c.w.fail("no acked record lost", "n%d (id %d) truncates acked record %d at %d", b.idx, b.id, r.id, r.off-baseOffset)
	}
}

func (c *checker) onCrash(b *broker) {
	if b.cp > b.leo() {
		c.w.fail("model", "n%d's commit point %d is above its recovered log end %d", b.idx, b.cp, b.leo())
	}
}

// onLease: master b's lease was extended: no other master may hold a valid
// lease at this true time.
func (c *checker) onLease(b *broker) {
	if !b.leaseValid() {
		return // extended to a time already past (a late answer)
	}
	for _, o := range c.w.brokers {
		if o != b && o.up && o.role == roleMaster && o.leaseValid() {
			c.w.fail("no two leases valid at once", "n%d (epoch %d) got a lease to %.3fs while n%d (epoch %d) holds one to %.3fs",
				b.idx, b.roleEpoch, float64(b.trueLeaseEnd())/1e9, o.idx, o.roleEpoch, float64(o.trueLeaseEnd())/1e9)
			return
		}
	}
}

// final runs after the heal phase: the group's master holds every acked
// record, and the in-sync replicas agree up to the commit point.
func (c *checker) final() {
	w := c.w
	g := w.ctl.group()
	if g == nil {
		return
	}
	if m := w.byID(g.Master); m != nil && m.up {
		for _, r := range c.ackOrder {
			if !has(m, r) {
				w.fail("no acked record lost", "the final master n%d (id %d) lacks acked record %d", m.idx, m.id, r.id)
				return
			}
		}
	}
	for _, id := range g.ISR {
		m := w.byID(id)
		if m == nil {
			continue
		}
		for _, r := range m.log {
			if r.end() > m.cp {
				break
			}
			if t, ok := c.truthAt(r.off); !ok || t.id != r.id {
				w.fail("replicas identical up to the commit point", "ISR member n%d holds record %d at %d, committed: %d",
					m.idx, r.id, r.off-baseOffset, t.id)
				return
			}
		}
	}
}
