package vfs

import (
	"context"
	"slices"
	"sync"
)

// SyncHold holds File.Sync calls of a MemFS so that a test can look at the
// moment between a write and its fsync: what was written is readable, what
// a crash keeps (CrashClone) is only what was synced before. See
// MemFS.HoldSync.
type SyncHold struct {
	m     *MemFS
	match func(name string) bool

	mu      sync.Mutex
	blocked int           // Syncs waiting now
	held    int           // Syncs held since HoldSync
	changed chan struct{} // closed and replaced whenever blocked changes
	release chan struct{} // closed by Release
	done    bool
}

// HoldSync holds every File.Sync of this MemFS that starts from now on, on
// a file whose cleaned path match accepts (nil: every file), until Release.
// A held Sync waits before it takes effect and before it takes the FS's
// lock, so every other operation, CrashClone included, goes on meanwhile;
// once released it makes the file's current contents durable as usual,
// including writes made while it waited (a real fsync may keep them too).
// A Sync sees the holds installed when it starts and waits for each one
// that matches it. SyncDir is never held, and neither are CrashClone and
// KillClone, whose clones have no holds. Tests wait for a Sync to be held
// with WaitBlocked, and must Release every hold (t.Cleanup(h.Release)), or
// what waits for the Sync waits for ever.
func (m *MemFS) HoldSync(match func(name string) bool) *SyncHold {
	h := &SyncHold{m: m, match: match, changed: make(chan struct{}), release: make(chan struct{})}
	m.holdMu.Lock()
	m.holds = append(m.holds, h)
	m.holdMu.Unlock()
	return h
}

// Blocked returns the number of Syncs waiting for this hold now.
func (h *SyncHold) Blocked() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.blocked
}

// Held returns the number of Syncs this hold has held so far, released or
// not.
func (h *SyncHold) Held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held
}

// WaitBlocked returns once at least n Syncs wait for this hold at the same
// time, or with ctx's error.
func (h *SyncHold) WaitBlocked(ctx context.Context, n int) error {
	for {
		h.mu.Lock()
		if h.blocked >= n {
			h.mu.Unlock()
			return nil
		}
		ch := h.changed
		h.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Release lets the held Syncs go on and stops holding new ones.
// Idempotent; safe to call from several goroutines.
func (h *SyncHold) Release() {
	h.m.holdMu.Lock()
	if i := slices.Index(h.m.holds, h); i >= 0 {
		h.m.holds = slices.Delete(h.m.holds, i, i+1)
	}
	h.m.holdMu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.done {
		h.done = true
		close(h.release)
	}
}

// wait holds one Sync until Release.
func (h *SyncHold) wait() {
	h.mu.Lock()
	if h.done {
		h.mu.Unlock()
		return
	}
	h.blocked++
	h.held++
	h.signalLocked()
	h.mu.Unlock()
	<-h.release
	h.mu.Lock()
	h.blocked--
	h.signalLocked()
	h.mu.Unlock()
}

func (h *SyncHold) signalLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// waitHolds waits for the holds installed now that match name.
func (m *MemFS) waitHolds(name string) {
	m.holdMu.Lock()
	if len(m.holds) == 0 {
		m.holdMu.Unlock()
		return
	}
	holds := slices.Clone(m.holds)
	m.holdMu.Unlock()
	for _, h := range holds {
		if h.match == nil || h.match(name) {
			h.wait()
		}
	}
}
