package message

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"net/netip"
)

// Magic numbers of the first 8 bytes of a record.
const (
	// Magic marks a message record (RocketMQ V1 layout).
	Magic uint32 = 0xDAA320A7
	// BlankMagic marks the filler that pads the end of a commit-log segment
	// when the next record does not fit in it.
	BlankMagic uint32 = 0xCBD43194
)

// SYSFLAG bits.
const (
	SysFlagCompressed    int32 = 0x1
	SysFlagMultiTags     int32 = 0x2
	SysFlagTxPrepared    int32 = 0x4
	SysFlagTxCommit      int32 = 0x8
	SysFlagTxRollback    int32 = 0xC
	SysFlagTxMask        int32 = 0xC
	SysFlagBornHostIPv6  int32 = 0x10
	SysFlagStoreHostIPv6 int32 = 0x20
	sysFlagHostBits            = SysFlagBornHostIPv6 | SysFlagStoreHostIPv6
)

// Limits of the layout.
const (
	MaxTopicLen      = 127   // TOPICLENGTH is one byte; Java clients read it as signed
	MaxPropertiesLen = 32767 // PROPERTIESLENGTH is a signed int16
	// MinRecordLen is the length of a record with IPv4 hosts and empty body,
	// topic and properties.
	MinRecordLen = 91
)

// Errors returned by Check and Decode.
var (
	// ErrShort means the input ends before the record does: a valid prefix
	// of a record, or a torn one.
	ErrShort = errors.New("message: record truncated")
	// ErrCorrupt means the bytes are not a record.
	ErrCorrupt = errors.New("message: corrupt record")
	// ErrBlank means the bytes are segment-end filler, not a record.
	ErrBlank = errors.New("message: blank filler")
)

// Message is one message as stored. The broker fills the fields from the
// send request; the commit log assigns QueueOffset, PhysicalOffset and
// StoreTimestamp when it appends.
type Message struct {
	Topic                     string
	QueueID                   int32
	Flag                      int32
	QueueOffset               int64
	PhysicalOffset            int64
	SysFlag                   int32 // host bits are set by the encoder from the addresses
	BornTimestamp             int64 // ms
	BornHost                  netip.AddrPort
	StoreTimestamp            int64 // ms
	StoreHost                 netip.AddrPort
	ReconsumeTimes            int32
	PreparedTransactionOffset int64
	Body                      []byte
	// Properties in their encoded form (key 0x01 value 0x02 ...), as they
	// arrive in a send request; see Property, SetProperty.
	Properties string
	// BodyCRC is the stored body checksum; EncodeTo computes it when zero.
	BodyCRC uint32
}

func hostLen(a netip.AddrPort) int {
	if a.Addr().Is6() && !a.Addr().Is4In6() {
		return 20
	}
	return 8
}

// EncodedLen returns the length of the record EncodeTo writes.
func (m *Message) EncodedLen() int {
	return 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + hostLen(m.BornHost) + 8 + hostLen(m.StoreHost) + 4 + 8 +
		4 + len(m.Body) + 1 + len(m.Topic) + 2 + len(m.Properties)
}

// Validate checks that the message can be encoded as a record that Check
// accepts: a topic of 1..MaxTopicLen legal characters (ValidTopic),
// properties of at most MaxPropertiesLen bytes that, when non-empty, end with
// PropertySeparator, and a record length that fits TOTALSIZE. Check rejects
// records that break these rules, so a record written without Validate could
// be taken for a torn one when the commit log is recovered.
func (m *Message) Validate() error {
	if len(m.Topic) == 0 || len(m.Topic) > MaxTopicLen {
		return fmt.Errorf("message: topic length %d outside 1..%d", len(m.Topic), MaxTopicLen)
	}
	if !ValidTopic(m.Topic) {
		return fmt.Errorf("message: topic %q has characters outside [%%|a-zA-Z0-9_-]", m.Topic)
	}
	if len(m.Properties) > MaxPropertiesLen {
		return fmt.Errorf("message: properties are %d bytes, the limit is %d", len(m.Properties), MaxPropertiesLen)
	}
	if n := len(m.Properties); n > 0 && m.Properties[n-1] != PropertySeparator {
		return fmt.Errorf("message: properties do not end with the separator 0x%02X", PropertySeparator)
	}
	if n := m.EncodedLen(); n > math.MaxInt32 {
		return fmt.Errorf("message: record would be %d bytes, the limit is %d", n, math.MaxInt32)
	}
	return nil
}

