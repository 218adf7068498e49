package auth

import (
	"log/slog"
	"net/netip"
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
	// "remoting", "grpc" or "http"; reason "unsigned", "unknown-user",
	// "disabled", "bad-signature" or "forbidden".
	Refused func(protocol, reason string)
}

// Checker authenticates and authorizes requests against a Directory. It is
// safe for concurrent use.
type Checker struct {
	dir  Directory
	opts CheckerOptions
}

// NewChecker returns a Checker reading dir.
func NewChecker(dir Directory, opts CheckerOptions) *Checker {
	panic("auth: NewChecker not implemented yet")
}

// AuthenticateRemoting checks a 4.x request's AccessKey / Signature /
// SecurityToken fields against body, as the official Go and Java clients
// sign (the content is computed without Signature, and accepted with or
// without SecurityToken's value).
func (c *Checker) AuthenticateRemoting(f Fields, body []byte) (User, *Refusal) {
	panic("auth: not implemented yet")
}

// AuthenticateGRPC checks a 5.x request's "authorization" and
// "x-mq-date-time" metadata values.
func (c *Checker) AuthenticateGRPC(authorization, dateTime string) (User, *Refusal) {
	panic("auth: not implemented yet")
}

// AuthenticateBasic checks an HTTP Basic user and secret (the HTTP
// listener), in constant time.
func (c *Checker) AuthenticateBasic(user, secret string) (User, *Refusal) {
	panic("auth: not implemented yet")
}

// Authorize reports whether u may make every one of reqs from source:
// super users may do anything; a normal user needs, for each Request, an
// Allow entry matching the resource, one of the actions and the source,
// and no matching Deny entry. protocol is for the Refused hook.
func (c *Checker) Authorize(protocol string, u User, reqs []Request, source netip.Addr) *Refusal {
	panic("auth: not implemented yet")
}

// GRPCDateTime formats t as the 5.x clients' x-mq-date-time
// (yyyyMMdd'T'HHmmss'Z', local time with a literal Z, as they send it).
func GRPCDateTime(t time.Time) string { panic("auth: not implemented yet") }

// GRPCAuthorization is the "authorization" value a 5.x client sends for
// accessKey/secretKey at dateTime (for Petrel's own gRPC load generator).
func GRPCAuthorization(accessKey, secretKey, dateTime string) string {
	panic("auth: not implemented yet")
}
