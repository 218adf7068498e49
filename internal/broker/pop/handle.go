package pop

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"time"
)

// Handle is a decoded receipt handle: which delivery of which message it
// acknowledges. See the package doc for its bytes.
type Handle struct {
	QueueID int32
	Offset  int64 // queue offset of the message
	Gen     uint64
	Attempt int32
	// Until is the invisible time the delivery was given, unix ms.
	Until int64
	// GroupHash and TopicHash are NameHash of the group and topic the
	// handle was issued to.
	GroupHash, TopicHash uint32
}

const (
	handleVersion = 1
	handleBytes   = 45
)

var (
	handleEnc  = base64.RawURLEncoding
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// NameHash is the 32-bit FNV-1a hash of a group or topic name a handle
// carries.
func NameHash(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return h.Sum32()
}

// EncodeHandle returns h as the text a client sends back (60 characters of
// the URL-safe base64 alphabet).
func EncodeHandle(h Handle) string {
	var b [handleBytes]byte
	b[0] = handleVersion
	binary.BigEndian.PutUint32(b[1:], uint32(h.QueueID))
	binary.BigEndian.PutUint64(b[5:], uint64(h.Offset))
	binary.BigEndian.PutUint64(b[13:], h.Gen)
	binary.BigEndian.PutUint32(b[21:], uint32(h.Attempt))
	binary.BigEndian.PutUint64(b[25:], uint64(h.Until))
	binary.BigEndian.PutUint32(b[33:], h.GroupHash)
	binary.BigEndian.PutUint32(b[37:], h.TopicHash)
	binary.BigEndian.PutUint32(b[41:], crc32.Checksum(b[:41], castagnoli))
	return handleEnc.EncodeToString(b[:])
}

// DecodeHandle parses a receipt handle. Anything that is not a handle this
// package encoded (wrong length, alphabet, version or checksum, a negative
// queue id or offset, a zero generation or attempt) gives an error wrapping
// ErrInvalidHandle. It never panics.
func DecodeHandle(s string) (Handle, error) {
	if len(s) != handleEnc.EncodedLen(handleBytes) {
		return Handle{}, fmt.Errorf("%w: %d characters, a handle has %d", ErrInvalidHandle, len(s), handleEnc.EncodedLen(handleBytes))
	}
	var b [handleBytes]byte
	n, err := handleEnc.Decode(b[:], []byte(s))
	if err != nil || n != handleBytes {
		return Handle{}, fmt.Errorf("%w: not base64url", ErrInvalidHandle)
	}
	if b[0] != handleVersion {
		return Handle{}, fmt.Errorf("%w: version %d", ErrInvalidHandle, b[0])
	}
	if crc32.Checksum(b[:41], castagnoli) != binary.BigEndian.Uint32(b[41:]) {
		return Handle{}, fmt.Errorf("%w: checksum mismatch", ErrInvalidHandle)
	}
	h := Handle{
		QueueID:   int32(binary.BigEndian.Uint32(b[1:])),
		Offset:    int64(binary.BigEndian.Uint64(b[5:])),
		Gen:       binary.BigEndian.Uint64(b[13:]),
		Attempt:   int32(binary.BigEndian.Uint32(b[21:])),
		Until:     int64(binary.BigEndian.Uint64(b[25:])),
		GroupHash: binary.BigEndian.Uint32(b[33:]),
		TopicHash: binary.BigEndian.Uint32(b[37:]),
	}
	if h.QueueID < 0 || h.Offset < 0 || h.Gen == 0 || h.Attempt < 1 {
		return Handle{}, fmt.Errorf("%w: fields out of range", ErrInvalidHandle)
	}
	return h, nil
}

// UntilTime is h.Until as a time.
func (h Handle) UntilTime() time.Time { return time.UnixMilli(h.Until) }
