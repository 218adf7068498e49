package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Version is the payload layout this package writes and reads.
const Version = 1

// The kinds of payload, the byte after the version.
const (
	KindFetch     = 1
	KindFetchResp = 2
	KindAck       = 3
)

// Bounds. A decoder refuses anything beyond them; an encoder panics on a
// Group or Data beyond them (the caller's broken invariant: see Validate)
// and cuts a Message to MaxMessage.
const (
	// MaxFrame is the largest payload a frame may carry.
	MaxFrame = 32 << 20
	// MaxGroup is the longest broker-group name.
	MaxGroup = 255
	// MaxMessage is the longest error message of a FetchResp.
	MaxMessage = 1024
	// MaxData is the most log bytes one FetchResp carries, so that the
	// whole response fits in a frame. A master caps a Fetch's MaxBytes at it.
	MaxData = MaxFrame - 4096
)

// Fixed sizes of the layouts (doc.go).
const (
	fetchFixed     = 2 + 2 + 8 + 4 + 8 + 8 + 4 + 4 + 8
	fetchRespFixed = 2 + 2 + 4 + 5*8 + 2 + 4
	// AckLen is the size of an Ack payload.
	AckLen = 2 + 8 + 8
)

var (
	// ErrMalformed is wrapped by every decode error about a payload's
	// content; the message names the field.
	ErrMalformed = errors.New("wire: malformed payload")
	// ErrVersion is wrapped by decode errors for a payload of another
	// layout version than Version.
	ErrVersion = errors.New("wire: unsupported payload version")
)

// Fetch is a slave's request for the master's log from Offset on. It also
// acknowledges: Offset is the slave's LEO ("written up to"), Durable its
// fsynced end.
type Fetch struct {
	Group     string        // broker name, ≤ MaxGroup bytes
	ReplicaID int64         // the slave's broker id (≥ 1)
	Epoch     uint32        // the master epoch the slave knows (0 on the first fetch)
	Offset    int64         // the slave's LEO: where to read from; also acks "written up to"
	Durable   int64         // the slave's durable end: acks durability
	LastEpoch uint32        // epoch of the slave's last record (0 when empty)
	MaxBytes  int32         // the most Data wanted (the master caps it at MaxData)
	MaxWait   time.Duration // long poll: how long the master may hold the fetch for new bytes
}

// Ack is a slave's acknowledgement between fetches: its written end
// (Offset) and durable end, sent as soon as its fsync has made more bytes
// durable, so that the commit point does not wait for the next fetch. The
// master answers nothing to it; the rules of a Fetch's acks apply.
type Ack struct {
	Offset  int64 // the slave's LEO ("written up to")
	Durable int64 // the slave's durable end
}

// Validate reports the first field of a out of bounds, as the decoder does.
func (a Ack) Validate() error {
	switch {
	case a.Offset < 0:
		return fieldErr("ack", "offset", "negative (%d)", a.Offset)
	case a.Durable < 0:
		return fieldErr("ack", "durable", "negative (%d)", a.Durable)
	}
	return nil
}

// AppendAck appends the payload of a to dst. a must be valid (Validate):
// an invalid a panics, as it is the caller's broken invariant.
func AppendAck(dst []byte, a Ack) []byte {
	if err := a.Validate(); err != nil {
		panic("wire: AppendAck of an invalid ack: " + err.Error())
	}
	dst = append(dst, Version, KindAck)
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.Offset))
	return binary.BigEndian.AppendUint64(dst, uint64(a.Durable))
}

// DecodeAck decodes an Ack payload; it allocates nothing.
func DecodeAck(b []byte) (Ack, error) {
	d := decoder{b: b, msg: "ack"}
	var a Ack
	d.header(KindAck)
	a.Offset = d.i64("offset")
	a.Durable = d.i64("durable")
	if err := d.end(); err != nil {
		return Ack{}, err
	}
	if err := a.Validate(); err != nil {
		return Ack{}, err
	}
	return a, nil
}

// KindOf returns the kind byte of a payload of this Version (KindFetch,
// KindFetchResp, KindAck, KindAuth or an unknown value the caller refuses), so that a
// receiver that takes several kinds picks the decoder; a payload shorter
// than two bytes or of another version is an error.
func KindOf(b []byte) (byte, error) {
	switch {
	case len(b) < 2:
		return 0, fmt.Errorf("%w: payload of %d bytes has no kind", ErrMalformed, len(b))
	case b[0] != Version:
		return 0, fmt.Errorf("%w: payload version %d (this broker reads %d)", ErrVersion, b[0], Version)
	}
	return b[1], nil
}

