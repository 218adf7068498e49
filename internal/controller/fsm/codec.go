package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// Bounds of the codec (and of the state Apply builds).
const (
	MaxCommandBytes  = 64 << 10 // an encoded command
	MaxSnapshotBytes = 64 << 20 // an encoded state
	MaxGroups        = 10000    // groups of a state
	MaxReplicas      = 64       // replicas of a group; members of an in-sync set
)

// ErrCorrupt is returned by DecodeCommand and Restore for bytes that are not
// a complete, canonical encoding within the bounds.
var ErrCorrupt = errors.New("fsm: corrupt encoding")

// Format versions and the snapshot magic (see the package doc for the
// layout).
const (
	commandVersion  = 1
	snapshotMagic   = "PFSM"
	snapshotVersion = 1
)

// EncodeCommand encodes c (layout in the package doc). It refuses with
// ErrInvalid a command beyond the bounds: a string longer than
// MaxStringBytes, more than MaxReplicas ISR members or incarnations. The
// encoding is canonical: DecodeCommand(EncodeCommand(c)) re-encodes to the
// same bytes.
func EncodeCommand(c Command) ([]byte, error) {
	for _, s := range []string{c.Cluster, c.Group, c.Replica.Addr, c.Replica.HAAddr, c.Replica.GRPCAddr, c.Reason} {
		if len(s) > MaxStringBytes {
			return nil, fmt.Errorf("%w: a string of %d bytes, more than %d", ErrInvalid, len(s), MaxStringBytes)
		}
	}
	if len(c.ISR) > MaxReplicas || len(c.Incarnations) > MaxReplicas {
		return nil, fmt.Errorf("%w: %d in-sync members and %d incarnations, more than %d", ErrInvalid, len(c.ISR), len(c.Incarnations), MaxReplicas)
	}
	b := make([]byte, 0, 64)
	b = append(b, commandVersion, byte(c.Kind))
	b = appendString(b, c.Cluster)
	b = appendString(b, c.Group)
	b = appendReplica(b, c.Replica)
	b = binary.AppendUvarint(b, uint64(c.LastEpoch))
	b = binary.AppendVarint(b, c.Master)
	b = binary.AppendUvarint(b, uint64(c.Epoch))
	b = binary.AppendUvarint(b, c.ISRVersion)
	b = appendIDs(b, c.ISR)
	ids := make([]int64, 0, len(c.Incarnations))
	for id := range c.Incarnations {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = binary.AppendVarint(b, id)
		b = binary.AppendUvarint(b, c.Incarnations[id])
	}
	b = binary.AppendVarint(b, c.NewMaster)
	b = appendBool(b, c.Unclean)
	b = appendString(b, c.Reason)
	b = binary.AppendVarint(b, c.ID)
	b = binary.AppendUvarint(b, c.Incarnation)
	if len(b) > MaxCommandBytes {
		return nil, fmt.Errorf("%w: %d bytes encoded, more than %d", ErrInvalid, len(b), MaxCommandBytes)
	}
	return b, nil
}

