package vfs

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// holdWait bounds every wait of these tests; nothing here sleeps.
const holdWait = 10 * time.Second

func holdCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), holdWait)
	t.Cleanup(cancel)
	return ctx
}

// asyncSync is a File.Sync running on its own goroutine.
type asyncSync struct {
	done chan struct{}
	err  error
}

func goSync(f File) *asyncSync {
	a := &asyncSync{done: make(chan struct{})}
	go func() {
		defer close(a.done)
		a.err = f.Sync()
	}()
	return a
}

func (a *asyncSync) answered() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

func awaitSync(t *testing.T, a *asyncSync) {
	t.Helper()
	select {
	case <-a.done:
		if a.err != nil {
			t.Fatalf("sync after release: %v", a.err)
		}
	case <-time.After(holdWait):
		t.Fatalf("sync not answered within %v of the release", holdWait)
	}
}

func crashRead(t *testing.T, m *MemFS, name string) string {
	t.Helper()
	b, ok, err := ReadFile(m.CrashClone(CrashOptions{}), name)
	if err != nil || !ok {
		t.Fatalf("read %s after a crash: ok %v err %v", name, ok, err)
	}
	return string(b)
}

func memFiles(t *testing.T, names ...string) (*MemFS, []File) {
	t.Helper()
	m := NewMem()
	if err := m.MkdirAll("/d"); err != nil {
		t.Fatal(err)
	}
	var fs []File
	for _, n := range names {
		f, err := m.Create(n)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		fs = append(fs, f)
	}
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	return m, fs
}

func mustWrite(t *testing.T, f File, s string, off int64) {
	t.Helper()
	if _, err := f.WriteAt([]byte(s), off); err != nil {
		t.Fatal(err)
	}
}

func TestHoldSyncHoldsMatchingSyncsUntilRelease(t *testing.T) {
	m, fs := memFiles(t, "/d/a", "/d/b")
	a, b := fs[0], fs[1]
	mustWrite(t, a, "one", 0)
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, a, "two", 3)

	h := m.HoldSync(func(name string) bool { return name == "/d/a" })
	t.Cleanup(h.Release)
	// Another file's Sync is not held.
	mustWrite(t, b, "bee", 0)
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := crashRead(t, m, "/d/b"); got != "bee" {
		t.Fatalf("b after a crash = %q, want bee (its Sync does not match the hold)", got)
	}

	done := goSync(a)
	if err := h.WaitBlocked(holdCtx(t), 1); err != nil {
		t.Fatalf("no Sync of a blocked: %v", err)
	}
	if done.answered() {
		t.Fatal("a held Sync returned before the release")
	}
	if h.Blocked() != 1 || h.Held() != 1 {
		t.Fatalf("blocked %d held %d, want 1 1", h.Blocked(), h.Held())
	}
	// While the Sync waits, the file reads and writes as usual and a crash
	// keeps only what was synced before.
	buf := make([]byte, 6)
	if _, err := a.ReadAt(buf, 0); err != nil || string(buf) != "onetwo" {
		t.Fatalf("read during the hold: %q %v", buf, err)
	}
	mustWrite(t, a, "six", 6)
	if got := crashRead(t, m, "/d/a"); got != "one" {
		t.Fatalf("a after a crash during the hold = %q, want one (only the first Sync's bytes)", got)
	}

	h.Release()
	awaitSync(t, done)
	if got := crashRead(t, m, "/d/a"); got != "onetwosix" {
		t.Fatalf("a after a crash after the release = %q, want onetwosix", got)
	}
	if h.Blocked() != 0 || h.Held() != 1 {
		t.Fatalf("after release: blocked %d held %d, want 0 1", h.Blocked(), h.Held())
	}
	// Released: later Syncs go through at once, and Release again is a no-op.
	h.Release()
	mustWrite(t, a, "!", 9)
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	if h.Held() != 1 {
		t.Fatalf("a Sync after the release was held (held %d)", h.Held())
	}
}

