package meta_test

import (
	"testing"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/store/meta"
	"github.com/petrelmq/petrel/internal/store/meta/metatest"
	"github.com/petrelmq/petrel/internal/vfs"
)

// TestStoreConformance runs the Tables suite on the file store over a
// MemFS.
func TestStoreConformance(t *testing.T) {
	metatest.Run(t, func(t *testing.T, clk clock.Clock) meta.Tables {
		s, err := meta.Open(vfs.NewMem(), "/data/meta", meta.Options{Clock: clk})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
		return s
	})
}

// TestMemConformance runs the Tables suite on the in-memory twin.
func TestMemConformance(t *testing.T) {
	metatest.Run(t, func(t *testing.T, clk clock.Clock) meta.Tables { return meta.NewMem(clk) })
}
