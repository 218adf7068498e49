package daemon

// Security of the name server, broker and controller ports (issue 18):
// authentication and authorization (--auth), the credentials the process
// signs its own requests with (--auth-init-user), and TLS (--tls-mode,
// --tls-cert, --tls-key, --tls-client-ca).

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/auth/authwire"
	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/tlsx"
)

// Security configures a name server's, broker's or controller's ports.
// The zero value is what Petrel did before issue 18: no authentication,
// unsigned requests, plaintext.
type Security struct {
	// Auth, when set, authenticates and authorizes every request of the
	// remoting port (and the HTTP listener, with HTTP Basic; /healthz and
	// /readyz stay open). One Auth serves every port of a process: in
	// petrel server the name server and the controller share the broker's
	// users.
	Auth *Auth
	// AccessKey and SecretKey are the init user (--auth-init-user): they
	// sign the process's own requests (a broker's registrations with the
	// name servers, forwards to its master, controller heartbeats), and a
	// master broker whose store has no user creates it as a super user.
	// Empty: unsigned.
	AccessKey, SecretKey string
	// TLS is the certificate of the remoting listeners (name server,
	// broker, replication), the HTTP listener and the controller port,
	// served in TLSMode; nil with TLSMode Disabled (or ""). In Enforcing
	// mode the process also dials its links to other Petrel processes
	// (broker to name server, slave to master, broker to controller) over
	// TLS with TLS.PeerConfig().
	TLS     *tlsx.Server
	TLSMode tlsx.Mode
}

// tlsOn says whether the listeners serve TLS.
func (s Security) tlsOn() bool {
	return s.TLS != nil && s.TLSMode != "" && s.TLSMode != tlsx.Disabled
}

// ListenNetwork is nw with its listeners serving TLS in the process's
// mode; nw itself without TLS.
func (s Security) ListenNetwork(nw netx.Network) netx.Network {
	nw = netx.Or(nw)
	if !s.tlsOn() {
		return nw
	}
	return s.TLS.ListenNetwork(nw, s.TLSMode)
}

// DialNetwork is nw with its dials made over TLS (the peer
// configuration: this process's certificate for mutual TLS) when the
// process enforces TLS; nw itself otherwise. A permissive process dials
// plaintext, which every mode but enforcing accepts.
func (s Security) DialNetwork(nw netx.Network) netx.Network {
	nw = netx.Or(nw)
	if s.TLS == nil || s.TLSMode != tlsx.Enforcing {
		return nw
	}
	return tlsx.DialNetwork(nw, s.TLS.PeerConfig())
}

// Network is nw with both: TLS listeners and, when enforcing, TLS dials.
func (s Security) Network(nw netx.Network) netx.Network {
	return s.DialNetwork(s.ListenNetwork(nw))
}

// Listener wraps an HTTP (or other) listener in the process's TLS mode.
func (s Security) Listener(ln net.Listener) net.Listener {
	if !s.tlsOn() {
		return ln
	}
	return s.TLS.Listener(ln, s.TLSMode)
}

// Sign is the remoting client's Sign hook of AccessKey/SecretKey; nil
// without credentials.
func (s Security) Sign() func(*remoting.Command) {
	if s.AccessKey == "" {
		return nil
	}
	return authwire.Signer(s.AccessKey, s.SecretKey)
}

// AuthConfig configures an Auth.
type AuthConfig struct {
	// InitUser and InitSecret are --auth-init-user's NAME:SECRET: the
	// first super user, created in a master broker's store when it has no
	// user yet, and until then (and on a standalone name server, which has
	// no store of users) accepted as a super user. Empty: none.
	InitUser, InitSecret string
	// Logger gets the checker's rate-limited refusal lines; default
	// discard. Clock paces them; default clock.Real.
	Logger *slog.Logger
	Clock  clock.Clock
}

// Auth is one process's authentication and authorization: a checker over
// the process's users (the init user until a broker's store is attached,
// then the broker's) and the refusal hook that feeds
// petrel_auth_refusals_total. Safe for concurrent use.
type Auth struct {
	cfg     AuthConfig
	dir     procDirectory
	refused atomic.Pointer[func(protocol, reason string)]
	checker *auth.Checker
}

// NewAuth returns the Auth of cfg.
func NewAuth(cfg AuthConfig) *Auth {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	a := &Auth{cfg: cfg}
	if cfg.InitUser != "" {
		a.dir.init = auth.User{Name: cfg.InitUser, Secret: cfg.InitSecret, Type: auth.Super, Status: auth.Enabled}
	}
	a.checker = auth.NewChecker(&a.dir, auth.CheckerOptions{Logger: cfg.Logger, Clock: cfg.Clock, Refused: a.onRefused})
	return a
}

// Checker is the process's checker (for the gRPC front).
func (a *Auth) Checker() *auth.Checker { return a.checker }

// InitUser is the init user's name ("" none).
func (a *Auth) InitUser() string { return a.cfg.InitUser }

// Guard is the remoting guard of a port of role (the broker's, the name
// server's or the controller's); cluster names the Cluster resource.
func (a *Auth) Guard(role authwire.Role, cluster string) remoting.Guard {
	return authwire.Guard(authwire.Options{Checker: a.checker, Role: role, Cluster: cluster, Logger: a.cfg.Logger})
}