// DecodeCommand decodes what EncodeCommand wrote. It refuses with
// ErrCorrupt anything else: more than MaxCommandBytes, an unknown version,
// a truncated or overlong field, trailing bytes, a count beyond the bounds,
// incarnations not in ascending id order. It allocates at most about
// len(b) bytes. The command's Kind is not checked (Apply refuses unknown
// kinds); a zero count decodes as a nil slice or map.
func DecodeCommand(b []byte) (Command, error) {
	if len(b) > MaxCommandBytes {
		return Command{}, fmt.Errorf("%w: a command of %d bytes, more than %d", ErrCorrupt, len(b), MaxCommandBytes)
	}
	r := reader{b: b}
	if v := r.byte(); r.err == nil && v != commandVersion {
		return Command{}, fmt.Errorf("%w: command format version %d, want %d", ErrCorrupt, v, commandVersion)
	}
	var c Command
	c.Kind = Kind(r.byte())
	c.Cluster = r.string()
	c.Group = r.string()
	c.Replica = r.replica()
	c.LastEpoch = r.uint32()
	c.Master = r.varint()
	c.Epoch = r.uint32()
	c.ISRVersion = r.uvarint()
	c.ISR = r.ids()
	if n := r.count(MaxReplicas, 2); n > 0 {
		c.Incarnations = make(map[int64]uint64, n)
		prev := int64(math.MinInt64)
		for i := 0; i < n && r.err == nil; i++ {
			id, inc := r.varint(), r.uvarint()
			if i > 0 && id <= prev {
				r.fail("incarnations not in ascending id order")
			}
			prev = id
			c.Incarnations[id] = inc
		}
	}
	c.NewMaster = r.varint()
	c.Unclean = r.bool()
	c.Reason = r.string()
	c.ID = r.varint()
	c.Incarnation = r.uvarint()
	if err := r.end(); err != nil {
		return Command{}, err
	}
	return c, nil
}

// Snapshot encodes s (layout in the package doc). It refuses with
// ErrInvalid a state that fails Check or whose encoding would exceed
// MaxSnapshotBytes (Apply never builds one). The encoding is canonical
// (groups in name order), so equal states give equal bytes.
func (s *State) Snapshot() ([]byte, error) {
	if err := s.Check(); err != nil {
		return nil, fmt.Errorf("%w: snapshot of a state that fails its invariants: %w", ErrInvalid, err)
	}
	size := s.snapshotSize()
	if size > MaxSnapshotBytes {
		return nil, fmt.Errorf("%w: a snapshot of %d bytes, more than %d", ErrInvalid, size, MaxSnapshotBytes)
	}
	b := make([]byte, 0, size)
	b = append(b, snapshotMagic...)
	b = append(b, snapshotVersion)
	b = binary.AppendUvarint(b, s.NextIncarnation)
	b = binary.AppendUvarint(b, uint64(len(s.Groups)))
	for _, name := range sortedNames(s.Groups) {
		b = appendGroup(b, s.Groups[name])
	}
	b = binary.AppendUvarint(b, uint64(len(s.Audit)))
	for _, a := range s.Audit {
		b = appendString(b, a.Group)
		b = binary.AppendUvarint(b, uint64(a.Epoch))
		b = binary.AppendVarint(b, a.Master)
		b = appendString(b, a.Reason)
		b = appendBool(b, a.Unclean)
	}
	return b, nil
}

// Restore decodes what Snapshot wrote. It refuses with ErrCorrupt anything
// else, including a well-formed state that fails Check (wrapped with the
// invariant it breaks). It allocates at most a small multiple of len(b).
func Restore(b []byte) (*State, error) {
	if len(b) > MaxSnapshotBytes {
		return nil, fmt.Errorf("%w: a snapshot of %d bytes, more than %d", ErrCorrupt, len(b), MaxSnapshotBytes)
	}
	if len(b) < len(snapshotMagic)+1 || string(b[:len(snapshotMagic)]) != snapshotMagic {
		return nil, fmt.Errorf("%w: not a controller snapshot", ErrCorrupt)
	}
	if v := b[len(snapshotMagic)]; v != snapshotVersion {
		return nil, fmt.Errorf("%w: snapshot format version %d, want %d", ErrCorrupt, v, snapshotVersion)
	}
	r := reader{b: b[len(snapshotMagic)+1:]}
	s := &State{NextIncarnation: r.uvarint()}
	n := r.count(MaxGroups, 9)
	s.Groups = make(map[string]*Group, n)
	prev := ""
	for i := 0; i < n && r.err == nil; i++ {
		g := r.group()
		if i > 0 && g.Name <= prev {
			r.fail("groups not in ascending name order")
		}
		prev = g.Name
		s.Groups[g.Name] = g
	}
	if na := r.count(MaxAudit, 5); na > 0 {
		s.Audit = make([]Audit, 0, na)
		for i := 0; i < na && r.err == nil; i++ {
			var a Audit
			a.Group = r.string()
			a.Epoch = r.uint32()
			a.Master = r.varint()
			a.Reason = r.string()
			a.Unclean = r.bool()
			s.Audit = append(s.Audit, a)
		}
	}
	if err := r.end(); err != nil {
		return nil, err
	}
	if err := s.Check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return s, nil
}

