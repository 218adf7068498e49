package auth

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
)

// CheckerOptions configure a Checker.
type CheckerOptions struct {
	// Logger gets one rate-limited line per refusal reason (at most one per
	// second per user and kind). Default discard.
	Logger *slog.Logger
	// Clock paces that rate limit. Default clock.Real.
	Clock clock.Clock
	// Refused, if set, is called on every refusal (metrics): protocol is
	// "remoting", "grpc", "http" or "ha" (replication); reason
	// "unsigned", "unknown-user", "disabled", "bad-signature" or
	// "forbidden".
	Refused func(protocol, reason string)
}

// Refusal reasons (CheckerOptions.Refused).
const (
	ReasonUnsigned     = "unsigned"
	ReasonUnknownUser  = "unknown-user"
	ReasonDisabled     = "disabled"
	ReasonBadSignature = "bad-signature"
	ReasonForbidden    = "forbidden"
)

// Checker authenticates and authorizes requests against a Directory. It is
// safe for concurrent use.
type Checker struct {
	dir  Directory
	opts CheckerOptions

	mu     sync.Mutex
	logged map[logKey]time.Time // guarded by mu: when (user, kind) was last logged
}

type logKey struct {
	user string
	kind RefusalKind
}

// maxLogKeys bounds the rate limiter's memory: beyond it, stale keys are
// dropped, and if none is stale the line is not logged.
const maxLogKeys = 4096

// NewChecker returns a Checker reading dir.
func NewChecker(dir Directory, opts CheckerOptions) *Checker {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real
	}
	opts.Logger = opts.Logger.With("component", "auth")
	return &Checker{dir: dir, opts: opts, logged: make(map[logKey]time.Time)}
}

// Where tells the refusal log line where a request came from: the peer's
// address and the request's 4.x code or gRPC method (zero fields are left
// out).
type Where struct {
	Remote netip.AddrPort
	Code   int32
	Method string
}

const (
	protoRemoting = "remoting"
	protoGRPC     = "grpc"
	protoHTTP     = "http"
)

// AuthenticateRemoting checks a 4.x request's AccessKey / Signature /
// SecurityToken fields against body, as the official Go and Java clients
// sign (the content is computed without Signature, and accepted with or
// without SecurityToken's value).
func (c *Checker) AuthenticateRemoting(f Fields, body []byte) (User, *Refusal) {
	return c.AuthenticateRemotingAt(Where{}, f, body)
}

// AuthenticateRemotingAt is AuthenticateRemoting naming w in the log.
func (c *Checker) AuthenticateRemotingAt(w Where, f Fields, body []byte) (User, *Refusal) {
	ak := f.Ext(fieldAccessKey)
	if ak == "" {
		return User{}, c.refuse(w, protoRemoting, ReasonUnsigned, Unauthenticated, "",
			"authentication failed: the request is not signed: configure the client's AccessKey and SecretKey")
	}
	u, r := c.lookup(w, protoRemoting, ak)
	if r != nil {
		return User{}, r
	}
	sig := f.Ext(fieldSignature)
	if sig == "" {
		return User{}, c.refuse(w, protoRemoting, ReasonUnsigned, Unauthenticated, ak,
			fmt.Sprintf("authentication failed: the request of user %s carries no Signature: configure the client's SecretKey", quoteTrunc(ak)))
	}
	if !verifyRemoting(u.Secret, sig, f, body) {
		return User{}, c.badSignature(w, protoRemoting, ak)
	}
	return u, nil
}

// AuthenticateGRPC checks a 5.x request's "authorization" and
// "x-mq-date-time" metadata values.
func (c *Checker) AuthenticateGRPC(authorization, dateTime string) (User, *Refusal) {
	return c.AuthenticateGRPCAt(Where{}, authorization, dateTime)
}

// AuthenticateGRPCAt is AuthenticateGRPC naming w in the log.
func (c *Checker) AuthenticateGRPCAt(w Where, authorization, dateTime string) (User, *Refusal) {
	if strings.TrimSpace(authorization) == "" {
		return User{}, c.refuse(w, protoGRPC, ReasonUnsigned, Unauthenticated, "",
			"authentication failed: the request is not signed: configure the client's AccessKey and SecretKey")
	}
	ak, sig, err := ParseAuthorization(authorization)
	if err != nil {
		return User{}, c.refuse(w, protoGRPC, ReasonBadSignature, Unauthenticated, "",
			"authentication failed: "+err.Error()+": send the authorization metadata the official clients send")
	}
	u, r := c.lookup(w, protoGRPC, ak)
	if r != nil {
		return User{}, r
	}
	if dateTime == "" {
		return User{}, c.refuse(w, protoGRPC, ReasonBadSignature, Unauthenticated, ak,
			fmt.Sprintf("authentication failed: the request of user %s has no %s metadata, which the signature covers", quoteTrunc(ak), dateTimeHeader))
	}
	if !verifyGRPC(u.Secret, sig, dateTime) {
		return User{}, c.badSignature(w, protoGRPC, ak)
	}
	return u, nil
}