func TestHoldSyncNilMatchHoldsEverySync(t *testing.T) {
	m, fs := memFiles(t, "/d/a", "/d/b")
	h := m.HoldSync(nil)
	t.Cleanup(h.Release)
	da, db := goSync(fs[0]), goSync(fs[1])
	if err := h.WaitBlocked(holdCtx(t), 2); err != nil {
		t.Fatalf("two Syncs not blocked: %v (blocked %d)", err, h.Blocked())
	}
	// SyncDir is never held.
	if err := m.SyncDir("/d"); err != nil {
		t.Fatal(err)
	}
	// A wait for more than are blocked ends with its context.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h.WaitBlocked(ctx, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitBlocked(3) with 2 blocked and a cancelled context = %v, want context.Canceled", err)
	}
	if da.answered() || db.answered() {
		t.Fatal("a held Sync returned before the release")
	}
	h.Release()
	awaitSync(t, da)
	awaitSync(t, db)
}

func TestHoldSyncWaitsForEveryMatchingHold(t *testing.T) {
	m, fs := memFiles(t, "/d/a")
	h1 := m.HoldSync(nil)
	t.Cleanup(h1.Release)
	h2 := m.HoldSync(func(string) bool { return true })
	t.Cleanup(h2.Release)
	done := goSync(fs[0])
	if err := h1.WaitBlocked(holdCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	h1.Release()
	if err := h2.WaitBlocked(holdCtx(t), 1); err != nil {
		t.Fatalf("the Sync released by the first hold did not wait for the second: %v", err)
	}
	if done.answered() {
		t.Fatal("Sync returned while the second hold is on")
	}
	h2.Release()
	awaitSync(t, done)
}

func TestKillCloneKeepsWritesButNotTheirDurability(t *testing.T) {
	m, fs := memFiles(t, "/d/a", "/d/gone")
	a := fs[0]
	mustWrite(t, a, "one", 0)
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, a, "two", 3)
	if err := m.Remove("/d/gone"); err != nil { // not SyncDir'd
		t.Fatal(err)
	}
	nf, err := m.Create("/d/new") // not SyncDir'd, not synced
	if err != nil {
		t.Fatal(err)
	}
	defer nf.Close()
	mustWrite(t, nf, "fresh", 0)
	// A held Sync does not hold the clone.
	hold := m.HoldSync(nil)
	t.Cleanup(hold.Release)
	held := goSync(a)
	if err := hold.WaitBlocked(holdCtx(t), 1); err != nil {
		t.Fatal(err)
	}

	k := m.KillClone()
	if names, _ := k.ReadDir("/d"); strings.Join(names, ",") != "a,new" {
		t.Fatalf("after a kill /d holds %v, want a,new (current entries)", names)
	}
	for name, want := range map[string]string{"/d/a": "onetwo", "/d/new": "fresh"} {
		if b, ok, err := ReadFile(k, name); err != nil || !ok || string(b) != want {
			t.Fatalf("after a kill %s = %q (%v %v), want %q", name, b, ok, err, want)
		}
	}
	// A power loss after the restart drops what m never made durable.
	p := k.CrashClone(CrashOptions{})
	if names, _ := p.ReadDir("/d"); strings.Join(names, ",") != "a,gone" {
		t.Fatalf("after a kill and a power loss /d holds %v, want a,gone (durable entries)", names)
	}
	if got := crashRead(t, k, "/d/a"); got != "one" {
		t.Fatalf("after a kill and a power loss a = %q, want one", got)
	}
	// Unless the restarted process syncs it.
	ka, err := k.Open("/d/a")
	if err != nil {
		t.Fatal(err)
	}
	defer ka.Close()
	if err := ka.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := crashRead(t, k, "/d/a"); got != "onetwo" {
		t.Fatalf("after a kill, a Sync and a power loss a = %q, want onetwo", got)
	}
	// The clone shares nothing with m.
	mustWrite(t, ka, "X", 0)
	buf := make([]byte, 3)
	if _, err := a.ReadAt(buf, 0); err != nil || string(buf) != "one" {
		t.Fatalf("a write to the clone changed m: %q %v", buf, err)
	}
	if u, _ := k.Usage("/d"); u.TotalBytes-u.FreeBytes != uint64(len("onetwo")+len("fresh")) {
		t.Fatalf("the clone counts %d bytes used, want %d", u.TotalBytes-u.FreeBytes, len("onetwo")+len("fresh"))
	}
	hold.Release()
	awaitSync(t, held)
}
