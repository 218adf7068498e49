package vfs

import (
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand"
	"path"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// MemFS is an in-memory FS for tests. It keeps, next to the current state,
// what a disk would still hold after a power loss, and CrashClone returns
// that state as a new MemFS; KillClone returns what a process restarted
// after kill -9 finds (everything written, durable only as far as synced).
//
// Durability model (strict):
//   - File data: each file keeps its current bytes and its durable bytes (as
//     of its last File.Sync), plus the log of writes and truncations made
//     since that Sync.
//   - Directory entries: each directory keeps its current entries and its
//     durable entries (as of its last SyncDir). Create, Remove, RemoveAll and
//     Rename change only the current entries.
//   - Simplification: a directory made by MkdirAll is durable at once (it is
//     added to the durable entries of its parent as well).
//
// Paths are cleaned with path.Clean and resolved from one root: there is no
// working directory, so "a/b" and "/a/b" name the same file. Absolute paths
// such as those of t.TempDir() work as given; MkdirAll them first.
//
// Space: SetCapacity bounds the sum of the sizes of all files, counting a file
// until it is both unlinked and closed (as POSIX does). Directories take no
// space.
//
// Faults: InjectError fails chosen operations; HoldSync makes File.Sync
// wait until released, so a test can look at what is written but not yet
// durable.
//
// All methods of MemFS and of its files are safe for concurrent use.
type MemFS struct {
	mu       sync.RWMutex
	root     *memNode
	capacity int64 // 0: unlimited
	reserved int64 // of capacity, for the superuser only (SetReserved)
	used     int64

	inject atomic.Pointer[func(op Op, path string) error]

	holdMu sync.Mutex
	holds  []*SyncHold // see HoldSync
}

var _ FS = (*MemFS)(nil)

// unlimitedBytes is the TotalBytes that Usage reports without a capacity.
const unlimitedBytes = 1 << 40

// NewMem returns an empty MemFS holding only the root directory.
func NewMem() *MemFS {
	return &MemFS{root: newDirNode()}
}

// Op names a MemFS operation for InjectError.
type Op int

// The operations InjectError sees. File operations (OpRead, OpWrite, OpSync,
// OpTruncate, OpPreallocate, OpDropCache) carry the path the file was opened with;
// RemoveAll reports OpRemove. Close, Size and Usage are never failed.
const (
	OpCreate Op = iota + 1
	OpOpen
	OpRead
	OpWrite
	OpSync
	OpTruncate
	OpPreallocate
	OpRemove
	OpRename
	OpMkdir
	OpReadDir
	OpSyncDir
	OpStat
	OpDropCache
)

var opNames = [...]string{
	OpCreate:      "create",
	OpOpen:        "open",
	OpRead:        "read",
	OpWrite:       "write",
	OpSync:        "sync",
	OpTruncate:    "truncate",
	OpPreallocate: "preallocate",
	OpRemove:      "remove",
	OpRename:      "rename",
	OpMkdir:       "mkdir",
	OpReadDir:     "readdir",
	OpSyncDir:     "syncdir",
	OpStat:        "stat",
	OpDropCache:   "dropcache",
}

func (o Op) String() string {
	if o > 0 && int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// CrashOptions controls CrashClone.
type CrashOptions struct {
	// Rand, when set, makes the crash keep for each file a random prefix of
	// the writes and truncations made since its last Sync, the last kept
	// write possibly cut short. When nil, only synced data survives and the
	// clone is deterministic.
	Rand *rand.Rand
}

// InjectError installs fn, which is called with the operation and the cleaned
// path before each operation; a non-nil return fails the operation (the
// error is returned wrapped in an *fs.PathError) and nothing changes. A nil fn
// removes the hook. fn may be called from several goroutines at once. It
// runs before the operation takes the FS's lock, so it may call CrashClone
// to crash at an exact operation; other calls into this MemFS from fn are
// not supported.
func (m *MemFS) InjectError(fn func(op Op, path string) error) {
	if fn == nil {
		m.inject.Store(nil)
		return
	}
	m.inject.Store(&fn)
}

func (m *MemFS) injected(op Op, name string) error {
	fn := m.inject.Load()
	if fn == nil {
		return nil
	}
	if err := (*fn)(op, name); err != nil {
		return &fs.PathError{Op: op.String(), Path: name, Err: err}
	}
	return nil
}

// SetCapacity bounds the total size of all files to bytes; 0 means unlimited.
// It may be lowered below the current use: then only operations that shrink
// or do not grow files succeed until enough space is freed.
func (m *MemFS) SetCapacity(bytes int64) {
	m.mu.Lock()
	m.capacity = bytes
	m.mu.Unlock()
}

// SetReserved sets aside bytes of the capacity for the superuser, as ext4
// reserves 5% of its blocks for root: Usage reports them neither as used
// nor as free, and writes fail with ErrNoSpace once only they are left (as
// for an unprivileged process). It has no effect without a capacity.
func (m *MemFS) SetReserved(bytes int64) {
	m.mu.Lock()
	m.reserved = max(0, bytes)
	m.mu.Unlock()
}

// limit is the most the files may take. Must hold m.mu; only meaningful
// with a capacity.
func (m *MemFS) limit() int64 { return max(0, m.capacity-m.reserved) }

// reserve accounts delta more bytes of use, or fails with ErrNoSpace when a
// growth would pass the capacity less the reserved bytes. Must hold m.mu.
func (m *MemFS) reserve(op, name string, delta int64) error {
	if delta > 0 && m.capacity > 0 && m.used+delta > m.limit() {
		return &fs.PathError{Op: op, Path: name, Err: ErrNoSpace}
	}
	m.used += delta
	return nil
}

type memNode struct {
	isDir bool

	// Directories.
	children map[string]*memNode // current entries
	durable  map[string]*memNode // entries as of the last SyncDir

	// Files.
	data     []byte   // current contents
	synced   []byte   // contents as of the last Sync
	log      []fileOp // writes and truncations since the last Sync
	links    int      // current directory entries naming this file
	opens    int      // open handles
	released bool     // unlinked and closed: no longer counted in MemFS.used
}

// fileOp is one unsynced change of a file: a write of data at off, or (when
// data is nil) a truncation to size.
type fileOp struct {
	off  int64
	data []byte
	size int64
}

func newDirNode() *memNode {
	return &memNode{
		isDir:    true,
		children: map[string]*memNode{},
		durable:  map[string]*memNode{},
	}
}

// apply performs op on b and returns the result; cut bytes of a write are
// applied (cut < 0: all of them).
func (op fileOp) apply(b []byte, cut int) []byte {
	if op.data == nil {
		return resize(b, op.size)
	}
	p := op.data
	if cut >= 0 && cut < len(p) {
		p = p[:cut]
	}
	if len(p) == 0 {
		return b
	}
	if end := op.off + int64(len(p)); end > int64(len(b)) {
		b = resize(b, end)
	}
	copy(b[op.off:], p)
	return b
}

// resize returns b truncated or zero-extended to size.
func resize(b []byte, size int64) []byte {
	if size <= int64(len(b)) {
		return b[:size]
	}
	grow := int(size) - len(b)
	if grow <= cap(b)-len(b) {
		b = b[:size]
		clear(b[size-int64(grow):])
		return b
	}
	return append(b, make([]byte, grow)...)
}

// split cleans name and returns its components from the root; the cleaned
// form is what errors and InjectError report.
func split(name string) (clean string, parts []string) {
	clean = path.Clean(name)
	rooted := path.Clean("/" + name)
	if rooted == "/" {
		return clean, nil
	}
	return clean, splitRooted(rooted[1:])
}

func splitRooted(s string) []string {
	var parts []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '/' {
			i++
		}
		parts = append(parts, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return parts
}

// walk returns the node of parts. Must hold m.mu.
func (m *MemFS) walk(parts []string) (*memNode, error) {
	n := m.root
	for _, p := range parts {
		if !n.isDir {
			return nil, syscall.ENOTDIR
		}
		c, ok := n.children[p]
		if !ok {
			return nil, syscall.ENOENT
		}
		n = c
	}
	return n, nil
}

// walkParent returns the directory that holds parts and the last name;
// parts must not be empty. Must hold m.mu.
func (m *MemFS) walkParent(parts []string) (*memNode, string, error) {
	dir, err := m.walk(parts[:len(parts)-1])
	if err != nil {
		return nil, "", err
	}
	if !dir.isDir {
		return nil, "", syscall.ENOTDIR
	}
	return dir, parts[len(parts)-1], nil
}

// unlink drops one link of n; a file with no links and no handles frees its
// space. Directories are unlinked recursively. Must hold m.mu.
func (m *MemFS) unlink(n *memNode) {
	if n.isDir {
		for _, name := range slices.Sorted(maps.Keys(n.children)) {
			m.unlink(n.children[name])
		}
		clear(n.children)
		return
	}
	n.links--
	m.maybeRelease(n)
}

func (m *MemFS) maybeRelease(n *memNode) {
	if n.links == 0 && n.opens == 0 && !n.released {
		n.released = true
		m.used -= int64(len(n.data))
	}
}

// Create creates name (truncating it if it exists) and opens it. The new
// directory entry is durable after SyncDir of its directory; the truncation
// of an existing file is durable after Sync. Creating a new file fails with
// ErrNoSpace when no space is free.
func (m *MemFS) Create(name string) (File, error) {
	clean, parts := split(name)
	if err := m.injected(OpCreate, clean); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	pe := func(err error) error { return &fs.PathError{Op: "create", Path: clean, Err: err} }
	if len(parts) == 0 {
		return nil, pe(syscall.EISDIR)
	}
	dir, base, err := m.walkParent(parts)
	if err != nil {
		return nil, pe(err)
	}
	n, ok := dir.children[base]
	switch {
	case ok && n.isDir:
		return nil, pe(syscall.EISDIR)
	case ok:
		if len(n.data) > 0 {
			m.used -= int64(len(n.data))
			n.data = n.data[:0]
			n.log = append(n.log, fileOp{size: 0})
		}
	default:
		if m.capacity > 0 && m.used >= m.limit() {
			return nil, pe(ErrNoSpace)
		}
		n = &memNode{links: 1}
		dir.children[base] = n
	}
	n.opens++
	return &memFile{m: m, n: n, name: clean}, nil
}

// Open opens an existing file for reading and writing.
func (m *MemFS) Open(name string) (File, error) {
	clean, parts := split(name)
	if err := m.injected(OpOpen, clean); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.walk(parts)
	if err == nil && n.isDir {
		err = syscall.EISDIR
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: clean, Err: err}
	}
	n.opens++
	return &memFile{m: m, n: n, name: clean}, nil
}

// Remove removes a file or an empty directory. Open handles of a removed file
// keep working. The removal is durable after SyncDir of its directory.
func (m *MemFS) Remove(name string) error {
	clean, parts := split(name)
	if err := m.injected(OpRemove, clean); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	pe := func(err error) error { return &fs.PathError{Op: "remove", Path: clean, Err: err} }
	if len(parts) == 0 {
		return pe(syscall.EBUSY)
	}
	dir, base, err := m.walkParent(parts)
	if err != nil {
		return pe(err)
	}
	n, ok := dir.children[base]
	if !ok {
		return pe(syscall.ENOENT)
	}
	if n.isDir && len(n.children) > 0 {
		return pe(syscall.ENOTEMPTY)
	}
	delete(dir.children, base)
	m.unlink(n)
	return nil
}

// RemoveAll removes name and everything under it; a missing name is not an
// error. Only the removal of the top entry needs a SyncDir to be durable; the
// entries below it come back after a crash if that removal does.
func (m *MemFS) RemoveAll(name string) error {
	clean, parts := split(name)
	if err := m.injected(OpRemove, clean); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(parts) == 0 {
		return &fs.PathError{Op: "removeall", Path: clean, Err: syscall.EINVAL}
	}
	dir, base, err := m.walkParent(parts)
	if err == syscall.ENOENT {
		return nil
	}
	if err != nil {
		return &fs.PathError{Op: "removeall", Path: clean, Err: err}
	}
	n, ok := dir.children[base]
	if !ok {
		return nil
	}
	delete(dir.children, base)
	m.unlink(n)
	return nil
}

// Rename atomically replaces newname by oldname, as rename(2) does. It is
// durable after SyncDir of both directories involved.
func (m *MemFS) Rename(oldname, newname string) error {
	oldClean, oldParts := split(oldname)
	newClean, newParts := split(newname)
	if err := m.injected(OpRename, oldClean); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	le := func(err error) error {
		return &fs.PathError{Op: "rename", Path: oldClean + " " + newClean, Err: err}
	}
	if len(oldParts) == 0 || len(newParts) == 0 {
		return le(syscall.EBUSY)
	}
	odir, obase, err := m.walkParent(oldParts)
	if err != nil {
		return le(err)
	}
	n, ok := odir.children[obase]
	if !ok {
		return le(syscall.ENOENT)
	}
	ndir, nbase, err := m.walkParent(newParts)
	if err != nil {
		return le(err)
	}
	if odir == ndir && obase == nbase {
		return nil
	}
	if n.isDir && len(newParts) > len(oldParts) && slices.Equal(newParts[:len(oldParts)], oldParts) {
		return le(syscall.EINVAL) // into its own subtree
	}
	if old, ok := ndir.children[nbase]; ok {
		switch {
		case old == n:
			return nil // two names of one file: rename(2) does nothing
		case n.isDir && !old.isDir:
			return le(syscall.ENOTDIR)
		case !n.isDir && old.isDir:
			return le(syscall.EISDIR)
		case old.isDir && len(old.children) > 0:
			return le(syscall.ENOTEMPTY)
		}
		m.unlink(old)
	}
	delete(odir.children, obase)
	ndir.children[nbase] = n
	return nil
}

// MkdirAll creates dir and its missing parents. Unlike the other entry
// changes, the new directories are durable at once.
func (m *MemFS) MkdirAll(dir string) error {
	clean, parts := split(dir)
	if err := m.injected(OpMkdir, clean); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.root
	for _, p := range parts {
		c, ok := n.children[p]
		if !ok {
			c = newDirNode()
			n.children[p] = c
			n.durable[p] = c
		} else if !c.isDir {
			return &fs.PathError{Op: "mkdir", Path: clean, Err: syscall.ENOTDIR}
		}
		n = c
	}
	return nil
}

// ReadDir returns the sorted names of the entries of dir.
func (m *MemFS) ReadDir(dir string) ([]string, error) {
	clean, parts := split(dir)
	if err := m.injected(OpReadDir, clean); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, err := m.walk(parts)
	if err == nil && !n.isDir {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: clean, Err: err}
	}
	return slices.Sorted(maps.Keys(n.children)), nil
}

// Stat describes name. ModTime is always the zero time.
func (m *MemFS) Stat(name string) (fs.FileInfo, error) {
	clean, parts := split(name)
	if err := m.injected(OpStat, clean); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	n, err := m.walk(parts)
	if err != nil {
		return nil, &fs.PathError{Op: "stat", Path: clean, Err: err}
	}
	return memInfo{name: path.Base(clean), size: int64(len(n.data)), dir: n.isDir}, nil
}

// SyncDir makes the current entries of dir its durable entries.
func (m *MemFS) SyncDir(dir string) error {
	clean, parts := split(dir)
	if err := m.injected(OpSyncDir, clean); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.walk(parts)
	if err == nil && !n.isDir {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return &fs.PathError{Op: "syncdir", Path: clean, Err: err}
	}
	n.durable = maps.Clone(n.children)
	return nil
}

// Usage reports the capacity (1 TiB when unlimited) as TotalBytes, the bytes
// the files take as UsedBytes and what is left of the capacity less the
// reserved bytes (SetReserved) as FreeBytes. path must exist.
func (m *MemFS) Usage(name string) (Usage, error) {
	clean, parts := split(name)
	m.mu.RLock()
	defer m.mu.RUnlock()
	if _, err := m.walk(parts); err != nil {
		return Usage{}, &fs.PathError{Op: "usage", Path: clean, Err: err}
	}
	total, limit := int64(unlimitedBytes), int64(unlimitedBytes)
	if m.capacity > 0 {
		total, limit = m.capacity, m.limit()
	}
	return Usage{TotalBytes: uint64(total), UsedBytes: uint64(min(m.used, total)), FreeBytes: uint64(max(0, limit-m.used))}, nil
}

// CrashClone returns a new MemFS holding what the disk would hold after a
// power loss now: the durable entries of every directory reachable from the
// root through durable entries, and for every file its synced data (plus,
// with opts.Rand, a random prefix of its later changes; see CrashOptions).
// In the clone everything is durable and no handle is open. It keeps the
// capacity and reserved bytes but not the InjectError hook, and shares no mutable state with m,
// which stays usable.
func (m *MemFS) CrashClone(opts CrashOptions) *MemFS {
	m.mu.RLock()
	defer m.mu.RUnlock()
	c := &MemFS{capacity: m.capacity, reserved: m.reserved}
	files := map[*memNode]*memNode{} // hard links stay shared
	dirs := map[*memNode]bool{}      // a directory appears once (renames may leave two durable names)
	var cloneDir func(src *memNode) *memNode
	cloneDir = func(src *memNode) *memNode {
		dirs[src] = true
		dst := newDirNode()
		for _, name := range slices.Sorted(maps.Keys(src.durable)) {
			sn := src.durable[name]
			var dn *memNode
			switch {
			case sn.isDir && dirs[sn]:
				continue
			case sn.isDir:
				dn = cloneDir(sn)
			case files[sn] != nil:
				dn = files[sn]
			default:
				dn = &memNode{data: crashData(sn, opts.Rand)}
				dn.synced = slices.Clone(dn.data)
				c.used += int64(len(dn.data))
				files[sn] = dn
			}
			if !dn.isDir {
				dn.links++
			}
			dst.children[name] = dn
			dst.durable[name] = dn
		}
		return dst
	}
	c.root = cloneDir(m.root)
	return c
}

// KillClone returns a new MemFS holding what a process restarted after
// kill -9 finds now: every current directory entry and every file's
// current contents, synced or not (the OS page cache outlives the
// process), with m's durability: what m had not synced or SyncDir'd is
// not durable in the clone either, so a CrashClone of the clone (a power
// loss after the restart) drops it unless the restarted process syncs it.
// No handle is open in the clone; files m had unlinked are gone (those
// whose removal was not synced come back in a CrashClone of the clone). It
// keeps the capacity but not the InjectError hook nor the sync holds, and
// shares no mutable state with m.
func (m *MemFS) KillClone() *MemFS {
	m.mu.RLock()
	defer m.mu.RUnlock()
	c := &MemFS{capacity: m.capacity, reserved: m.reserved}
	nodes := map[*memNode]*memNode{} // each node once: hard links and unsynced renames stay shared
	var clone func(src *memNode) *memNode
	clone = func(src *memNode) *memNode {
		if dn, ok := nodes[src]; ok {
			return dn
		}
		if !src.isDir {
			dn := &memNode{data: slices.Clone(src.data), synced: slices.Clone(src.synced)}
			for _, op := range src.log {
				op.data = slices.Clone(op.data) // nil stays nil: a truncation
				dn.log = append(dn.log, op)
			}
			nodes[src] = dn
			return dn
		}
		dn := newDirNode()
		nodes[src] = dn
		for _, name := range slices.Sorted(maps.Keys(src.children)) {
			cn := clone(src.children[name])
			if !cn.isDir {
				cn.links++
			}
			dn.children[name] = cn
		}
		for _, name := range slices.Sorted(maps.Keys(src.durable)) {
			dn.durable[name] = clone(src.durable[name])
		}
		return dn
	}
	c.root = clone(m.root)
	for _, n := range nodes {
		switch {
		case n.isDir:
		case n.links > 0:
			c.used += int64(len(n.data))
		default:
			n.released = true // reachable only through an unsynced removal
		}
	}
	return c
}

// crashData returns the contents of file n after a crash.
func crashData(n *memNode, r *rand.Rand) []byte {
	b := slices.Clone(n.synced)
	if b == nil {
		b = []byte{}
	}
	if r == nil || len(n.log) == 0 {
		return b
	}
	keep := r.Intn(len(n.log) + 1)
	for i, op := range n.log[:keep] {
		cut := -1
		if i == keep-1 && op.data != nil {
			cut = r.Intn(len(op.data) + 1)
		}
		b = op.apply(b, cut)
	}
	return b
}

type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string { return i.name }
func (i memInfo) Size() int64  { return i.size }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }

