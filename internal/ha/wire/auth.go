package wire

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/binary"
	"strconv"
)

// KindAuth is a slave's credentials, the first frame of a connection to a
// master with authentication on (doc.go).
const KindAuth = 4

// Bounds of an Auth.
const (
	// MaxAccessKey is the longest access key (user name) of an Auth.
	MaxAccessKey = 255
	// MaxSig is the longest signature of an Auth (HMAC-SHA1 is 20 bytes).
	MaxSig = 64
	// NonceLen is the size of an Auth's nonce.
	NonceLen = 16
)

// authFixed is the size of an Auth besides group, access key and signature.
const authFixed = 2 + 2 + 2 + 8 + NonceLen + 2

// Auth is a slave's proof that it holds a user's secret: Sig is
// HMAC-SHA1(secret, AuthContent(Group, TimeMs, Nonce)). The master checks
// the signature against its users (a super user is required) and that
// TimeMs is near its clock, which bounds the replay of a captured frame
// on a plaintext connection.
type Auth struct {
	Group     string         // broker name, ≤ MaxGroup bytes
	AccessKey string         // the user, 1..MaxAccessKey bytes
	TimeMs    int64          // the slave's clock, unix milliseconds, ≥ 0
	Nonce     [NonceLen]byte // random, so no two frames sign the same content
	Sig       []byte         // 1..MaxSig bytes
}

// Validate reports the first field of a out of bounds, as the decoder does.
func (a Auth) Validate() error {
	switch {
	case len(a.Group) > MaxGroup:
		return fieldErr("auth", "group", "length %d above %d", len(a.Group), MaxGroup)
	case a.AccessKey == "":
		return fieldErr("auth", "access key", "empty")
	case len(a.AccessKey) > MaxAccessKey:
		return fieldErr("auth", "access key", "length %d above %d", len(a.AccessKey), MaxAccessKey)
	case a.TimeMs < 0:
		return fieldErr("auth", "time", "negative (%d)", a.TimeMs)
	case len(a.Sig) == 0:
		return fieldErr("auth", "signature", "empty")
	case len(a.Sig) > MaxSig:
		return fieldErr("auth", "signature", "length %d above %d", len(a.Sig), MaxSig)
	}
	return nil
}

// AuthContent appends the bytes an Auth's signature covers to dst:
// "petrel-ha", NUL, the group, NUL, TimeMs in decimal, NUL, the nonce.
// The master computes it from its own group name, so a signature made for
// another group does not verify.
func AuthContent(dst []byte, group string, timeMs int64, nonce [NonceLen]byte) []byte {
	dst = append(dst, "petrel-ha\x00"...)
	dst = append(dst, group...)
	dst = append(dst, 0)
	dst = strconv.AppendInt(dst, timeMs, 10)
	dst = append(dst, 0)
	return append(dst, nonce[:]...)
}

// SignAuth returns the Auth of accessKey for group at timeMs with nonce,
// signed with secret.
func SignAuth(group, accessKey, secret string, timeMs int64, nonce [NonceLen]byte) Auth {
	m := hmac.New(sha1.New, []byte(secret))
	m.Write(AuthContent(nil, group, timeMs, nonce))
	return Auth{Group: group, AccessKey: accessKey, TimeMs: timeMs, Nonce: nonce, Sig: m.Sum(nil)}
}

// AppendAuth appends the payload of a to dst. a must be valid (Validate):
// an invalid a panics, as it is the caller's broken invariant.
func AppendAuth(dst []byte, a Auth) []byte {
	if err := a.Validate(); err != nil {
		panic("wire: AppendAuth of an invalid auth: " + err.Error())
	}
	dst = append(dst, Version, KindAuth)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(a.Group)))
	dst = append(dst, a.Group...)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(a.AccessKey)))
	dst = append(dst, a.AccessKey...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.TimeMs))
	dst = append(dst, a.Nonce[:]...)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(a.Sig)))
	return append(dst, a.Sig...)
}

// DecodeAuth decodes an Auth payload. Sig aliases b; Group and AccessKey
// are copies.
func DecodeAuth(b []byte) (Auth, error) {
	d := decoder{b: b, msg: "auth"}
	var a Auth
	d.header(KindAuth)
	a.Group = string(d.bytes("group", "group length", MaxGroup))
	a.AccessKey = string(d.bytes("access key", "access key length", MaxAccessKey))
	a.TimeMs = d.i64("time")
	if p := d.take("nonce", NonceLen); p != nil {
		copy(a.Nonce[:], p)
	}
	a.Sig = d.bytes("signature", "signature length", MaxSig)
	if err := d.end(); err != nil {
		return Auth{}, err
	}
	if err := a.Validate(); err != nil {
		return Auth{}, err
	}
	return a, nil
}