// Code is the outcome of a Fetch.
type Code uint16

// The codes of a FetchResp. A decoder accepts any value (a newer master may
// send codes this one does not know); Code.String names the known ones.
const (
	// OK: Data holds the log from Base (possibly nothing, after MaxWait).
	OK Code = iota
	// NotMaster: the peer is not (or no longer) the group's master; find the
	// master again.
	NotMaster
	// FencedEpoch: the slave's Epoch is older than the master's; it learns
	// the new epoch from the response and fetches again.
	FencedEpoch
	// OffsetOutOfRange: Offset is below the master's LogStart or above its
	// LEO; a slave below retention starts over from LogStart.
	OffsetOutOfRange
	// NotPrefix: the slave's log cannot be a copy of the master's (bytes
	// but no epoch); it stops replicating and says why. (A master before
	// Diverging also sent it for a diverging log.)
	NotPrefix
	// UnknownReplica: the master does not accept this ReplicaID.
	UnknownReplica
	// NewerEpoch: the slave knows a newer epoch than the master's; the
	// master is stale.
	NewerEpoch
	// WrongGroup: the fetch names another broker group.
	WrongGroup
	// InvalidRequest: the fetch's fields contradict each other (for example
	// Durable above Offset).
	InvalidRequest
	// Unavailable: the master cannot serve now (stopping, storage error);
	// retry after a back-off.
	Unavailable
	// Diverging: the slave's log is not a prefix of the master's (its last
	// epoch is unknown to the master, or ends earlier there): Epoch is the
	// largest epoch the master knows that is ≤ the fetch's LastEpoch (0:
	// none), EpochStart its start on the master, and Base = min(the end of
	// Epoch on the master, the fetch's Offset), where the slave must cut its
	// log — lower still where its own history ends Epoch earlier — before it
	// fetches again (epoch.DivergencePoint, replication.md §2.7).
	Diverging
	// Unauthorized: the master requires credentials (--auth) and the
	// connection's first frame was no valid Auth of a super user: Message
	// names the user and what is missing. The slave retries after a
	// back-off (an operator may fix the users meanwhile).
	Unauthorized
)

var codeNames = [...]string{
	OK:               "OK",
	NotMaster:        "NotMaster",
	FencedEpoch:      "FencedEpoch",
	OffsetOutOfRange: "OffsetOutOfRange",
	NotPrefix:        "NotPrefix",
	UnknownReplica:   "UnknownReplica",
	NewerEpoch:       "NewerEpoch",
	WrongGroup:       "WrongGroup",
	InvalidRequest:   "InvalidRequest",
	Unavailable:      "Unavailable",
	Diverging:        "Diverging",
	Unauthorized:     "Unauthorized",
}

func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("Code(%d)", uint16(c))
}

// FetchResp is the master's answer to a Fetch.
type FetchResp struct {
	Err        Code   // OK, or why there is no data
	Epoch      uint32 // the master's epoch
	EpochStart int64  // start offset of that epoch
	HW         int64  // the commit point
	LEO        int64  // the master's LEO
	LogStart   int64  // the master's first retained byte
	Base       int64  // offset of Data[0]
	// Data is raw commit-log bytes from Base, never across an epoch
	// boundary, ≤ the fetch's MaxBytes and ≤ MaxData. DecodeFetchResp
	// returns a Data that aliases its input: copy it, or append it to the
	// log, before the input buffer is reused.
	Data    []byte
	Message string // for errors: what happened and what to do (for the log), ≤ MaxMessage
}

// Validate reports the first field of f out of bounds, as the decoder does.
func (f Fetch) Validate() error {
	switch {
	case len(f.Group) > MaxGroup:
		return fieldErr("fetch", "group", "length %d above %d", len(f.Group), MaxGroup)
	case f.ReplicaID < 1:
		return fieldErr("fetch", "replica id", "%d below 1", f.ReplicaID)
	case f.Offset < 0:
		return fieldErr("fetch", "offset", "negative (%d)", f.Offset)
	case f.Durable < 0:
		return fieldErr("fetch", "durable", "negative (%d)", f.Durable)
	case f.MaxBytes < 0:
		return fieldErr("fetch", "max bytes", "negative (%d)", f.MaxBytes)
	case f.MaxWait < 0:
		return fieldErr("fetch", "max wait", "negative (%d ns)", int64(f.MaxWait))
	}
	return nil
}