// memFile is an open handle of a MemFS file. All state lives in the node,
// guarded by the MemFS lock.
type memFile struct {
	m      *MemFS
	n      *memNode
	name   string
	closed bool // guarded by m.mu
}

var _ File = (*memFile)(nil)

func (f *memFile) pathErr(op string, err error) error {
	return &fs.PathError{Op: op, Path: f.name, Err: err}
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.m.injected(OpRead, f.name); err != nil {
		return 0, err
	}
	f.m.mu.RLock()
	defer f.m.mu.RUnlock()
	if f.closed {
		return 0, f.pathErr("read", fs.ErrClosed)
	}
	if off < 0 {
		return 0, f.pathErr("read", syscall.EINVAL)
	}
	if off >= int64(len(f.n.data)) {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.m.injected(OpWrite, f.name); err != nil {
		return 0, err
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return 0, f.pathErr("write", fs.ErrClosed)
	}
	if off < 0 {
		return 0, f.pathErr("write", syscall.EINVAL)
	}
	if len(p) == 0 {
		return 0, nil
	}
	grow := max(0, off+int64(len(p))-int64(len(f.n.data)))
	if err := f.m.reserve("write", f.name, grow); err != nil {
		return 0, err
	}
	op := fileOp{off: off, data: slices.Clone(p)}
	f.n.data = op.apply(f.n.data, -1)
	f.n.log = append(f.n.log, op)
	return len(p), nil
}

// setSize truncates or extends the file. Must hold m.mu.
func (f *memFile) setSize(opName string, size int64) error {
	if size < 0 {
		return f.pathErr(opName, syscall.EINVAL)
	}
	cur := int64(len(f.n.data))
	if size == cur {
		return nil
	}
	if err := f.m.reserve(opName, f.name, size-cur); err != nil {
		return err
	}
	op := fileOp{size: size}
	f.n.data = op.apply(f.n.data, -1)
	f.n.log = append(f.n.log, op)
	return nil
}

func (f *memFile) Truncate(size int64) error {
	if err := f.m.injected(OpTruncate, f.name); err != nil {
		return err
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return f.pathErr("truncate", fs.ErrClosed)
	}
	return f.setSize("truncate", size)
}

// Preallocate extends the file to size when it is shorter; the whole size
// counts against the capacity. The new size is durable after Sync.
func (f *memFile) Preallocate(size int64) error {
	if err := f.m.injected(OpPreallocate, f.name); err != nil {
		return err
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return f.pathErr("preallocate", fs.ErrClosed)
	}
	if size <= int64(len(f.n.data)) {
		if size < 0 {
			return f.pathErr("preallocate", syscall.EINVAL)
		}
		return nil
	}
	return f.setSize("preallocate", size)
}

// Sync makes the current contents durable. It costs the bytes changed since
// the last Sync, not the size of the file. A HoldSync that matches the file
// makes it wait first.
func (f *memFile) Sync() error {
	f.m.waitHolds(f.name)
	if err := f.m.injected(OpSync, f.name); err != nil {
		return err
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return f.pathErr("sync", fs.ErrClosed)
	}
	for _, op := range f.n.log {
		f.n.synced = op.apply(f.n.synced, -1)
	}
	clear(f.n.log) // drop references to the logged bytes
	f.n.log = f.n.log[:0]
	return nil
}

// DropCache changes nothing: MemFS has no page cache. InjectError sees it,
// so tests can watch which files are dropped.
func (f *memFile) DropCache(off, n int64) error {
	if err := f.m.injected(OpDropCache, f.name); err != nil {
		return err
	}
	f.m.mu.RLock()
	defer f.m.mu.RUnlock()
	if f.closed {
		return f.pathErr("dropcache", fs.ErrClosed)
	}
	if off < 0 || n < 0 {
		return f.pathErr("dropcache", syscall.EINVAL)
	}
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.m.mu.RLock()
	defer f.m.mu.RUnlock()
	if f.closed {
		return 0, f.pathErr("size", fs.ErrClosed)
	}
	return int64(len(f.n.data)), nil
}

func (f *memFile) Close() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if f.closed {
		return f.pathErr("close", fs.ErrClosed)
	}
	f.closed = true
	f.n.opens--
	f.m.maybeRelease(f.n)
	return nil
}