// OnRefused sets the hook every refusal is counted with (the metrics of
// the process's broker); nil removes it.
func (a *Auth) OnRefused(fn func(protocol, reason string)) {
	if fn == nil {
		a.refused.Store(nil)
		return
	}
	a.refused.Store(&fn)
}

func (a *Auth) onRefused(protocol, reason string) {
	if fn := a.refused.Load(); fn != nil {
		(*fn)(protocol, reason)
	}
}

// UserCount is how many users the checker knows: the broker's once one is
// attached (the init user counts while the store has none), else 1 with
// an init user.
func (a *Auth) UserCount() int {
	if b := a.dir.broker.Load(); b != nil {
		if n := b.count(); n > 0 {
			return n
		}
	}
	if a.dir.init.Name != "" {
		return 1
	}
	return 0
}

// attachBroker makes the checker read b's users and ACLs.
func (a *Auth) attachBroker(b *broker.Broker) {
	a.dir.broker.Store(&brokerDirectory{dir: b.AuthDirectory(), count: func() int { return len(b.ListUsers("")) }})
}

// clusterGet is what the HTTP listener needs: Get on the cluster.
func clusterGet(cluster string) []auth.Request {
	return []auth.Request{{Resource: auth.Resource{Type: auth.ResourceCluster, Name: cluster, Pattern: auth.Literal}, Actions: []auth.Action{auth.ActionGet}}}
}

// httpAuthorize is the HTTP listener's check of Basic credentials: an
// authenticated user allowed Get on the cluster (super users are).
func (a *Auth) httpAuthorize(cluster string) func(r *http.Request, user, secret string) bool {
	reqs := clusterGet(cluster)
	return func(r *http.Request, user, secret string) bool {
		var w auth.Where
		if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
			w.Remote = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
			w.Method = r.Method + " " + r.URL.Path
		}
		u, ref := a.checker.AuthenticateBasicAt(w, user, secret)
		if ref != nil {
			return false
		}
		return a.checker.AuthorizeAt(w, "http", u, reqs, w.Remote.Addr()) == nil
	}
}

// ensureInit creates the init user (name, secret) in b's store when it
// has no user yet (b must be a master), logging a failure.
func ensureInit(ctx context.Context, b *broker.Broker, name, secret string, log *slog.Logger) {
	created, err := b.EnsureInitUser(ctx, name, secret)
	switch {
	case err != nil && ctx.Err() != nil:
	case err != nil:
		log.Error("cannot create the init user (--auth-init-user); it is accepted as a super user while the store has no user", "user", name, "err", err)
	case created: // the broker logs it
	}
}

// checkInitUser warns, when b's store has users, if the init user is not
// among them as a super user with that secret: ports with --auth then
// refuse the requests the process signs with it.
func checkInitUser(b *broker.Broker, name, secret string, log *slog.Logger) {
	if name == "" || len(b.ListUsers("")) == 0 {
		return
	}
	u, ok := b.AuthDirectory().User(name)
	switch {
	case !ok:
		log.Warn("the init user (--auth-init-user) is not among the broker's users, and was not created because users exist; this broker signs its registrations, forwards and controller heartbeats with it, which ports with --auth refuse: create it with petrel user create, or give an existing super user", "user", name)
	case subtle.ConstantTimeCompare([]byte(u.Secret), []byte(secret)) != 1:
		log.Warn("the init user's secret (--auth-init-user) differs from the one in the broker's store; this broker signs its own requests with the flag's, which ports with --auth refuse: give the current secret", "user", name)
	case u.Type != auth.Super:
		log.Warn("the init user (--auth-init-user) is not a super user in the broker's store; name servers and controllers with --auth refuse the registrations and heartbeats this broker signs with it", "user", name)
	}
}

// procDirectory is the process's auth.Directory: a broker's users and
// ACLs once attached; the init user as a super user while there is no
// broker or its store has no user.
type procDirectory struct {
	init   auth.User // Name "": none
	broker atomic.Pointer[brokerDirectory]
}

type brokerDirectory struct {
	dir   auth.Directory
	count func() int
}

func (d *procDirectory) User(name string) (auth.User, bool) {
	if name == "" {
		return auth.User{}, false
	}
	if b := d.broker.Load(); b != nil {
		if u, ok := b.dir.User(name); ok {
			return u, true
		}
		if name == d.init.Name && b.count() == 0 {
			return d.init, true
		}
		return auth.User{}, false
	}
	if name == d.init.Name {
		return d.init, true
	}
	return auth.User{}, false
}

func (d *procDirectory) Acl(subject string) (auth.Acl, bool) {
	if b := d.broker.Load(); b != nil {
		return b.dir.Acl(subject)
	}
	return auth.Acl{}, false
}

// masterAuth runs when the broker is (or becomes) a master: it creates the
// init user in its store if it has no user yet (in the background: the
// write waits to be durable, and in a replicated group for the commit
// point).
func (d *Broker) masterAuth() {
	name, secret := d.sec.AccessKey, d.sec.SecretKey
	if name == "" {
		return
	}
	d.authMu.Lock()
	defer d.authMu.Unlock()
	if d.authClosed {
		return
	}
	d.authWG.Add(1)
	go func() {
		defer d.authWG.Done()
		ensureInit(d.authCtx, d.b, name, secret, d.log)
	}()
}
