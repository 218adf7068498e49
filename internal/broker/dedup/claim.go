package dedup

// Claims close the gap between Lookup and Remember: a resend that arrives
// while the first send of its id is still being stored must neither be
// stored too nor be answered before the first send's outcome is known.

// Claim is the answer to Acquire for one id. Exactly one of these holds:
//
//   - Dup: the id was stored within the window; answer Result and store
//     nothing.
//   - Held(): this send owns the id until Commit or Release; store the
//     message, then Commit its result (or Release if the store failed, so
//     that a waiting resend stores it instead).
//   - neither: nothing to deduplicate (window disabled, empty UNIQ_KEY, or
//     the id repeats an earlier item of the same batch); store as usual.
//     Commit still remembers the result.
//
// A Claim is a small value; copies refer to the same hold. Commit and
// Release may be called more than once and in any order: only the first
// of them acts, later calls do nothing.
type Claim struct {
	// Dup reports that the id was stored already within the window.
	Dup bool
	// Result is the original answer when Dup; its Topic is the claim's.
	Result Result

	w   *Window // nil: nothing to deduplicate
	h   key
	gen uint64 // ≠ 0 while held
}

// Held reports whether the claim owns its id (until Commit or Release).
func (c Claim) Held() bool { return c.gen != 0 }

// Release gives up the claim without remembering anything: the store
// failed, or the send ended before storing. A resend waiting in Acquire
// then gets the claim. Releasing a claim not held does nothing.
func (c Claim) Release() {
	if c.gen == 0 {
		return
	}
	c.w.mu.Lock()
	c.w.releaseLocked(c.h, c.gen)
	c.w.mu.Unlock()
}

// Commit remembers r as the result of the claimed id (as Remember, with
// the claim's topic) and releases the claim, atomically: a resend waiting
// in Acquire wakes to a Dup answer. Commit of a Dup claim does nothing.
func (c Claim) Commit(r Result) {
	if c.w == nil || c.Dup {
		return
	}
	now := c.w.nowMs()
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	if c.gen != 0 {
		if f, ok := c.w.inflight[c.h]; !ok || f.gen != c.gen {
			return // committed or released already
		}
	}
	c.w.putLocked(c.h, r, now, now)
	if c.gen != 0 {
		c.w.releaseLocked(c.h, c.gen)
	}
}

func (w *Window) releaseLocked(h key, gen uint64) {
	f, ok := w.inflight[h]
	if !ok || f.gen != gen {
		return // released already
	}
	delete(w.inflight, h)
	if f.waiters > 0 {
		w.cond.Broadcast()
	}
}

// ReleaseAll releases every claim of cs (from AcquireBatch) under one lock.
func (w *Window) ReleaseAll(cs []Claim) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range cs {
		if c.gen != 0 {
			c.w.releaseLocked(c.h, c.gen)
		}
	}
}

// Acquire claims uniqKey in topic for a send about to be stored. If the id
// was stored within the window the claim is Dup with the original Result.
// If another send of the id holds it (a resend that overtook its original
// still being stored), Acquire waits until that send commits (then Dup) or
// releases (then this send holds it). The wait lasts as long as the other
// send's store call, which must end in Commit or Release.
//
// The caller must not hold another claim while it calls Acquire (claims of
// a batch are taken together by AcquireBatch), or two sends could wait for
// each other.
func (w *Window) Acquire(topic, uniqKey string) Claim {
	var cs [1]Claim
	w.prepare(cs[:], topic, []string{uniqKey})
	w.claim(cs[:], topic, true)
	return cs[0]
}

// TryAcquire is Acquire that does not wait: if another send holds the id
// it returns ok = false and claims nothing (an asynchronous send path can
// then hand the send to a goroutine that calls Acquire).
func (w *Window) TryAcquire(topic, uniqKey string) (c Claim, ok bool) {
	var cs [1]Claim
	w.prepare(cs[:], topic, []string{uniqKey})
	if !w.claim(cs[:], topic, false) {
		return Claim{}, false
	}
	return cs[0], true
}

// AcquireBatch claims the ids of a batch's items, all sent to topic, and
// appends one Claim per key, in order, to cs. It takes all the claims at
// once: if any id is held by another send it holds none of them while it
// waits, so batches with overlapping ids cannot wait for each other. An id
// that repeats an earlier key of the same batch gets a claim that is
// neither Dup nor held (both copies are stored: a batch's own repeats are
// not resends). Give the claims back with Commit per item and ReleaseAll.
func (w *Window) AcquireBatch(topic string, uniqKeys []string, cs []Claim) []Claim {
	n := len(cs)
	cs = append(cs, make([]Claim, len(uniqKeys))...)
	w.prepare(cs[n:], topic, uniqKeys)
	w.claim(cs[n:], topic, true)
	return cs
}

// TryAcquireBatch is AcquireBatch that does not wait: if another send holds
// one of the ids it returns cs unchanged and false.
func (w *Window) TryAcquireBatch(topic string, uniqKeys []string, cs []Claim) ([]Claim, bool) {
	n := len(cs)
	cs = append(cs, make([]Claim, len(uniqKeys))...)
	w.prepare(cs[n:], topic, uniqKeys)
	if !w.claim(cs[n:], topic, false) {
		clear(cs[n:])
		return cs[:n], false
	}
	return cs, true
}

// prepare fills in each claim's window and hash.
func (w *Window) prepare(cs []Claim, topic string, uniqKeys []string) {
	if w.windowMs == 0 {
		return
	}
	for i, k := range uniqKeys {
		if k != "" {
			cs[i] = Claim{w: w, h: w.hash(topic, k)}
		}
	}
}

// claim marks each claim of cs Dup or held, all under one lock and all at
// once. If an id is held by another claim it undoes its holds and, with
// wait, waits for that claim's release and starts over; without wait it
// returns false.
func (w *Window) claim(cs []Claim, topic string, wait bool) bool {
	if w.windowMs == 0 {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		now := w.nowMs()
		w.expireLocked(now, expireBudget)
		w.gen++
		gen := w.gen
		busy := -1
		for i := range cs {
			c := &cs[i]
			c.Dup, c.Result, c.gen = false, Result{}, 0
			if c.w == nil {
				continue
			}
			if e, ok := w.x.get(c.h); ok && w.live(e, now) {
				c.Dup, c.Result = true, e.result(topic)
				continue
			}
			if f, held := w.inflight[c.h]; held {
				if f.gen == gen {
					continue // repeats an earlier item of this batch
				}
				busy = i
				break
			}
			w.inflight[c.h] = flight{gen: gen}
			c.gen = gen
		}
		if busy < 0 {
			for i := range cs {
				if cs[i].Dup {
					w.hits++
				}
			}
			return true
		}
		for i := range busy {
			if cs[i].gen != 0 {
				delete(w.inflight, cs[i].h)
				cs[i].gen = 0
			}
		}
		if !wait {
			return false
		}
		h := cs[busy].h
		f := w.inflight[h]
		f.waiters++
		w.inflight[h] = f
		w.waits++
		w.waiting++
		w.cond.Wait()
		w.waiting--
	}
}

// Reserve is Acquire for callers that need only the hold: dup reports that
// the id was stored within the window (Lookup then gives the result,
// unless the window ended in between; prefer Acquire, whose Claim carries
// it). Otherwise the caller must call release once the store answered,
// after Remember when it stored the message. release is never nil.
func (w *Window) Reserve(topic, uniqKey string) (release func(), dup bool) {
	c := w.Acquire(topic, uniqKey)
	if !c.Held() {
		return func() {}, c.Dup
	}
	return c.Release, false
}
