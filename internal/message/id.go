package message

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
)

// ErrBadMessageID is returned by ParseOffsetID.
var ErrBadMessageID = errors.New("message: malformed offset message id")

// OffsetID returns the broker-made message id of a stored record: the store
// host address and port and the commit-log offset, hex-encoded in upper case
// (32 characters for IPv4, 56 for IPv6).
func OffsetID(storeHost netip.AddrPort, physOffset int64) string {
	var b [28]byte
	n := putHost(b[:], storeHost)
	binary.BigEndian.PutUint64(b[n:], uint64(physOffset))
	const digits = "0123456789ABCDEF"
	var out [2 * len(b)]byte
	for i, c := range b[:n+8] {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&0xF]
	}
	return string(out[:2*(n+8)])
}

// ParseOffsetID decodes an OffsetID.
func ParseOffsetID(id string) (netip.AddrPort, int64, error) {
	var v6 bool
	switch len(id) {
	case 32:
	case 56:
		v6 = true
	default:
		return netip.AddrPort{}, 0, fmt.Errorf("%w: %q has %d characters, want 32 or 56", ErrBadMessageID, id, len(id))
	}
	b, err := hex.DecodeString(id)
	if err != nil {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: %q: %v", ErrBadMessageID, id, err)
	}
	hl := hostLenFlag(v6)
	if port := binary.BigEndian.Uint32(b[hl-4:]); port > 65535 {
		return netip.AddrPort{}, 0, fmt.Errorf("%w: %q: port %d", ErrBadMessageID, id, port)
	}
	return getHost(b, v6), int64(binary.BigEndian.Uint64(b[hl:])), nil
}