func sortedNames(groups map[string]*Group) []string {
	names := make([]string, 0, len(groups))
	for name := range groups {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendIDs(b []byte, ids []int64) []byte {
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = binary.AppendVarint(b, id)
	}
	return b
}

func appendReplica(b []byte, r Replica) []byte {
	b = binary.AppendVarint(b, r.ID)
	b = appendString(b, r.Addr)
	b = appendString(b, r.HAAddr)
	b = appendString(b, r.GRPCAddr)
	return binary.AppendUvarint(b, r.Incarnation)
}

func appendGroup(b []byte, g *Group) []byte {
	b = appendString(b, g.Cluster)
	b = appendString(b, g.Name)
	b = binary.AppendVarint(b, g.Master)
	b = binary.AppendUvarint(b, uint64(g.Epoch))
	b = appendIDs(b, g.ISR)
	b = binary.AppendUvarint(b, g.ISRVersion)
	b = binary.AppendUvarint(b, uint64(len(g.Replicas)))
	for _, r := range g.Replicas {
		b = appendReplica(b, r)
	}
	b = binary.AppendVarint(b, g.NextID)
	return binary.AppendVarint(b, g.TransferTo)
}

// Encoded sizes, for the snapshot bound Apply keeps.
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func varintLen(v int64) int {
	u := uint64(v) << 1
	if v < 0 {
		u = ^u
	}
	return uvarintLen(u)
}

func stringLen(s string) int { return uvarintLen(uint64(len(s))) + len(s) }

func idsLen(ids []int64) int {
	n := uvarintLen(uint64(len(ids)))
	for _, id := range ids {
		n += varintLen(id)
	}
	return n
}

func groupLen(g *Group) int {
	n := stringLen(g.Cluster) + stringLen(g.Name) + varintLen(g.Master) + uvarintLen(uint64(g.Epoch)) +
		idsLen(g.ISR) + uvarintLen(g.ISRVersion) + uvarintLen(uint64(len(g.Replicas))) +
		varintLen(g.NextID) + varintLen(g.TransferTo)
	for _, r := range g.Replicas {
		n += varintLen(r.ID) + stringLen(r.Addr) + stringLen(r.HAAddr) + stringLen(r.GRPCAddr) + uvarintLen(r.Incarnation)
	}
	return n
}

// Worst cases of one group and of everything but the groups, within the
// string and count bounds.
const (
	maxStringLen   = 2 + MaxStringBytes
	maxReplicaLen  = 10 + 3*maxStringLen + 10
	maxGroupLen    = 2*maxStringLen + 10 + 5 + (1 + MaxReplicas*10) + 10 + 1 + MaxReplicas*maxReplicaLen + 10 + 10
	maxAuditLen    = maxStringLen + 5 + 10 + maxStringLen + 1
	maxFixedLen    = len(snapshotMagic) + 1 + 10 + 3 + 1 + MaxAudit*maxAuditLen
	safeGroupCount = (MaxSnapshotBytes - maxFixedLen) / maxGroupLen
)

// snapshotSize is len(s.Snapshot()).
func (s *State) snapshotSize() int {
	n := len(snapshotMagic) + 1 + uvarintLen(s.NextIncarnation) + uvarintLen(uint64(len(s.Groups)))
	for _, g := range s.Groups {
		n += groupLen(g)
	}
	n += uvarintLen(uint64(len(s.Audit)))
	for _, a := range s.Audit {
		n += stringLen(a.Group) + uvarintLen(uint64(a.Epoch)) + varintLen(a.Master) + stringLen(a.Reason) + 1
	}
	return n
}

// groupBound bounds the encoding of g after any command but a Register of
// it: every scalar at its widest, every replica in the in-sync set.
func groupBound(g *Group) int {
	n := stringLen(g.Cluster) + stringLen(g.Name) + 10 + 5 + 1 + 10 + 1 + 10 + 10
	for _, r := range g.Replicas {
		n += 10 + varintLen(r.ID) + stringLen(r.Addr) + stringLen(r.HAAddr) + stringLen(r.GRPCAddr) + uvarintLen(r.Incarnation)
	}
	return n
}

// checkSize refuses a Register that would put g into s if the snapshot
// could then exceed MaxSnapshotBytes after any later commands that are not
// Registers (those check again): the groups at their widest (groupBound)
// and a full audit trail. Below safeGroupCount groups no state can, so the
// sum (linear in the state) runs only for larger states.
func (s *State) checkSize(g *Group) error {
	groups := len(s.Groups)
	if _, ok := s.Groups[g.Name]; !ok {
		groups++
	}
	if groups <= safeGroupCount {
		return nil
	}
	n := maxFixedLen + groupBound(g)
	for name, sg := range s.Groups {
		if name != g.Name {
			n += groupBound(sg)
		}
	}
	if n > MaxSnapshotBytes {
		return fmt.Errorf("%w: the state could encode to %d bytes, more than %d", ErrInvalid, n, MaxSnapshotBytes)
	}
	return nil
}

// reader decodes the layout; the first error sticks and later reads return
// zero values.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
}

