package storetest

import (
	"path"
	"testing"

	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/memstore"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// Stores are the message store and meta store a test of a package built
// on the store runs on: the file store on Cfg.FS (Disk), or the in-memory
// twin with a meta store on Cfg.FS. Open opens them, and after Close opens
// them again over what was stored (the files, or the twin's records).
type Stores struct {
	Cfg  store.Config
	Disk bool

	St   store.MessageStore
	Md   *meta.Store
	File *store.Store    // St, when Disk and open
	Mem  *memstore.Store // St, when not Disk (kept over Close for the reopen)
}

// Open opens the stores; the test fails if they do not open.
func (s *Stores) Open(t testing.TB) {
	t.Helper()
	if s.Disk {
		st, err := store.Open(s.Cfg)
		if err != nil {
			t.Fatalf("open store: %v", err)
		}
		s.File, s.St, s.Md = st, st, st.Meta()
		return
	}
	if s.Mem == nil {
		s.Mem = memstore.New(s.Cfg)
	} else {
		mem, err := s.Mem.Reopen()
		if err != nil {
			t.Fatalf("reopen the in-memory store: %v", err)
		}
		s.Mem = mem
	}
	md, err := meta.Open(s.Cfg.FS, path.Join(s.Cfg.Dir, "meta"), meta.Options{
		Clock: s.Cfg.Clock, OffsetFlushInterval: s.Cfg.OffsetFlushInterval, Logger: s.Cfg.Logger})
	if err != nil {
		s.Mem.Close()
		t.Fatalf("open the meta store: %v", err)
	}
	s.St, s.Md = s.Mem, md
}

// Close closes what Open opened (nothing when it is closed); a close error
// fails the test.
func (s *Stores) Close(t testing.TB) {
	t.Helper()
	if s.St == nil {
		return
	}
	if s.Disk {
		if err := s.File.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
		s.File = nil
	} else {
		s.Mem.Close()
		if err := s.Md.Close(); err != nil {
			t.Errorf("close the meta store: %v", err)
		}
	}
	s.St, s.Md = nil, nil
}