// BodyChecksum returns the stored form of the body's CRC.
func BodyChecksum(body []byte) uint32 { return crc32.ChecksumIEEE(body) & 0x7FFFFFFF }

// EncodeTo writes the record into dst, which must have at least EncodedLen
// bytes, and returns the number of bytes written. It does not allocate. The
// caller must have checked Validate.
func (m *Message) EncodeTo(dst []byte) int {
	n := m.EncodedLen()
	b := dst[:n]
	crc := m.BodyCRC
	if crc == 0 && len(m.Body) > 0 {
		crc = BodyChecksum(m.Body)
	}
	sys := m.SysFlag &^ sysFlagHostBits
	if hostLen(m.BornHost) == 20 {
		sys |= SysFlagBornHostIPv6
	}
	if hostLen(m.StoreHost) == 20 {
		sys |= SysFlagStoreHostIPv6
	}
	be := binary.BigEndian
	be.PutUint32(b[0:], uint32(n))
	be.PutUint32(b[4:], Magic)
	be.PutUint32(b[8:], crc)
	be.PutUint32(b[12:], uint32(m.QueueID))
	be.PutUint32(b[16:], uint32(m.Flag))
	be.PutUint64(b[20:], uint64(m.QueueOffset))
	be.PutUint64(b[28:], uint64(m.PhysicalOffset))
	be.PutUint32(b[36:], uint32(sys))
	be.PutUint64(b[40:], uint64(m.BornTimestamp))
	p := 48 + putHost(b[48:], m.BornHost)
	be.PutUint64(b[p:], uint64(m.StoreTimestamp))
	p += 8
	p += putHost(b[p:], m.StoreHost)
	be.PutUint32(b[p:], uint32(m.ReconsumeTimes))
	be.PutUint64(b[p+4:], uint64(m.PreparedTransactionOffset))
	p += 12
	be.PutUint32(b[p:], uint32(len(m.Body)))
	p += 4
	p += copy(b[p:], m.Body)
	b[p] = byte(len(m.Topic))
	p++
	p += copy(b[p:], m.Topic)
	be.PutUint16(b[p:], uint16(len(m.Properties)))
	p += 2
	copy(b[p:], m.Properties)
	return n
}

// Encode returns the record as a new slice.
func (m *Message) Encode() []byte {
	b := make([]byte, m.EncodedLen())
	m.EncodeTo(b)
	return b
}

func putHost(b []byte, a netip.AddrPort) int {
	ip := a.Addr()
	if ip.Is4In6() {
		ip = ip.Unmap()
	}
	var n int
	switch {
	case ip.Is6():
		s := ip.As16()
		copy(b, s[:])
		n = 16
	case ip.Is4():
		s := ip.As4()
		copy(b, s[:])
		n = 4
	default: // no address: 0.0.0.0
		clear(b[:4])
		n = 4
	}
	binary.BigEndian.PutUint32(b[n:], uint32(a.Port()))
	return n + 4
}

func getHost(b []byte, v6 bool) netip.AddrPort {
	if v6 {
		ip := netip.AddrFrom16([16]byte(b[:16]))
		return netip.AddrPortFrom(ip, uint16(binary.BigEndian.Uint32(b[16:])))
	}
	ip := netip.AddrFrom4([4]byte(b[:4]))
	return netip.AddrPortFrom(ip, uint16(binary.BigEndian.Uint32(b[4:])))
}

