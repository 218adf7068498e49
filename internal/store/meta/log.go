package meta

// The change log of topics.json and groups.json: see "Change log and
// compaction" in the package doc.

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path"

	"github.com/petrelmq/petrel/internal/vfs"
)

// logSuffix names a table's change log: topics.json.log next to topics.json.
const logSuffix = ".log"

// DefaultLogCompactBytes is the default of Options.LogCompactBytes.
const DefaultLogCompactBytes = 1 << 20

// recordHeader is the size of a log record's header: the payload's length
// and the CRC-32C of length and payload, both little-endian uint32.
const recordHeader = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// change is one change of a table, as a log record's JSON payload: the
// table's version after it, and the configs it stored or the name it
// removed.
type change[T any] struct {
	Version DataVersion `json:"dataVersion"`
	Put     []T         `json:"put,omitempty"`
	Delete  string      `json:"delete,omitempty"`
}

// pendingChange is a change not yet known durable, numbered as the table's
// changes (configTable.seq).
type pendingChange[T any] struct {
	seq uint64
	c   change[T]
}

// appendRecord appends the record of payload to buf.
func appendRecord(buf, payload []byte) []byte {
	var h [recordHeader]byte
	binary.LittleEndian.PutUint32(h[0:4], uint32(len(payload)))
	crc := crc32.Update(0, castagnoli, h[0:4])
	crc = crc32.Update(crc, castagnoli, payload)
	binary.LittleEndian.PutUint32(h[4:8], crc)
	return append(append(buf, h[:]...), payload...)
}

// nextRecord splits the first record off data. ok is false when data does
// not start with a whole record whose checksum matches: the end of the log,
// or the torn tail a crash during an append leaves.
func nextRecord(data []byte) (payload, rest []byte, ok bool) {
	if len(data) < recordHeader {
		return nil, data, false
	}
	n := binary.LittleEndian.Uint32(data[0:4])
	if n == 0 || uint64(n) > uint64(len(data)-recordHeader) {
		return nil, data, false
	}
	crc := crc32.Update(0, castagnoli, data[0:4])
	crc = crc32.Update(crc, castagnoli, data[recordHeader:recordHeader+int(n)])
	if crc != binary.LittleEndian.Uint32(data[4:8]) {
		return nil, data, false
	}
	return data[recordHeader : recordHeader+int(n)], data[recordHeader+int(n):], true
}

// replay applies the records of a log to m at version v and returns the
// new version and the bytes of whole records read; the rest of data is a
// torn tail. A record whose counter is not above v is already in the
// snapshot and is skipped; the next one must be v's counter + 1.
func replay[T config[T]](data []byte, v DataVersion, m map[string]T) (DataVersion, int, error) {
	good := 0
	for {
		payload, rest, ok := nextRecord(data)
		if !ok {
			return v, good, nil
		}
		var c change[T]
		if err := json.Unmarshal(payload, &c); err != nil {
			// The checksum matched: this is what was written, not a tear.
			return v, good, fmt.Errorf("record at byte %d: %w", good, err)
		}
		switch {
		case c.Version.Counter <= v.Counter:
		case c.Version.Counter == v.Counter+1:
			for _, it := range c.Put {
				if it.key() == "" {
					return v, good, fmt.Errorf("record at byte %d stores an empty name", good)
				}
				m[it.key()] = it.own()
			}
			if c.Delete != "" {
				delete(m, c.Delete)
			}
			v = c.Version
		default:
			return v, good, fmt.Errorf("record at byte %d has version counter %d after %d", good, c.Version.Counter, v.Counter)
		}
		good += len(data) - len(rest)
		data = rest
	}
}

// tableFiles is the on-disk side of a configTable: its snapshot file and
// change log. Only the table's running write (and Open, Close) use it.
type tableFiles struct {
	fsys     vfs.FS
	dir      string
	name     string // snapshot file name; the log is name + logSuffix
	minBytes int64  // Options.LogCompactBytes
	private  bool   // the table holds secrets: its files get mode 0600

	log       vfs.File // open log; nil until the first write creates it
	logEntry  bool     // the log's directory entry is durable
	logSize   int64    // bytes of whole, durable records in the log
	snapBytes int64    // size of the snapshot file last written or read
	// compact is set when the log may hold bytes past logSize (a torn tail,
	// a failed append or truncation) or its directory entry may not be
	// durable: the next write compacts instead of appending.
	compact bool
	// buf is the append buffer, reused.
	buf    []byte
	closed bool // Close has run: writes fail with ErrClosed
}

