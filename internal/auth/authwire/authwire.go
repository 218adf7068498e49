// Package authwire joins the auth core to the 4.x remoting layer: the
// client-side signer and the server-side guard that authenticates and
// authorizes every request by the code's entry in rmq's ACL table.
package authwire

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// Signer returns a remoting.ClientOptions.Sign that adds AccessKey and
// Signature (HMAC-SHA1 over the sorted ext values and the body, Base64)
// as the official clients do, replacing those of an earlier signing.
func Signer(accessKey, secretKey string) func(*remoting.Command) {
	return func(c *remoting.Command) {
		setExt(c, rmq.FieldAccessKey, accessKey)
		body := c.Body
		if len(c.BodyParts) > 0 {
			body = make([]byte, 0, c.BodyLen())
			for _, p := range c.BodyParts {
				body = append(body, p...)
			}
		}
		// The content leaves out Signature, so an earlier one does not
		// count: a command sent again is signed afresh.
		setExt(c, rmq.FieldSignature, auth.SignRemoting(secretKey, c, body))
	}
}

// setExt sets key to v so that Ext and EachExt (the last of a key) read v:
// in the map, or, when a listed field of the same key would override the
// map, as a later listed field.
func setExt(c *remoting.Command, key, v string) {
	c.SetExt(key, v)
	if c.Ext(key) != v {
		c.AppendExt(key, v)
	}
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

const protocol = "remoting"

// Guard returns the remoting.ServerOptions.Guard that refuses what the
// checker refuses, answering NO_PERMISSION (16) with the refusal's message.
func Guard(opts Options) remoting.Guard {
	if opts.Checker == nil {
		panic("authwire: Guard needs a Checker")
	}
	if opts.Role < Broker || opts.Role > Internal {
		panic(fmt.Sprintf("authwire: unknown guard role %d", opts.Role))
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	g := &guard{opts: opts, log: opts.Logger.With("component", "authwire")}
	return func(c *remoting.Conn, req *remoting.Command) *remoting.Command {
		return g.check(addrPort(c.RemoteAddr()), req)
	}
}

type guard struct {
	opts Options
	log  *slog.Logger
}

// check is the guard's decision for a request from remote: nil lets it
// through, else the refusal to send.
func (g *guard) check(remote netip.AddrPort, req *remoting.Command) *remoting.Command {
	code := req.FullCode()
	if g.opts.Role == NameServer && !rmq.NameServerWrite(code) {
		return nil
	}
	ck := g.opts.Checker
	w := auth.Where{Remote: remote, Code: code}
	u, r := ck.AuthenticateRemotingAt(w, req, req.Body)
	if r != nil {
		return refusal(req, r)
	}
	switch g.opts.Role {
	case NameServer:
		r = ck.RequireSuper(w, protocol, u, fmt.Sprintf("change the name server's state (request code %d)", code))
	case Internal:
		r = ck.RequireSuper(w, protocol, u, fmt.Sprintf("use the controller's port (request code %d)", code))
	default:
		r = g.authorize(w, u, req)
	}
	if r != nil {
		return refusal(req, r)
	}
	return nil
}

func (g *guard) authorize(w auth.Where, u auth.User, req *remoting.Command) *auth.Refusal {
	ck := g.opts.Checker
	if u.Type == auth.Super && u.Status != auth.Disabled {
		return nil // super users may send anything, even what the table cannot read
	}
	reqs, err := rmq.BrokerRequests(w.Code, req, req.Body)
	if err != nil {
		g.log.Debug("request not authorizable", "code", w.Code, "err", err)
		return ck.Forbid(w, protocol, u, fmt.Sprintf("user %q's request cannot be authorized: %s", u.Name, err.Error()))
	}
	for i := range reqs {
		if res := &reqs[i].Resource; res.Type == auth.ResourceCluster && res.Name == "" {
			res.Name = g.opts.Cluster
		}
	}
	return ck.AuthorizeAt(w, protocol, u, reqs, remote(w))
}

func remote(w auth.Where) netip.Addr { return w.Remote.Addr() }

func refusal(req *remoting.Command, r *auth.Refusal) *remoting.Command {
	return remoting.NewResponse(req, auth.RemotingCode, r.Msg)
}

// addrPort is a net.Addr's address and port; the zero AddrPort when it
// has none (then policies with source IPs do not match).
func addrPort(a net.Addr) netip.AddrPort {
	switch a := a.(type) {
	case *net.TCPAddr:
		ap := a.AddrPort()
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	case nil:
		return netip.AddrPort{}
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}