// Check validates the record at the start of b and returns its length. It
// returns ErrShort when b ends inside the record (so a longer read may
// succeed), ErrBlank when b starts with segment-end filler (its length is
// returned too), and ErrCorrupt otherwise. It reads only the bytes of the
// record, so bytes after it never change the result, and every strict prefix
// of a record it accepts gives ErrShort.
//
// Beyond lengths and magic it checks the body CRC, that the topic is 1..127
// legal characters, that non-empty properties end with the pair separator
// and that the host fields are as EncodeTo writes them (ports ≤ 65535, no
// IPv4-mapped address under an IPv6 flag), so that a record torn by a crash
// and padded with zeros is not taken for a whole one, and so that Decode
// followed by Encode reproduces an accepted record byte for byte.
func Check(b []byte) (int, error) {
	if len(b) < 8 {
		return 0, ErrShort
	}
	be := binary.BigEndian
	total := int64(int32(be.Uint32(b)))
	magic := be.Uint32(b[4:])
	if magic == BlankMagic {
		if total < 8 {
			return 0, ErrCorrupt
		}
		return int(total), ErrBlank
	}
	if magic != Magic {
		return 0, ErrCorrupt
	}
	if total < MinRecordLen {
		return 0, ErrCorrupt
	}
	// Parse by field sizes, as clients do, and require the parse to end
	// exactly at TOTALSIZE. Every test before an ErrShort return looks only
	// at bytes already present, which gives the prefix property above.
	if len(b) < 40 {
		return 0, ErrShort
	}
	sys := int32(be.Uint32(b[36:]))
	bornV6 := sys&SysFlagBornHostIPv6 != 0
	storeV6 := sys&SysFlagStoreHostIPv6 != 0
	storeHostAt := int64(48) + int64(hostLenFlag(bornV6)) + 8
	p := storeHostAt + int64(hostLenFlag(storeV6)) + 12
	if p+4 > total {
		return 0, ErrCorrupt
	}
	if int64(len(b)) < p+4 {
		return 0, ErrShort
	}
	bodyLen := int64(int32(be.Uint32(b[p:])))
	if bodyLen < 0 || p+4+bodyLen+1 > total {
		return 0, ErrCorrupt
	}
	bodyAt := p + 4
	p = bodyAt + bodyLen
	if int64(len(b)) < p+1 {
		return 0, ErrShort
	}
	topicLen := int64(b[p])
	topicAt := p + 1
	p = topicAt + topicLen
	if topicLen == 0 || topicLen > MaxTopicLen || p+2 > total {
		return 0, ErrCorrupt
	}
	if int64(len(b)) < p+2 {
		return 0, ErrShort
	}
	propLen := int64(int16(be.Uint16(b[p:])))
	if propLen < 0 || p+2+propLen != total {
		return 0, ErrCorrupt
	}
	if int64(len(b)) < total {
		return 0, ErrShort
	}
	if !ValidTopic(b[topicAt:topicAt+topicLen]) ||
		(propLen > 0 && b[total-1] != PropertySeparator) ||
		!canonicalHost(b[48:], bornV6) || !canonicalHost(b[storeHostAt:], storeV6) ||
		be.Uint32(b[8:]) != BodyChecksum(b[bodyAt:bodyAt+bodyLen]) {
		return 0, ErrCorrupt
	}
	return int(total), nil
}

// canonicalHost reports whether the host field at the start of b is one
// that putHost writes: a port that fits 16 bits and, in the IPv6 form, an
// address that is not IPv4-mapped (putHost writes those in the IPv4 form).
func canonicalHost(b []byte, v6 bool) bool {
	if !v6 {
		return binary.BigEndian.Uint32(b[4:]) <= 0xFFFF
	}
	return binary.BigEndian.Uint32(b[16:]) <= 0xFFFF && !netip.AddrFrom16([16]byte(b[:16])).Is4In6()
}

func hostLenFlag(v6 bool) int {
	if v6 {
		return 20
	}
	return 8
}

// ValidTopic reports whether name uses only the characters RocketMQ allows
// in topic and group names: letters, digits, '%', '|', '_' and '-'.
func ValidTopic[T string | []byte](name T) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '%', c == '|', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// Decode checks the record at the start of b and returns it as a Message
// that shares no memory with b, with the record's length.
func Decode(b []byte) (*Message, int, error) {
	n, err := Check(b)
	if err != nil {
		return nil, n, err
	}
	r := Record(b[:n])
	m := &Message{
		Topic:                     string(r.Topic()),
		QueueID:                   r.QueueID(),
		Flag:                      r.Flag(),
		QueueOffset:               r.QueueOffset(),
		PhysicalOffset:            r.PhysicalOffset(),
		SysFlag:                   r.SysFlag(),
		BornTimestamp:             r.BornTimestamp(),
		BornHost:                  r.BornHost(),
		StoreTimestamp:            r.StoreTimestamp(),
		StoreHost:                 r.StoreHost(),
		ReconsumeTimes:            r.ReconsumeTimes(),
		PreparedTransactionOffset: r.PreparedTransactionOffset(),
		Body:                      append([]byte{}, r.Body()...),
		Properties:                string(r.Properties()),
		BodyCRC:                   r.BodyCRC(),
	}
	return m, n, nil
}

