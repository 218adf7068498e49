package dispatch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"path"

	"github.com/petrelmq/petrel/internal/vfs"
)

// CheckpointFile is the checkpoint's name in the store directory.
const CheckpointFile = "checkpoint"

const (
	checkpointMagic   = "PCKP"
	checkpointVersion = 1
	checkpointLen     = 36
)

// ErrNoCheckpoint: there is no checkpoint file (a new store).
var ErrNoCheckpoint = errors.New("dispatch: no checkpoint")

// Checkpoint is the recovery starting point.
type Checkpoint struct {
	Dispatched int64
	LogFlushed int64
	// Digest summarises the sinks' state at Dispatched (the store uses the
	// sum of every consume queue's max offset), so recovery can tell a sink
	// that lost data the checkpoint says it had.
	Digest int64
}

func (c Checkpoint) encode() []byte {
	b := make([]byte, checkpointLen)
	copy(b, checkpointMagic)
	binary.BigEndian.PutUint32(b[4:], checkpointVersion)
	binary.BigEndian.PutUint64(b[8:], uint64(c.Dispatched))
	binary.BigEndian.PutUint64(b[16:], uint64(c.LogFlushed))
	binary.BigEndian.PutUint64(b[24:], uint64(c.Digest))
	binary.BigEndian.PutUint32(b[32:], crc32.ChecksumIEEE(b[:32]))
	return b
}

// ReadCheckpoint reads dir/checkpoint. A missing file gives ErrNoCheckpoint;
// a damaged one an error that says so.
func ReadCheckpoint(fsys vfs.FS, dir string) (Checkpoint, error) {
	p := path.Join(dir, CheckpointFile)
	f, err := fsys.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Checkpoint{}, ErrNoCheckpoint
	}
	if err != nil {
		return Checkpoint{}, fmt.Errorf("dispatch: open checkpoint: %w", err)
	}
	defer f.Close()
	b := make([]byte, checkpointLen)
	if _, err := f.ReadAt(b, 0); err != nil && !(errors.Is(err, io.EOF)) {
		return Checkpoint{}, fmt.Errorf("dispatch: read checkpoint: %w", err)
	}
	if string(b[:4]) != checkpointMagic || binary.BigEndian.Uint32(b[4:]) != checkpointVersion ||
		binary.BigEndian.Uint32(b[32:]) != crc32.ChecksumIEEE(b[:32]) {
		return Checkpoint{}, fmt.Errorf("dispatch: checkpoint %s is damaged", p)
	}
	return Checkpoint{
		Dispatched: int64(binary.BigEndian.Uint64(b[8:])),
		LogFlushed: int64(binary.BigEndian.Uint64(b[16:])),
		Digest:     int64(binary.BigEndian.Uint64(b[24:])),
	}, nil
}

// WriteCheckpoint replaces dir/checkpoint atomically and durably.
func WriteCheckpoint(fsys vfs.FS, dir string, c Checkpoint) error {
	if err := vfs.WriteFileAtomic(fsys, dir, CheckpointFile, c.encode()); err != nil {
		return fmt.Errorf("dispatch: write checkpoint: %w", err)
	}
	return nil
}