func (f *tableFiles) logPath() string { return path.Join(f.dir, f.name+logSuffix) }

// openLog reads the log for load and keeps it open for appends. It returns
// nil data when there is no log.
func (f *tableFiles) openLog() ([]byte, error) {
	p := f.logPath()
	lf, err := f.fsys.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("meta: open %s: %w", p, err)
	}
	size, err := lf.Size()
	if err != nil {
		lf.Close()
		return nil, fmt.Errorf("meta: size of %s: %w", p, err)
	}
	data := make([]byte, size)
	if size > 0 {
		if n, err := lf.ReadAt(data, 0); n != len(data) {
			lf.Close()
			return nil, fmt.Errorf("meta: read %s: %w", p, err)
		}
	}
	// Make sure the entry is durable before anything is appended: the
	// process that created the log may have failed to sync the directory.
	if err := f.fsys.SyncDir(f.dir); err != nil {
		lf.Close()
		return nil, fmt.Errorf("meta: sync dir %s: %w", f.dir, err)
	}
	f.log, f.logEntry = lf, true
	return data, nil
}

// shouldCompact reports whether appending n more bytes should instead
// rewrite the snapshot: the log would outgrow both the snapshot and
// minBytes, so the rewrite costs no more than the appends since the last.
func (f *tableFiles) shouldCompact(n int) bool {
	if f.compact || f.log == nil {
		// No log yet: the first write makes the snapshot and the log, so
		// an append never has to create a file.
		return true
	}
	size := f.logSize + int64(n)
	return size > f.minBytes && size > f.snapBytes
}

// appendChanges appends the encoded records and syncs the log. On failure
// the log is left for the next write to compact.
func (f *tableFiles) appendChanges(recs []byte) error {
	if _, err := f.log.WriteAt(recs, f.logSize); err != nil {
		f.compact = true
		return fmt.Errorf("meta: append to %s: %w", f.logPath(), err)
	}
	if err := f.log.Sync(); err != nil {
		f.compact = true
		return fmt.Errorf("meta: sync %s: %w", f.logPath(), err)
	}
	f.logSize += int64(len(recs))
	return nil
}

// replaceSnapshot writes snapshot data atomically and then empties the log.
// It returns an error only when the snapshot is not durable; a failure to
// empty the log (the snapshot holds everything) only leaves the next write
// to compact again, and is returned as resetErr for the log.
func (f *tableFiles) replaceSnapshot(data []byte) (resetErr, err error) {
	f.compact = true
	write := vfs.WriteFileAtomic
	if f.private {
		write = writePrivateAtomic
	}
	if err := write(f.fsys, f.dir, f.name, data); err != nil {
		return nil, fmt.Errorf("meta: %w", err)
	}
	f.snapBytes = int64(len(data))
	if err := f.resetLog(); err != nil {
		return err, nil
	}
	f.compact = false
	return nil, nil
}

// resetLog empties the log, creating it if missing, durably. Records left in
// an old log are harmless (their version counters are not above the
// snapshot's), so a crash at any step here loses nothing.
func (f *tableFiles) resetLog() error {
	p := f.logPath()
	if f.log == nil {
		lf, err := f.fsys.Create(p)
		if err != nil {
			return fmt.Errorf("meta: create %s: %w", p, err)
		}
		if f.private {
			if err := restrictMode(f.fsys, p); err != nil {
				lf.Close()
				return err
			}
		}
		f.log, f.logEntry = lf, false
	} else if err := f.log.Truncate(0); err != nil {
		return fmt.Errorf("meta: truncate %s: %w", p, err)
	}
	if err := f.log.Sync(); err != nil {
		return fmt.Errorf("meta: sync %s: %w", p, err)
	}
	if !f.logEntry {
		// Appends are acknowledged once synced: the file they go to must
		// survive a crash too.
		if err := f.fsys.SyncDir(f.dir); err != nil {
			return fmt.Errorf("meta: sync dir %s: %w", f.dir, err)
		}
		f.logEntry = true
	}
	f.logSize = 0
	return nil
}

// close closes the log file.
func (f *tableFiles) close() error {
	f.closed = true
	if f.log == nil {
		return nil
	}
	err := f.log.Close()
	f.log = nil
	return err
}
