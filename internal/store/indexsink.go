package store

import (
	"fmt"
	"path"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store/index"
)

// indexSink feeds every record's KEYS and UNIQ_KEY to the key index.
type indexSink struct {
	cfg Config
	dir string
	idx *index.Index
	// topics interns topic names so that dispatch does not allocate a
	// string per record. Dispatcher goroutine only.
	topics map[string]string
}

func openIndexSink(cfg Config) (*indexSink, error) {
	s := &indexSink{cfg: cfg, dir: path.Join(cfg.Dir, "index"), topics: make(map[string]string)}
	var err error
	s.idx, err = index.Open(cfg.FS, s.dir, cfg.indexOptions())
	if err != nil {
		return nil, fmt.Errorf("store: open index: %w", err)
	}
	return s, nil
}

func (s *indexSink) intern(b []byte) string {
	if t, ok := s.topics[string(b)]; ok {
		return t
	}
	t := string(b)
	if len(s.topics) > 100_000 {
		clear(s.topics)
	}
	s.topics[t] = t
	return t
}

func (s *indexSink) Dispatch(r message.Record) error {
	props := r.Properties()
	if len(props) == 0 {
		return nil
	}
	topic := s.intern(r.Topic())
	off, ts := r.PhysicalOffset(), r.StoreTimestamp()
	if uniq, ok := r.Property(message.PropertyUniqKey); ok && len(uniq) > 0 {
		// Ids are looked up case-insensitively: index the upper-case form.
		var buf [64]byte
		if err := s.idx.Add(topic, appendUpper(buf[:0], uniq), off, ts); err != nil {
			return err
		}
	}
	if keys, ok := r.Property(message.PropertyKeys); ok {
		var err error
		message.Keys(keys, func(k []byte) {
			if err == nil {
				err = s.idx.Add(topic, k, off, ts)
			}
		})
		return err
	}
	return nil
}

func (s *indexSink) Flush() error { return s.idx.Flush() }

// reset deletes the index (before a rebuild).
func (s *indexSink) reset() error {
	s.idx.Close()
	if err := s.cfg.FS.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("store: remove index: %w", err)
	}
	var err error
	s.idx, err = index.Open(s.cfg.FS, s.dir, s.cfg.indexOptions())
	if err != nil {
		return fmt.Errorf("store: reopen index: %w", err)
	}
	return nil
}

func appendUpper(dst, src []byte) []byte {
	for _, c := range src {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}