func (r *reader) end() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d trailing bytes", len(r.b))
	}
	return r.err
}

func (r *reader) byte() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.fail("truncated")
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) bool() bool {
	switch v := r.byte(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		r.fail("boolean byte %d", v)
		return false
	}
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("truncated or overflowing varint")
		return 0
	}
	if n != uvarintLen(v) {
		r.fail("overlong varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("truncated or overflowing varint")
		return 0
	}
	if n != varintLen(v) {
		r.fail("overlong varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) uint32() uint32 {
	v := r.uvarint()
	if v > math.MaxUint32 {
		r.fail("epoch %d beyond 32 bits", v)
		return 0
	}
	return uint32(v)
}

// count reads an element count of at most limit elements of at least
// minBytes bytes each (so a count the rest of the input cannot hold is
// refused before anything is allocated).
func (r *reader) count(limit, minBytes int) int {
	v := r.uvarint()
	if r.err != nil {
		return 0
	}
	if v > uint64(limit) {
		r.fail("a count of %d, more than %d", v, limit)
		return 0
	}
	if v*uint64(minBytes) > uint64(len(r.b)) {
		r.fail("a count of %d in %d bytes", v, len(r.b))
		return 0
	}
	return int(v)
}

func (r *reader) string() string {
	n := r.count(MaxStringBytes, 1)
	if r.err != nil || n == 0 {
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *reader) ids() []int64 {
	n := r.count(MaxReplicas, 1)
	if n == 0 {
		return nil
	}
	ids := make([]int64, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		ids = append(ids, r.varint())
	}
	return ids
}

func (r *reader) replica() Replica {
	var rep Replica
	rep.ID = r.varint()
	rep.Addr = r.string()
	rep.HAAddr = r.string()
	rep.GRPCAddr = r.string()
	rep.Incarnation = r.uvarint()
	return rep
}

func (r *reader) group() *Group {
	g := &Group{}
	g.Cluster = r.string()
	g.Name = r.string()
	g.Master = r.varint()
	g.Epoch = r.uint32()
	g.ISR = r.ids()
	g.ISRVersion = r.uvarint()
	if n := r.count(MaxReplicas, 5); n > 0 {
		g.Replicas = make([]Replica, 0, n)
		for i := 0; i < n && r.err == nil; i++ {
			g.Replicas = append(g.Replicas, r.replica())
		}
	}
	g.NextID = r.varint()
	g.TransferTo = r.varint()
	return g
}