// AuthenticateBasic checks an HTTP Basic user and secret (the HTTP
// listener), in constant time.
func (c *Checker) AuthenticateBasic(user, secret string) (User, *Refusal) {
	return c.AuthenticateBasicAt(Where{}, user, secret)
}

// AuthenticateBasicAt is AuthenticateBasic naming w in the log.
func (c *Checker) AuthenticateBasicAt(w Where, user, secret string) (User, *Refusal) {
	if user == "" {
		return User{}, c.refuse(w, protoHTTP, ReasonUnsigned, Unauthenticated, "",
			"authentication failed: the request carries no credentials: send HTTP Basic user:secret")
	}
	u, known := c.dir.User(user)
	// Compare digests so that neither the secret's length nor whether the
	// user exists shows in the time taken.
	want := sha256.Sum256([]byte(u.Secret))
	got := sha256.Sum256([]byte(secret))
	match := hmac.Equal(want[:], got[:])
	switch {
	case !known:
		return User{}, c.unknown(w, protoHTTP, user)
	case u.Status == Disabled:
		return User{}, c.disabled(w, protoHTTP, user)
	case !match:
		return User{}, c.refuse(w, protoHTTP, ReasonBadSignature, Unauthenticated, user,
			fmt.Sprintf("authentication failed: the secret does not match user %s's", quoteTrunc(user)))
	}
	return u, nil
}

// AuthenticateHMAC checks sig, a raw HMAC-SHA1 of content with
// accessKey's secret (the replication port's Auth frame, protocol "ha"),
// comparing in constant time. An empty accessKey is refused as unsigned
// (and counted), so a caller may use it to report a peer that sent no
// credentials at all.
func (c *Checker) AuthenticateHMAC(protocol, accessKey string, content, sig []byte) (User, *Refusal) {
	w := Where{}
	if accessKey == "" {
		return User{}, c.refuse(w, protocol, ReasonUnsigned, Unauthenticated, "",
			"authentication failed: no credentials were sent: configure the AccessKey and SecretKey")
	}
	u, r := c.lookup(w, protocol, accessKey)
	if r != nil {
		return User{}, r
	}
	if len(sig) == 0 {
		return User{}, c.refuse(w, protocol, ReasonUnsigned, Unauthenticated, accessKey,
			fmt.Sprintf("authentication failed: the request of user %s carries no signature: configure the SecretKey", quoteTrunc(accessKey)))
	}
	m := hmac.New(sha1.New, []byte(u.Secret))
	m.Write(content)
	if !hmac.Equal(m.Sum(nil), sig) {
		return User{}, c.badSignature(w, protocol, accessKey)
	}
	return u, nil
}

func (c *Checker) lookup(w Where, proto, name string) (User, *Refusal) {
	u, ok := c.dir.User(name)
	switch {
	case !ok:
		return User{}, c.unknown(w, proto, name)
	case u.Status == Disabled:
		return User{}, c.disabled(w, proto, name)
	}
	return u, nil
}

func (c *Checker) unknown(w Where, proto, name string) *Refusal {
	return c.refuse(w, proto, ReasonUnknownUser, Unauthenticated, name,
		fmt.Sprintf("authentication failed: user %s is unknown", quoteTrunc(name)))
}

func (c *Checker) disabled(w Where, proto, name string) *Refusal {
	return c.refuse(w, proto, ReasonDisabled, Unauthenticated, name,
		fmt.Sprintf("authentication failed: user %s is disabled", quoteTrunc(name)))
}

func (c *Checker) badSignature(w Where, proto, name string) *Refusal {
	return c.refuse(w, proto, ReasonBadSignature, Unauthenticated, name,
		fmt.Sprintf("authentication failed: the signature does not match user %s's secret", quoteTrunc(name)))
}

// Authorize reports whether u may make every one of reqs from source:
// super users may do anything; a normal user needs, for each Request, an
// Allow entry matching the resource, one of the actions and the source,
// and no matching Deny entry. protocol is for the Refused hook.
func (c *Checker) Authorize(protocol string, u User, reqs []Request, source netip.Addr) *Refusal {
	return c.AuthorizeAt(Where{}, protocol, u, reqs, source)
}

// AuthorizeAt is Authorize naming w in the log.
func (c *Checker) AuthorizeAt(w Where, protocol string, u User, reqs []Request, source netip.Addr) *Refusal {
	if u.Status == Disabled {
		return c.disabled(w, protocol, u.Name)
	}
	if u.Type == Super {
		return nil
	}
	var acl *Acl
	if a, ok := c.dir.Acl(Subject(u.Name)); ok {
		acl = &a
	}
	for _, r := range reqs {
		switch Decide(u, acl, r, source) {
		case Allowed:
			continue
		case Denied:
			return c.forbid(w, protocol, u.Name, r, source, "denied by a policy")
		default:
			return c.forbid(w, protocol, u.Name, r, source, "no policy allows it")
		}
	}
	return nil
}

