package auth

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"slices"
	"strings"
	"sync"
)

// The 4.x signature (RocketMQ's AclClientRPCHook and the Go client's
// ACLInterceptor): content = the values of every ext field but Signature,
// in ascending order of their keys, then the body; Signature =
// Base64(HMAC-SHA1(secret, content)). The Java client has AccessKey and
// SecurityToken among the fields it signs; the Go client signs AccessKey
// but not SecurityToken; Java clients up to 4.9.3 added
// _UNIQUE_KEY_QUERY after signing. A broker accepts all three.
const (
	fieldAccessKey     = "AccessKey"
	fieldSignature     = "Signature"
	fieldSecurityToken = "SecurityToken"
	fieldUniqueKey     = "_UNIQUE_KEY_QUERY"
)

// extPair is one ext field as EachExt reports it.
type extPair struct{ key, value string }

// macState is the scratch space of one signature computation, pooled so
// that checking a request allocates nothing.
type macState struct {
	pairs []extPair
	buf   []byte
	h     hash.Hash
	pad   [sha1.BlockSize]byte
	key   [sha1.Size]byte
	inner [sha1.Size]byte
	out   [sha1.Size]byte
	b64   [28]byte
	add   func(k, v string)
}

var macPool = sync.Pool{New: func() any {
	s := &macState{h: sha1.New()}
	s.add = func(k, v string) { s.pairs = append(s.pairs, extPair{k, v}) }
	return s
}}

func getMac() *macState { return macPool.Get().(*macState) }

func putMac(s *macState) {
	if cap(s.pairs) > 1024 || cap(s.buf) > 64<<10 {
		return // a huge request's scratch is not kept
	}
	clear(s.pairs)
	s.pairs = s.pairs[:0]
	s.buf = s.buf[:0]
	macPool.Put(s)
}

// collect reads f's fields sorted by key, a later duplicate replacing an
// earlier one (as Fields.EachExt orders them).
func (s *macState) collect(f Fields) {
	s.pairs = s.pairs[:0]
	f.EachExt(s.add)
	slices.SortStableFunc(s.pairs, func(a, b extPair) int { return strings.Compare(a.key, b.key) })
	out := s.pairs[:0]
	for i, p := range s.pairs {
		if i+1 < len(s.pairs) && s.pairs[i+1].key == p.key {
			continue // the last of equal keys wins
		}
		out = append(out, p)
	}
	s.pairs = out
}

// content writes the signed content's header part into s.buf, leaving
// out Signature and the fields skip names.
func (s *macState) content(skipToken, skipUnique bool) {
	s.buf = s.buf[:0]
	for _, p := range s.pairs {
		switch {
		case p.key == fieldSignature:
		case skipToken && p.key == fieldSecurityToken:
		case skipUnique && p.key == fieldUniqueKey:
		default:
			s.buf = append(s.buf, p.value...)
		}
	}
}

// mac computes HMAC-SHA1(secret, parts...) into s.out.
func (s *macState) mac(secret string, parts ...[]byte) []byte {
	h := s.h
	key := s.key[:0]
	if len(secret) > sha1.BlockSize {
		h.Reset()
		s.buf2(secret)
		key = h.Sum(key)
	}
	fill := func(x byte) {
		for i := range s.pad {
			var k byte
			switch {
			case len(key) > 0 && i < len(key):
				k = key[i]
			case len(key) == 0 && i < len(secret):
				k = secret[i]
			}
			s.pad[i] = k ^ x
		}
	}
	fill(0x36)
	h.Reset()
	h.Write(s.pad[:])
	for _, p := range parts {
		h.Write(p)
	}
	inner := h.Sum(s.inner[:0])
	fill(0x5c)
	h.Reset()
	h.Write(s.pad[:])
	h.Write(inner)
	return h.Sum(s.out[:0])
}

// buf2 writes a long secret into the hash through the pad (no
// allocation for the common short secrets either).
func (s *macState) buf2(secret string) {
	for len(secret) > 0 {
		n := copy(s.pad[:], secret)
		s.h.Write(s.pad[:n])
		secret = secret[n:]
	}
}

// base64 encodes the last mac into s.b64.
func (s *macState) base64() []byte {
	base64.StdEncoding.Encode(s.b64[:], s.out[:])
	return s.b64[:]
}