// Validate reports the first field of r out of bounds, as the decoder does.
func (r FetchResp) Validate() error {
	for _, c := range [...]struct {
		name string
		v    int64
	}{{"epoch start", r.EpochStart}, {"hw", r.HW}, {"leo", r.LEO}, {"log start", r.LogStart}, {"base", r.Base}} {
		if c.v < 0 {
			return fieldErr("fetch response", c.name, "negative (%d)", c.v)
		}
	}
	switch {
	case len(r.Message) > MaxMessage:
		return fieldErr("fetch response", "message", "length %d above %d", len(r.Message), MaxMessage)
	case len(r.Data) > MaxData:
		return fieldErr("fetch response", "data", "length %d above %d", len(r.Data), MaxData)
	case r.Base > 1<<63-1-int64(len(r.Data)):
		return fieldErr("fetch response", "data", "base %d + length %d overflows", r.Base, len(r.Data))
	}
	return nil
}

func fieldErr(msg, field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s: %s", ErrMalformed, msg, field, fmt.Sprintf(format, args...))
}

// AppendFetch appends the payload of f to dst. f must be valid (Validate):
// an invalid f panics, as it is the caller's broken invariant.
func AppendFetch(dst []byte, f Fetch) []byte {
	if err := f.Validate(); err != nil {
		panic("wire: AppendFetch of an invalid fetch: " + err.Error())
	}
	dst = append(dst, Version, KindFetch)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(f.Group)))
	dst = append(dst, f.Group...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(f.ReplicaID))
	dst = binary.BigEndian.AppendUint32(dst, f.Epoch)
	dst = binary.BigEndian.AppendUint64(dst, uint64(f.Offset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(f.Durable))
	dst = binary.BigEndian.AppendUint32(dst, f.LastEpoch)
	dst = binary.BigEndian.AppendUint32(dst, uint32(f.MaxBytes))
	return binary.BigEndian.AppendUint64(dst, uint64(f.MaxWait))
}

// DecodeFetch decodes a Fetch payload. Its only allocation is the Group
// string.
func DecodeFetch(b []byte) (Fetch, error) {
	d := decoder{b: b, msg: "fetch"}
	var f Fetch
	d.header(KindFetch)
	f.Group = string(d.bytes("group", "group length", MaxGroup))
	f.ReplicaID = d.i64("replica id")
	f.Epoch = d.u32("epoch")
	f.Offset = d.i64("offset")
	f.Durable = d.i64("durable")
	f.LastEpoch = d.u32("last epoch")
	f.MaxBytes = int32(d.u32("max bytes"))
	f.MaxWait = time.Duration(d.i64("max wait"))
	if err := d.end(); err != nil {
		return Fetch{}, err
	}
	if err := f.Validate(); err != nil {
		return Fetch{}, err
	}
	return f, nil
}

// AppendFetchResp appends the payload of r to dst, Data included. A Message
// longer than MaxMessage is cut to MaxMessage bytes; any other field out of
// bounds (Validate) panics, as it is the caller's broken invariant. With a
// dst of enough capacity it allocates nothing.
func AppendFetchResp(dst []byte, r FetchResp) []byte {
	dst = AppendFetchRespHeader(dst, r)
	return append(dst, r.Data...)
}

// AppendFetchRespHeader appends the payload of r without the bytes of Data
// (their length is included): the payload is the result followed by
// r.Data, which the master may write separately (WriteFrameParts) to avoid
// copying the log bytes. The rules of AppendFetchResp apply.
func AppendFetchRespHeader(dst []byte, r FetchResp) []byte {
	r.Message = cutMessage(r.Message)
	if err := r.Validate(); err != nil {
		panic("wire: AppendFetchResp of an invalid response: " + err.Error())
	}
	dst = append(dst, Version, KindFetchResp)
	dst = binary.BigEndian.AppendUint16(dst, uint16(r.Err))
	dst = binary.BigEndian.AppendUint32(dst, r.Epoch)
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.EpochStart))
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.HW))
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.LEO))
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.LogStart))
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.Base))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(r.Message)))
	dst = append(dst, r.Message...)
	return binary.BigEndian.AppendUint32(dst, uint32(len(r.Data)))
}

