//go:build linux

package store

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store/commitlog"
	"github.com/petrelmq/petrel/internal/vfs"
)

// mountSmallExt4 makes an ext4 file system of mb MiB in an image file and
// loop-mounts it in a temporary directory, unmounted at cleanup. It skips
// the test where that cannot be done (not root, no tools, no loop devices).
func mountSmallExt4(t *testing.T, mb int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a loop-mounted file system needs root")
	}
	for _, tool := range []string{"mkfs.ext4", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
	dir := t.TempDir()
	img, mnt := filepath.Join(dir, "fs.img"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(mb << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-b", "4096", "-m", "0", img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		t.Skipf("loop devices are unavailable here (mount -o loop: %v: %s)", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
			exec.Command("umount", "-l", mnt).Run() // do not leave it mounted
		}
	})
	return mnt
}

// fillDisk writes a ballast file until the file system is full, then frees
// leave bytes of it. It returns the ballast's path.
func fillDisk(t *testing.T, dir string, leave int64) string {
	t.Helper()
	p := filepath.Join(dir, "ballast")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 256<<10)
	var size int64
	for {
		n, err := f.Write(chunk)
		size += int64(n)
		if err != nil {
			break
		}
	}
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		t.Logf("sync ballast: %v", err)
	}
	if err := f.Truncate(max(0, size-leave)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFailedRollOverOnARealFullDisk: TestFailedRollOverStoresNothingOfARefusedSend
// on a small ext4 file system that really runs full: a send that straddles
// the segment end when the next segment cannot be preallocated is refused
// with nothing stored, later sends are refused at admission, every
// acknowledged message stays readable, and once space is freed sends
// succeed again and the store reopens with the same contents.
func TestFailedRollOverOnARealFullDisk(t *testing.T) {
	for _, mode := range []commitlog.FlushMode{commitlog.FlushSync, commitlog.FlushAsync} {
		t.Run(mode.String(), func(t *testing.T) {
			mnt := mountSmallExt4(t, 32)
			clk := clock.NewManual(t0)
			cfg := smallConfig(vfs.OS, clk)
			cfg.Dir = filepath.Join(mnt, "data")
			cfg.SegmentBytes = 1 << 20
			cfg.MaxMessageBytes = 128 << 10
			cfg.FlushMode = mode
			s := mustOpen(t, cfg)
			t.Cleanup(func() { s.Close() }) // before the unmount
			led := newLedger()
			put := func(msgs []*message.Message) error {
				var err error
				if mode == commitlog.FlushAsync {
					// A connection's sends of one read, written by its
					// Appender on this goroutine.
					errs := make(chan error, len(msgs))
					groups := make([][]*message.Message, len(msgs))
					for i, m := range msgs {
						groups[i] = []*message.Message{m}
					}
					s.NewAppender().PutBatches(groups, func(i int, err error) { led.record(groups[i], err); errs <- err })
					for range msgs {
						if e := <-errs; e != nil {
							err = e
						}
					}
					return err
				}
				err = s.PutBatch(msgs)
				led.record(msgs, err)
				return err
			}
			// 60% of the first segment, below the mark where the next is
			// prepared.
			for s.clog.Written() < cfg.SegmentBytes*6/10 {
				if err := put(led.msgs(4, 8<<10)); err != nil {
					t.Fatal(err)
				}
			}
			ballast := fillDisk(t, mnt, 256<<10)
			// ~640 KiB: from 60% across the segment end.
			if err := put(led.msgs(10, 64<<10)); !errors.Is(err, ErrDiskFull) {
				t.Fatalf("straddling send on the full disk: %v, want ErrDiskFull", err)
			}
			end := s.clog.Written()
			if err := put(led.msgs(1, 1<<10)); !errors.Is(err, ErrDiskFull) {
				t.Fatalf("send while the next segment cannot be made: %v, want ErrDiskFull", err)
			}
			if s.clog.Written() != end {
				t.Fatalf("refused sends moved the log end from %d to %d", end, s.clog.Written())
			}
			checkLedger(t, s, vfs.OS, led, "on the full disk")

			if err := os.Remove(ballast); err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Second)
			for s.clog.Written() < cfg.SegmentBytes+cfg.SegmentBytes/2 {
				if err := put(led.msgs(4, 32<<10)); err != nil {
					t.Fatalf("send after space was freed: %v", err)
				}
			}
			checkLedger(t, s, vfs.OS, led, "after space was freed")
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s2 := mustOpen(t, cfg)
			t.Cleanup(func() { s2.Close() })
			checkLedger(t, s2, vfs.OS, led, "after reopening")
			m := led.msgs(1, 10)
			err := s2.PutBatch(m)
			led.record(m, err)
			if err != nil {
				t.Fatalf("send after reopening: %v", err)
			}
			checkLedger(t, s2, vfs.OS, led, "after a send on the reopened store")
		})
	}
}