func (c *Checker) forbid(w Where, proto, name string, r Request, source netip.Addr, why string) *Refusal {
	msg := fmt.Sprintf("user %s may not %s on %s (%s)", quoteTrunc(name), actionList(r.Actions), r.Resource, why)
	return c.refuseSrc(w, proto, ReasonForbidden, Forbidden, name, msg, source)
}

// actionList writes "Pub", "Pub or Sub", "Pub, Sub or Get".
func actionList(as []Action) string {
	switch len(as) {
	case 0:
		return "do anything"
	case 1:
		return string(as[0])
	}
	var b strings.Builder
	for i, a := range as {
		switch {
		case i == len(as)-1:
			b.WriteString(" or ")
		case i > 0:
			b.WriteString(", ")
		}
		b.WriteString(string(a))
	}
	return b.String()
}

func (c *Checker) refuse(w Where, proto, reason string, kind RefusalKind, user, msg string) *Refusal {
	return c.refuseSrc(w, proto, reason, kind, user, msg, netip.Addr{})
}

// refuseSrc builds the refusal, calls the hook and logs it unless (user,
// kind) was logged less than a second ago.
func (c *Checker) refuseSrc(w Where, proto, reason string, kind RefusalKind, user, msg string, source netip.Addr) *Refusal {
	r := &Refusal{Kind: kind, User: user, Msg: msg}
	if c.opts.Refused != nil {
		c.opts.Refused(proto, reason)
	}
	if c.mayLog(user, kind) {
		attrs := make([]any, 0, 14)
		attrs = append(attrs, "protocol", proto, "reason", reason, "user", truncate(user), "refusal", msg)
		if w.Remote.IsValid() {
			attrs = append(attrs, "remote", w.Remote.String())
		} else if source.IsValid() {
			attrs = append(attrs, "remote", source.String())
		}
		if w.Code != 0 {
			attrs = append(attrs, "code", w.Code)
		}
		if w.Method != "" {
			attrs = append(attrs, "method", w.Method)
		}
		c.opts.Logger.Warn("request refused", attrs...)
	}
	return r
}

func (c *Checker) mayLog(user string, kind RefusalKind) bool {
	now := c.opts.Clock.Now()
	k := logKey{user: truncate(user), kind: kind}
	c.mu.Lock()
	defer c.mu.Unlock()
	if last, ok := c.logged[k]; ok && now.Sub(last) < time.Second {
		return false
	}
	if len(c.logged) >= maxLogKeys {
		for k2, t := range c.logged {
			if now.Sub(t) >= time.Second {
				delete(c.logged, k2)
			}
		}
		if len(c.logged) >= maxLogKeys {
			return false
		}
	}
	c.logged[k] = now
	return true
}

// truncate bounds a peer-chosen name kept or logged.
func truncate(s string) string {
	if len(s) > MaxUserNameBytes {
		return s[:MaxUserNameBytes]
	}
	return s
}

// GRPCDateTime formats t as the 5.x clients' x-mq-date-time
// (yyyyMMdd'T'HHmmss'Z', local time with a literal Z, as they send it).
func GRPCDateTime(t time.Time) string { return t.Format("20060102T150405Z") }

// GRPCAuthorization is the "authorization" value a 5.x client sends for
// accessKey/secretKey at dateTime (for Petrel's own gRPC load generator).
func GRPCAuthorization(accessKey, secretKey, dateTime string) string {
	s := getMac()
	defer putMac(s)
	s.buf = append(s.buf[:0], dateTime...)
	sig := hex.EncodeToString(s.mac(secretKey, s.buf))
	return GRPCScheme + " Credential=" + accessKey + "//Rocketmq, SignedHeaders=" + dateTimeHeader + ", Signature=" + sig
}

// Forbid refuses u's request with msg (a sentence for the client naming
// what is missing), calling the Refused hook (reason "forbidden") and
// logging as Authorize does: for checks that are not policy look-ups,
// such as a request the ACL table cannot read.
func (c *Checker) Forbid(w Where, protocol string, u User, msg string) *Refusal {
	return c.refuse(w, protocol, ReasonForbidden, Forbidden, u.Name, msg)
}

// RequireSuper refuses u unless u is an enabled super user; what says what
// the request would do ("change the name server's routes").
func (c *Checker) RequireSuper(w Where, protocol string, u User, what string) *Refusal {
	if u.Status == Disabled {
		return c.disabled(w, protocol, u.Name)
	}
	if u.Type == Super {
		return nil
	}
	return c.Forbid(w, protocol, u, fmt.Sprintf("user %s may not %s: only super users may", quoteTrunc(u.Name), what))
}