// cutMessage cuts s to MaxMessage bytes, at a UTF-8 character boundary when
// s is UTF-8.
func cutMessage(s string) string {
	if len(s) <= MaxMessage {
		return s
	}
	n := MaxMessage
	for n > MaxMessage-4 && n > 0 && s[n]&0xC0 == 0x80 { // s[n] continues a character
		n--
	}
	return s[:n]
}

// DecodeFetchResp decodes a FetchResp payload. Data aliases b (see
// FetchResp.Data); the only allocation is a non-empty Message.
func DecodeFetchResp(b []byte) (FetchResp, error) {
	d := decoder{b: b, msg: "fetch response"}
	var r FetchResp
	d.header(KindFetchResp)
	r.Err = Code(d.u16("err"))
	r.Epoch = d.u32("epoch")
	r.EpochStart = d.i64("epoch start")
	r.HW = d.i64("hw")
	r.LEO = d.i64("leo")
	r.LogStart = d.i64("log start")
	r.Base = d.i64("base")
	if m := d.bytes("message", "message length", MaxMessage); len(m) > 0 {
		r.Message = string(m)
	}
	if data := d.bytes32("data", "data length", MaxData); len(data) > 0 {
		r.Data = data
	}
	if err := d.end(); err != nil {
		return FetchResp{}, err
	}
	if err := r.Validate(); err != nil {
		return FetchResp{}, err
	}
	return r, nil
}

// decoder reads fields off b; the first failure sticks and names its field.
type decoder struct {
	b   []byte
	off int
	msg string
	err error
}

func (d *decoder) fail(field, format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s: %s at byte %d: %s", ErrMalformed, d.msg, field, d.off, fmt.Sprintf(format, args...))
	}
}

// take returns the next n bytes, or nil (and fails) when b is shorter.
func (d *decoder) take(field string, n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b)-d.off < n {
		d.fail(field, "needs %d bytes, %d left", n, len(d.b)-d.off)
		return nil
	}
	p := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return p
}

func (d *decoder) header(kind byte) {
	p := d.take("version", 1)
	if p == nil {
		return
	}
	if p[0] != Version {
		d.err = fmt.Errorf("%w: %s: version %d (this broker reads %d)", ErrVersion, d.msg, p[0], Version)
		return
	}
	p = d.take("kind", 1)
	if p != nil && p[0] != kind {
		d.off--
		d.fail("kind", "%d, want %d", p[0], kind)
	}
}

func (d *decoder) u16(field string) uint16 {
	if p := d.take(field, 2); p != nil {
		return binary.BigEndian.Uint16(p)
	}
	return 0
}

func (d *decoder) u32(field string) uint32 {
	if p := d.take(field, 4); p != nil {
		return binary.BigEndian.Uint32(p)
	}
	return 0
}

func (d *decoder) i64(field string) int64 {
	if p := d.take(field, 8); p != nil {
		return int64(binary.BigEndian.Uint64(p))
	}
	return 0
}

// bytes reads a uint16 length (field lenField) and that many bytes, at
// most limit. (The two names are constants: building one from the other
// would allocate on every call.)
func (d *decoder) bytes(field, lenField string, limit int) []byte {
	n := d.u16(lenField)
	if d.err == nil && int(n) > limit {
		d.off -= 2
		d.fail(field, "length %d above %d", n, limit)
		return nil
	}
	return d.take(field, int(n))
}

// bytes32 reads a uint32 length (field lenField) and that many bytes, at
// most limit.
func (d *decoder) bytes32(field, lenField string, limit int) []byte {
	n := d.u32(lenField)
	if d.err == nil && uint64(n) > uint64(limit) {
		d.off -= 4
		d.fail(field, "length %d above %d", n, limit)
		return nil
	}
	return d.take(field, int(n))
}

func (d *decoder) end() error {
	if d.err == nil && d.off != len(d.b) {
		d.fail("end", "%d trailing bytes", len(d.b)-d.off)
	}
	return d.err
}