// Record is a view of one stored record that passed Check. Its accessors do
// not allocate; the slices they return alias the record.
type Record []byte

func (r Record) u32(at int) uint32 { return binary.BigEndian.Uint32(r[at:]) }
func (r Record) u64(at int) uint64 { return binary.BigEndian.Uint64(r[at:]) }

func (r Record) TotalSize() int32      { return int32(r.u32(0)) }
func (r Record) BodyCRC() uint32       { return r.u32(8) }
func (r Record) QueueID() int32        { return int32(r.u32(12)) }
func (r Record) Flag() int32           { return int32(r.u32(16)) }
func (r Record) QueueOffset() int64    { return int64(r.u64(20)) }
func (r Record) PhysicalOffset() int64 { return int64(r.u64(28)) }
func (r Record) SysFlag() int32        { return int32(r.u32(36)) }
func (r Record) BornTimestamp() int64  { return int64(r.u64(40)) }
func (r Record) BornHost() netip.AddrPort {
	return getHost(r[48:], r.SysFlag()&SysFlagBornHostIPv6 != 0)
}
func (r Record) storeTSAt() int        { return 48 + hostLenFlag(r.SysFlag()&SysFlagBornHostIPv6 != 0) }
func (r Record) StoreTimestamp() int64 { return int64(r.u64(r.storeTSAt())) }
func (r Record) StoreHost() netip.AddrPort {
	return getHost(r[r.storeTSAt()+8:], r.SysFlag()&SysFlagStoreHostIPv6 != 0)
}
func (r Record) reconsumeAt() int {
	return r.storeTSAt() + 8 + hostLenFlag(r.SysFlag()&SysFlagStoreHostIPv6 != 0)
}
func (r Record) ReconsumeTimes() int32 { return int32(r.u32(r.reconsumeAt())) }
func (r Record) PreparedTransactionOffset() int64 {
	return int64(r.u64(r.reconsumeAt() + 4))
}
func (r Record) bodyLenAt() int { return r.reconsumeAt() + 12 }
func (r Record) Body() []byte {
	at := r.bodyLenAt()
	n := int(r.u32(at))
	return r[at+4 : at+4+n]
}
func (r Record) topicAt() int { at := r.bodyLenAt(); return at + 4 + int(r.u32(at)) }
func (r Record) Topic() []byte {
	at := r.topicAt()
	return r[at+1 : at+1+int(r[at])]
}
func (r Record) Properties() []byte {
	at := r.topicAt()
	at += 1 + int(r[at])
	n := int(binary.BigEndian.Uint16(r[at:]))
	return r[at+2 : at+2+n]
}

// Property returns the value of a property of the record.
func (r Record) Property(key string) ([]byte, bool) { return lookup(r.Properties(), key) }

// PutQueueOffset overwrites QUEUEOFFSET in place.
func (r Record) PutQueueOffset(v int64) { binary.BigEndian.PutUint64(r[20:], uint64(v)) }

// PutPhysicalOffset overwrites PHYSICALOFFSET in place.
func (r Record) PutPhysicalOffset(v int64) { binary.BigEndian.PutUint64(r[28:], uint64(v)) }

// PutStoreTimestamp overwrites STORETIMESTAMP in place.
func (r Record) PutStoreTimestamp(ms int64) {
	binary.BigEndian.PutUint64(r[r.storeTSAt():], uint64(ms))
}

// EncodeBlank writes a segment-end filler of n ≥ 8 bytes into dst: TOTALSIZE,
// BlankMagic and zeros.
func EncodeBlank(dst []byte, n int) {
	binary.BigEndian.PutUint32(dst, uint32(n))
	binary.BigEndian.PutUint32(dst[4:], BlankMagic)
	clear(dst[8:n])
}
