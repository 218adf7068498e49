// Package authwire joins the auth core to the 4.x remoting layer: the
// client-side signer and the server-side guard that authenticates and
// authorizes every request by the code's entry in rmq's ACL table.
package authwire

import (
	"log/slog"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/remoting"
)

// Signer returns a remoting.ClientOptions.Sign that adds AccessKey and
// Signature (HMAC-SHA1 over the sorted ext values and the body, Base64)
// as the official clients do, replacing those of an earlier signing.
func Signer(accessKey, secretKey string) func(*remoting.Command) {
	panic("authwire: not implemented yet")
}

// Role picks which of rmq's ACL tables a guard applies.
type Role int

const (
	// Broker: every request is authenticated; each code's table entry
	// names the (resource, actions) it needs.
	Broker Role = iota + 1
	// NameServer: reads are open to everyone (clients resolve routes
	// before anything else, and a name server knows only the brokers'
	// users); writes (register, unregister, KV and config writes, topic
	// deletes) need an authenticated super user.
	NameServer
	// Internal: every request needs an authenticated super user (the
	// controller's port, which only brokers and operators use).
	Internal
)

// Options configure a Guard.
type Options struct {
	Checker *auth.Checker
	Role    Role
	// Cluster names the Cluster resource of requests that need one.
	Cluster string
	Logger  *slog.Logger
}

// Guard returns the remoting.ServerOptions.Guard that refuses what the
// checker refuses, answering NO_PERMISSION (16) with the refusal's message.
func Guard(opts Options) remoting.Guard {
	panic("authwire: not implemented yet")
}