// SignRemoting is the 4.x Signature of f and body under secret: every
// field of f but Signature (AccessKey and, when set, SecurityToken
// included), sorted by key, then the body. Signer uses it; so can tests.
func SignRemoting(secret string, f Fields, body []byte) string {
	s := getMac()
	defer putMac(s)
	s.collect(f)
	s.content(false, false)
	s.mac(secret, s.buf, body)
	return string(s.base64())
}

// verifyRemoting reports whether sig is the signature of f and body under
// secret in one of the forms the official clients compute.
func verifyRemoting(secret, sig string, f Fields, body []byte) bool {
	if len(sig) != 28 {
		return false
	}
	s := getMac()
	defer putMac(s)
	s.collect(f)
	hasToken, hasUnique := false, false
	for _, p := range s.pairs {
		hasToken = hasToken || p.key == fieldSecurityToken
		hasUnique = hasUnique || p.key == fieldUniqueKey
	}
	ok := false
	for _, v := range [...]struct{ token, unique bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		if (v.token && !hasToken) || (v.unique && !hasUnique) {
			continue
		}
		s.content(v.token, v.unique)
		s.mac(secret, s.buf, body)
		if hmac.Equal(s.base64(), []byte(sig)) {
			ok = true // no early exit: the time does not tell which form
		}
	}
	return ok
}

// MaxAuthorizationBytes bounds the 5.x "authorization" value read.
const MaxAuthorizationBytes = 1024

// GRPCScheme is the 5.x authorization scheme.
const GRPCScheme = "MQv2-HMAC-SHA1"

const dateTimeHeader = "x-mq-date-time"

// ParseAuthorization reads a 5.x "authorization" value, "MQv2-HMAC-SHA1
// Credential=AK//Rocketmq, SignedHeaders=x-mq-date-time, Signature=HEX":
// the AccessKey is Credential up to its first "/", the signature the 40
// hex digits of HEX (either case). Items may come in any order, with any
// spacing; unknown items are skipped. The error says what is wrong.
func ParseAuthorization(v string) (accessKey, signature string, err error) {
	if len(v) > MaxAuthorizationBytes {
		return "", "", errors.New("the authorization value is too long")
	}
	v = strings.TrimSpace(v)
	scheme, rest, _ := strings.Cut(v, " ")
	if !strings.EqualFold(scheme, GRPCScheme) {
		return "", "", errors.New("the authorization scheme is not " + GRPCScheme)
	}
	for rest != "" {
		var item string
		item, rest, _ = strings.Cut(rest, ",")
		k, val, _ := strings.Cut(strings.TrimSpace(item), "=")
		k, val = strings.TrimSpace(k), strings.TrimSpace(val)
		switch {
		case strings.EqualFold(k, "Credential"):
			accessKey, _, _ = strings.Cut(val, "/")
		case strings.EqualFold(k, "Signature"):
			signature = val
		case strings.EqualFold(k, "SignedHeaders"):
			signed := false
			for h := range strings.SplitSeq(val, ";") {
				signed = signed || strings.EqualFold(strings.TrimSpace(h), dateTimeHeader)
			}
			if !signed {
				return "", "", errors.New("the signed headers do not include " + dateTimeHeader)
			}
		}
	}
	switch {
	case accessKey == "":
		return "", "", errors.New("the authorization value has no Credential")
	case signature == "":
		return "", "", errors.New("the authorization value has no Signature")
	case len(signature) != 2*sha1.Size:
		return "", "", errors.New("the Signature is not 40 hex digits")
	}
	var raw [sha1.Size]byte
	if _, err := hex.Decode(raw[:], []byte(signature)); err != nil {
		return "", "", errors.New("the Signature is not 40 hex digits")
	}
	return accessKey, signature, nil
}

// verifyGRPC reports whether sigHex (40 hex digits, either case) is
// HMAC-SHA1(secret, dateTime).
func verifyGRPC(secret, sigHex, dateTime string) bool {
	var raw [sha1.Size]byte
	if len(sigHex) != 2*sha1.Size {
		return false
	}
	if _, err := hex.Decode(raw[:], []byte(sigHex)); err != nil {
		return false
	}
	s := getMac()
	defer putMac(s)
	s.buf = append(s.buf[:0], dateTime...)
	return hmac.Equal(s.mac(secret, s.buf), raw[:])
}
