package auth

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding"
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
type extPair struct {
	key, value string
}

// macState is the scratch space of one signature computation, pooled so
// that checking a request allocates nothing. It keeps the HMAC key
// schedule of the last secret it served (the SHA-1 states after the
// ipad and opad blocks): a pooled state mostly serves the same one or few
// users, so the two pad blocks are hashed once per secret, not per
// request. The states are keyed by the secret itself, so a rotated secret
// never meets the old one's states. It also keeps the order in which the
// last request's fields sorted: a client sends every request of a kind
// with its fields in the same order, so that order mostly sorts the next
// one too, and the sort only confirms it. The sort moves places in
// pairs, not the pairs: copying strings into a slice on the heap costs a
// write barrier a pointer while the collector runs, and it mostly does
// on a busy broker.
type macState struct {
	pairs  []extPair // as EachExt gave them
	sorted []int32   // places in pairs by key, the last of equal keys kept
	order  []int32   // the last sorted, when it had no duplicates
	buf    []byte
	h      hash.Hash
	hm     stateHash
	secret string // whose states ist and ost are; valid when keyed
	keyed  bool
	ist    []byte // marshalled state after the ipad block
	ost    []byte // marshalled state after the opad block
	pad    [sha1.BlockSize]byte
	inner  [sha1.Size]byte
	out    [sha1.Size]byte
	b64    [28]byte
	add    func(k, v string)
}

// stateHash is what crypto/sha1's digest offers for saving and restoring
// its state.
type stateHash interface {
	hash.Hash
	encoding.BinaryAppender
	encoding.BinaryUnmarshaler
}

var macPool = sync.Pool{New: func() any {
	s := &macState{h: sha1.New()}
	s.hm, _ = s.h.(stateHash)
	s.add = func(k, v string) { s.pairs = append(s.pairs, extPair{k, v}) }
	return s
}}

func getMac() *macState { return macPool.Get().(*macState) }

func putMac(s *macState) {
	if cap(s.pairs) > 1024 || cap(s.buf) > 64<<10 {
		return // a huge request's scratch is not kept
	}
	clear(s.pairs)
	s.pairs, s.sorted = s.pairs[:0], s.sorted[:0]
	s.buf = s.buf[:0]
	macPool.Put(s)
}

// collect reads f's fields into s.pairs and their places, sorted by
// key, into s.sorted, a later duplicate replacing an earlier one (as
// Fields.EachExt orders them).
func (s *macState) collect(f Fields) {
	s.pairs = s.pairs[:0]
	f.EachExt(s.add)
	ps := s.pairs
	sorted := s.sorted[:0]
	if len(s.order) == len(ps) {
		sorted = append(sorted, s.order...) // a permutation of ps's places
	} else {
		for i := range ps {
			sorted = append(sorted, int32(i))
		}
	}
	dups := sortPlaces(ps, sorted)
	if dups {
		out := sorted[:0]
		for i, at := range sorted {
			if i+1 < len(sorted) && ps[sorted[i+1]].key == ps[at].key {
				continue // the last of equal keys wins
			}
			out = append(out, at)
		}
		sorted = out
		s.order = s.order[:0]
	} else {
		s.order = append(s.order[:0], sorted...)
	}
	s.sorted = sorted
}

// sortPlaces sorts the places at in ps by key, equal keys by place (so
// the last one still wins), and reports whether two keys are equal: an
// insertion sort for the usual dozen or two fields, which costs one
// comparison a field when at comes sorted already, the library's sort by
// key and place beyond (two results next to each other were compared, so
// it sees every pair of equal keys too).
func sortPlaces(ps []extPair, at []int32) (dups bool) {
	if len(at) > 48 {
		slices.SortFunc(at, func(a, b int32) int {
			if c := strings.Compare(ps[a].key, ps[b].key); c != 0 {
				return c
			}
			dups = true
			return int(a - b)
		})
		return dups
	}
	for i := 1; i < len(at); i++ {
		p := at[i]
		j := i
		for ; j > 0; j-- {
			c := strings.Compare(ps[at[j-1]].key, ps[p].key)
			if c == 0 {
				dups = true
			}
			if c < 0 || (c == 0 && at[j-1] < p) {
				break
			}
			at[j] = at[j-1]
		}
		at[j] = p
	}
	return dups
}

// content writes the signed content's header part into s.buf, leaving
// out Signature and the fields skip names.
func (s *macState) content(skipToken, skipUnique bool) {
	s.buf = s.buf[:0]
	for _, at := range s.sorted {
		p := &s.pairs[at]
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
	if !s.restore(secret, &s.ist) {
		s.padBlock(secret, 0x36)
	}
	for _, p := range parts {
		h.Write(p)
	}
	inner := h.Sum(s.inner[:0])
	if !s.restore(secret, &s.ost) {
		s.padBlock(secret, 0x5c)
	}
	h.Write(inner)
	return h.Sum(s.out[:0])
}

// restore puts h in the state after secret's pad block, saved in *st, and
// reports whether it could; when it cannot (another secret, first use) it
// makes secret the saved one and leaves the pad block to padBlock.
func (s *macState) restore(secret string, st *[]byte) bool {
	if s.hm == nil {
		return false
	}
	if !s.keyed || s.secret != secret {
		s.keyed, s.secret = false, secret
		s.ist, s.ost = s.ist[:0], s.ost[:0]
		return false
	}
	if len(*st) == 0 {
		return false
	}
	return s.hm.UnmarshalBinary(*st) == nil
}

// padBlock resets h and feeds it secret's key XOR x (one block), saving
// the state for the next request under the same secret.
func (s *macState) padBlock(secret string, x byte) {
	h := s.h
	var key []byte
	var kb [sha1.Size]byte
	if len(secret) > sha1.BlockSize {
		h.Reset()
		s.buf2(secret)
		key = h.Sum(kb[:0])
	}
	for i := range s.pad {
		var k byte
		switch {
		case key != nil && i < len(key):
			k = key[i]
		case key == nil && i < len(secret):
			k = secret[i]
		}
		s.pad[i] = k ^ x
	}
	h.Reset()
	h.Write(s.pad[:])
	if s.hm == nil {
		return
	}
	st := &s.ist
	if x == 0x5c {
		st = &s.ost
	}
	var err error
	if *st, err = s.hm.AppendBinary((*st)[:0]); err != nil {
		*st = (*st)[:0]
	}
	s.keyed = s.secret == secret
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
	for _, at := range s.sorted {
		k := s.pairs[at].key
		hasToken = hasToken || k == fieldSecurityToken
		hasUnique = hasUnique || k == fieldUniqueKey
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
