package daemon

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/auth/authwire"
	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/grpcfront"
	"github.com/petrelmq/petrel/internal/metrics"
	"github.com/petrelmq/petrel/internal/namesrv"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/brokerfront"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/commitlog"
	"github.com/petrelmq/petrel/internal/vfs"
)

// NameServer is a running name server.
type NameServer struct {
	srv  *namesrv.Server
	ln   net.Listener
	done chan error
}

// StartNameServer listens on addr (on opts.Network) and serves.
func StartNameServer(addr string, opts namesrv.Options) (*NameServer, error) {
	return StartNameServerWith(addr, opts, Security{})
}

// StartNameServerWith is StartNameServer with sec: the listener serves
// TLS in sec's mode and, with sec.Auth, every request passes the name
// server's guard (reads open, writes need a super user). Without a broker
// attached to sec.Auth (a standalone name server) its only user is the
// init user, so --auth needs one.
func StartNameServerWith(addr string, opts namesrv.Options, sec Security) (*NameServer, error) {
	if err := opts.Limits.Validate(opts.MaxFrameBytes); err != nil {
		return nil, fmt.Errorf("name server: %w", err)
	}
	if sec.Auth != nil {
		if sec.Auth.UserCount() == 0 {
			return nil, errors.New("name server: --auth needs --auth-init-user NAME:SECRET (or --auth-init-user-file): a name server keeps no users, and the brokers register as that super user (give them the same --auth-init-user)")
		}
		if opts.Guard == nil {
			opts.Guard = sec.Auth.Guard(authwire.NameServer, "")
		}
	}
	ln, err := sec.ListenNetwork(opts.Network).Listen(addr)
	if err != nil {
		return nil, fmt.Errorf("name server: listen on %s: %w", addr, err)
	}
	n := &NameServer{srv: namesrv.New(opts), ln: ln, done: make(chan error, 1)}
	go func() { n.done <- n.srv.Serve(ln) }()
	return n, nil
}

// Addr is the address the name server listens on.
func (n *NameServer) Addr() net.Addr { return n.ln.Addr() }

// Close stops the name server.
func (n *NameServer) Close() error {
	err := n.srv.Close()
	return errors.Join(err, <-n.done)
}

// BrokerConfig configures a Broker.
type BrokerConfig struct {
	Store  store.Config
	Broker broker.Config
	// Listen is the client-facing address, e.g. ":10911".
	Listen string
	// Advertise is the address put into routes (host:port that clients
	// can dial). Empty: the listen address, or the first non-loopback IPv4
	// address of the host when listening on all addresses.
	Advertise string
	// NameServers are the name servers to register with.
	NameServers []string
	Registrar   namesrv.RegistrarOptions
	// RegisterWait bounds how long StartBroker waits for the first
	// registration; 0 means 5 s, negative not at all.
	RegisterWait time.Duration
	// RouteWait bounds how long a topic create or delete (admin request)
	// waits for the name servers to accept the change before it answers
	// anyway, with a remark that the route is still propagating; 0 means
	// 3 s, negative not at all.
	RouteWait time.Duration
	// ClientCallTimeout bounds a request the broker forwards to a
	// consumer client (GET_CONSUMER_RUNNING_INFO and the like); 0 means
	// 10 s, RocketMQ's.
	ClientCallTimeout time.Duration
	// HTTPListen is the address of the operator HTTP listener (/metrics,
	// /healthz, /readyz), e.g. ":8080"; empty disables it. It starts before
	// the store is opened, so /healthz answers during recovery while
	// /readyz says 503 until the store is recovered and a name server has
	// accepted the broker (at once without name servers).
	HTTPListen string
	Logger     *slog.Logger
	// GRPCListen is the address of the RocketMQ 5.x gRPC front, e.g.
	// ":8081"; empty: no gRPC front.
	GRPCListen string
	// Remoting bounds what clients of the remoting port can make the broker
	// hold (zero fields: remoting's defaults; see remoting.Limits).
	Remoting remoting.Limits
	// GRPC configures the gRPC front. Defaults: Advertise = Advertise's
	// host with the gRPC port when Advertise is set (else routes echo the
	// address the client dialled); CertDir = the store's directory (on
	// the OS file system); Clock and Logger those of the broker.
	GRPC grpcfront.Config
	// Network is the network of the remoting and gRPC listeners and of
	// the registrar's connections to the name servers; default the real
	// one (netx.TCP). The HTTP listener is always on the real network.
	Network netx.Network
	// HA configures replication (ha.go); zero: none.
	HA HAConfig
	// Controller puts the broker in controller mode (ctlmode.go): the
	// controller assigns its replica id and role; zero: the flags' role.
	Controller ControllerConfig
	// Security is the authentication, signing and TLS of the remoting,
	// replication and HTTP ports and of the broker's own links
	// (security.go); zero: none. The gRPC listener serves Security.TLS's
	// certificate (reloaded with it) unless GRPC names its own
	// certificate or plaintext; it is always TLS, in every mode. With
	// Security.Auth its clients are authenticated too, and its own
	// connections to a master sign with AccessKey/SecretKey.
	Security Security
}

// Broker is a running broker.
type Broker struct {
	st        *store.Store
	b         *broker.Broker
	front     *brokerfront.Front
	srv       *remoting.Server
	client    *remoting.Client
	reg       *namesrv.Registrar
	ln        net.Listener
	advertise string
	done      chan error
	repl      *replication      // nil without replication
	grpc      *grpcfront.Server // nil without a gRPC front
	grpcLn    net.Listener
	grpcDone  chan error
	closeOnce sync.Once
	closeErr  error

	metrics   *metrics.Metrics // nil without HTTPListen
	http      *metrics.Server
	ready     metrics.Readiness
	stopReady context.CancelFunc
	readyDone chan struct{}

	handBack atomic.Pointer[handBackPeer] // a slave's way to its master, handback.go
	ctl      *controlMode                 // nil unless in controller mode

	sec        Security
	log        *slog.Logger
	authCtx    context.Context // ends at Close: the init user's creation
	authCancel context.CancelFunc
	authMu     sync.Mutex // guards authClosed and authWG.Add
	authClosed bool
	authWG     sync.WaitGroup
}

// StartBroker opens the store (recovering it), listens and registers with
// the name servers.
func StartBroker(cfg BrokerConfig) (_ *Broker, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Remoting.Validate(0); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	// The remoting, replication and controller links get the TLS of
	// Security; the gRPC listener serves its own TLS on the plain network.
	plainNet := netx.Or(cfg.Network)
	cfg.Network = cfg.Security.Network(plainNet)
	ln, err := cfg.Network.Listen(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("broker: listen on %s: %w", cfg.Listen, err)
	}
	defer func() {
		if err != nil {
			ln.Close()
		}
	}()
	d := &Broker{ln: ln, done: make(chan error, 1), sec: cfg.Security, log: cfg.Logger}
	d.authCtx, d.authCancel = context.WithCancel(context.Background())
	if cfg.HTTPListen != "" {
		if err := d.startHTTP(&cfg); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				d.http.Close()
			}
		}()
	}
	adv, err := advertiseAddr(cfg.Advertise, ln.Addr())
	if err != nil {
		return nil, err
	}
	ap, err := netip.ParseAddrPort(adv)
	if err != nil {
		return nil, fmt.Errorf("broker: --advertise %q must be ip:port (clients reject host names): %w", adv, err)
	}
	cfg.Store.StoreHost = ap
	cfg.Broker.StoreHost = ap
	if cfg.replicated() {
		cfg.Store.CommitPoint = true
	}
	st, err := openStore(cfg.Store, cfg.Logger)
	if err != nil {
		return nil, err
	}
	if cfg.controlled() {
		if d.ctl, err = newControlMode(&cfg, st); err != nil {
			st.Close()
			return nil, err
		}
	} else if cfg.replicated() {
		if d.repl, err = newReplication(&cfg, st, &cfg.Broker); err != nil {
			st.Close()
			return nil, err
		}
	}
	d.setupStateReplication(&cfg)
	if cfg.replicated() && cfg.Broker.MasterAddr == nil {
		// A slave forwards 4.x sends to the master the name servers name
		// (brokerfront/forward.go); d.reg is set before the front serves.
		cfg.Broker.MasterAddr = func() string { return d.reg.Master().Addr }
	}
	b, err := broker.New(st, st.Meta(), cfg.Broker)
	if err != nil {
		d.closeReplication()
		st.Close()
		return nil, err
	}
	d.st, d.b, d.advertise = st, b, adv
	var guard remoting.Guard
	if a := cfg.Security.Auth; a != nil {
		a.attachBroker(b)
		if a.UserCount() == 0 {
			b.Close()
			d.closeReplication()
			st.Close()
			return nil, errors.New("broker: --auth, but the broker has no users and no --auth-init-user: start it with --auth-init-user NAME:SECRET (or --auth-init-user-file) to create the first super user")
		}
		guard = a.Guard(authwire.Broker, cfg.Broker.ClusterName)
		cfg.Logger.Info("authentication is on", "users", a.UserCount(), "init_user", a.InitUser())
	} else {
		cfg.Logger.Info("authentication is off: anyone who can reach the broker can send, read and delete; start with --auth --auth-init-user NAME:SECRET to require credentials")
	}
	checkInitUser(b, cfg.Security.AccessKey, cfg.Security.SecretKey, cfg.Logger)
	d.client = remoting.NewClient(remoting.ClientOptions{Logger: cfg.Logger, Network: cfg.Network, Sign: cfg.Security.Sign()})
	var topicRoute func(context.Context, string) ([]broker.RouteQueue, error)
	if len(cfg.NameServers) > 0 {
		topicRoute = brokerfront.NameServerRoutes(d.client, cfg.NameServers) // QUERY_ASSIGNMENT over the whole route
	}
	d.front = brokerfront.New(b, brokerfront.Options{Logger: cfg.Logger, AwaitRoutes: d.awaitRoutes, RouteWait: cfg.RouteWait, Forward: d.client,
		BrokerConfig: d.configOptions(&cfg), ClientCallTimeout: cfg.ClientCallTimeout, TopicRoute: topicRoute})
	d.srv = remoting.NewServer(remoting.ServerOptions{Logger: cfg.Logger, OnConnClose: d.front.ConnClosed, Limits: cfg.Remoting, Guard: guard})
	d.front.Register(d.srv)
	bc := cfg.Broker
	if cfg.Registrar.Snapshot == nil {
		cfg.Registrar.Snapshot = d.topicTable
	}
	d.reg = namesrv.NewRegistrar(d.client, cfg.NameServers, namesrv.BrokerInfo{
		Cluster: bc.ClusterName, Name: bc.BrokerName, ID: bc.BrokerID, Addr: adv,
		HAServerAddr: d.haAdvertise(adv),
	}, cfg.Registrar)
	d.handBack.Store(&handBackPeer{client: d.client, reg: d.reg})
	if d.repl != nil && cfg.Broker.Role == broker.RoleSlave {
		if err := d.repl.startSlave(d.masterHA(cfg.HA.Master)); err != nil {
			b.Close()
			d.client.Close()
			d.closeReplication()
			st.Close()
			return nil, err
		}
	}
	if cfg.GRPCListen != "" {
		if err := d.startGRPC(cfg, plainNet); err != nil {
			b.Close()
			d.client.Close()
			d.closeReplication()
			st.Close()
			return nil, err
		}
	}
	b.OnTopicChanged(d.publishTopic)
	d.reg.Update(d.topicTable())
	if !cfg.controlled() && cfg.Broker.Role != broker.RoleSlave {
		d.masterAuth() // controller mode: once promoted
	}
	if d.ctl != nil {
		d.ctl.start(d, newControllerClient(&cfg, d.ctl.cfg))
	} else {
		d.reg.Start()
	}
	go func() { d.done <- d.srv.Serve(ln) }()
	d.watchReadiness(len(cfg.NameServers) > 0)
	registerWait := cmp.Or(cfg.RegisterWait, defaultRegisterWait)
	if len(cfg.NameServers) > 0 && registerWait > 0 {
		// Report ready once clients can find the broker's topics, which
		// takes one registration (a client's first send to a new topic
		// needs the template topic's route). Do not wait long for a name
		// server that is down: the registrar keeps trying.
		ctx, cancel := context.WithTimeout(context.Background(), registerWait)
		if err := d.reg.WaitRegistered(ctx); err == nil {
			d.ready.SetRegistered() // now, not when the watcher gets to it
		} else {
			cfg.Logger.Warn("no name server has accepted the broker's registration yet; clients will not find it until one does", "namesrv", cfg.NameServers, "waited", registerWait)
		}
		cancel()
	}
	return d, nil
}

// defaultRegisterWait bounds how long StartBroker waits for the first
// registration.
const defaultRegisterWait = 5 * time.Second

// startHTTP starts the operator HTTP listener (HTTPS in the TLS mode of
// Security, HTTP Basic with Security.Auth) and hooks the metrics'
// histograms into the store and broker configurations.
func (d *Broker) startHTTP(cfg *BrokerConfig) error {
	d.metrics = metrics.New(metrics.Options{Ready: d.ready.Err, Logger: cfg.Logger})
	var h http.Handler = d.metrics.Handler()
	if a := cfg.Security.Auth; a != nil {
		a.OnRefused(d.metrics.AuthRefused)
		h = metrics.BasicAuth(h, a.httpAuthorize(cfg.Broker.ClusterName))
	}
	onCommit, onSend := cfg.Store.OnGroupCommit, cfg.Broker.ObserveSend
	observe := func(c commitlog.GroupCommit) { d.metrics.ObserveGroupCommit(c.Messages, c.Synced, c.Sync) }
	cfg.Store.OnGroupCommit = observe
	if onCommit != nil {
		cfg.Store.OnGroupCommit = func(c commitlog.GroupCommit) { onCommit(c); observe(c) }
	}
	cfg.Broker.ObserveSend = d.metrics.ObserveSend
	if onSend != nil {
		cfg.Broker.ObserveSend = func(took time.Duration) { onSend(took); d.metrics.ObserveSend(took) }
	}
	srv, err := metrics.ListenWith(cfg.HTTPListen, h, cfg.Security.Listener)
	if err != nil {
		return fmt.Errorf("broker: HTTP listener (--http-listen): %w", err)
	}
	d.http = srv
	return nil
}

// watchReadiness marks the store recovered, gives the metrics the running
// broker and marks the broker registered once a name server accepted it
// (at once when it has none to register with).
func (d *Broker) watchReadiness(hasNameServers bool) {
	if d.metrics != nil {
		d.metrics.Attach(metrics.Source{Broker: d.b, Conns: d.srv.ConnCount})
		d.metrics.AttachRemoting(d.srv.Stats)
		d.metrics.AttachRequestCounts(d.srv.RequestCounts, d.srv.Codes)
	}
	d.ready.SetRecovered()
	ctx, cancel := context.WithCancel(context.Background())
	d.stopReady, d.readyDone = cancel, make(chan struct{})
	go func() {
		defer close(d.readyDone)
		if !hasNameServers || d.reg.WaitRegistered(ctx) == nil {
			d.ready.SetRegistered()
		}
	}()
}

// startGRPC listens on cfg.GRPCListen (on nw, without Security's TLS:
// the front serves its own) and serves the gRPC front.
func (d *Broker) startGRPC(cfg BrokerConfig, nw netx.Network) error {
	ln, err := nw.Listen(cfg.GRPCListen)
	if err != nil {
		return fmt.Errorf("broker: gRPC listen on %s: %w", cfg.GRPCListen, err)
	}
	gc := cfg.GRPC
	if gc.Advertise == "" && cfg.Advertise != "" {
		host := cfg.Advertise
		if h, _, err := net.SplitHostPort(cfg.Advertise); err == nil {
			host = h
		}
		_, port, err := net.SplitHostPort(ln.Addr().String())
		if err != nil {
			ln.Close()
			return fmt.Errorf("broker: gRPC listener address %s: %w", ln.Addr(), err)
		}
		gc.Advertise = net.JoinHostPort(host, port)
	}
	if gc.CertDir == "" && (cfg.Store.FS == nil || cfg.Store.FS == vfs.OS) {
		gc.CertDir = cfg.Store.Dir
	}
	if gc.Clock == nil {
		gc.Clock = cfg.Broker.Clock
	}
	if gc.Logger == nil {
		gc.Logger = cfg.Logger
	}
	if a := cfg.Security.Auth; a != nil {
		gc.Auth = a.Checker()
	}
	if gc.Master == nil && cfg.replicated() {
		// A slave forwards what only its master does to the master the
		// name servers name (RocketMQ's registration result masterAddr).
		gc.Master = d.masterAddr
		gc.Remoting, gc.Network = d.client, cfg.Network
		if cfg.controlled() && gc.MasterMoved == nil {
			// A forward to a master the controller replaced ends at
			// once rather than at its timeout.
			gc.MasterMoved = d.masterMoved
		}
	}
	if gc.Sign == nil {
		// The front's own connections to the master (forwarded
		// receives, the check relay) sign as the process does.
		gc.Sign = cfg.Security.Sign()
	}
	if gc.GetCertificate == nil && gc.TLSCert == "" && !gc.Plaintext && cfg.Security.tlsOn() {
		// The process's certificate, reloaded on SIGHUP, unless the
		// front was given its own or plaintext.
		gc.GetCertificate = cfg.Security.TLS.Config().GetCertificate
	}
	s, err := grpcfront.New(d.b, gc)
	if err != nil {
		ln.Close()
		return err
	}
	d.grpc, d.grpcLn, d.grpcDone = s, ln, make(chan error, 1)
	go func() { d.grpcDone <- s.Serve(ln) }()
	return nil
}

// GRPCAddr is the address the gRPC front listens on, nil without one.
func (d *Broker) GRPCAddr() net.Addr {
	if d.grpcLn == nil {
		return nil
	}
	return d.grpcLn.Addr()
}

// grpcStopWait bounds how long Close waits for gRPC calls in flight.
const grpcStopWait = 5 * time.Second

// topicTable reads the topic table and its version at once, for the
// registrar.
func (d *Broker) topicTable() (map[string]namesrv.TopicConfig, namesrv.DataVersion) {
	topics, v := d.b.TopicsAt()
	table := make(map[string]namesrv.TopicConfig, len(topics))
	perm := d.b.Permission()
	for _, t := range topics {
		tc := topicConfig(t)
		tc.Perm = maskPerm(tc.Perm, perm)
		table[t.Name] = tc
	}
	return table, namesrv.DataVersion{Timestamp: v.Timestamp, Counter: v.Counter}
}

// publishTopic hands one topic change to the registrar (O(1): the
// registrar sends the changed topics, not the table).
func (d *Broker) publishTopic(c broker.TopicChange) {
	tc := topicConfig(c.Topic)
	tc.Perm = maskPerm(tc.Perm, d.b.Permission())
	d.reg.Apply(namesrv.TopicChange{Name: c.Name, Config: tc, Deleted: c.Deleted,
		Version: namesrv.DataVersion{Timestamp: c.Version.Timestamp, Counter: c.Version.Counter}})
}

// awaitRoutes waits until the name servers accepted the topic changes made
// so far (the admin front answers a topic change after it).
func (d *Broker) awaitRoutes(ctx context.Context) error { return d.reg.WaitPublished(ctx) }

func topicConfig(t broker.TopicConfig) namesrv.TopicConfig {
	return namesrv.TopicConfig{TopicName: t.Name, ReadQueueNums: t.ReadQueueNums, WriteQueueNums: t.WriteQueueNums,
		Perm: t.Perm, TopicFilterType: t.TopicFilterType, TopicSysFlag: t.TopicSysFlag, Order: t.Order}
}

// Addr is the address the broker listens on; Advertised the one in routes.
func (d *Broker) Addr() net.Addr     { return d.ln.Addr() }
func (d *Broker) Advertised() string { return d.advertise }

// HTTPAddr is the address of the operator HTTP listener; nil without one.
func (d *Broker) HTTPAddr() net.Addr {
	if d.http == nil {
		return nil
	}
	return d.http.Addr()
}

// Ready is nil once the broker is ready to serve clients (what /readyz
// reports): its store is recovered and a name server has accepted it.
func (d *Broker) Ready() error { return d.ready.Err() }

// Metrics is the broker's metrics registry; nil without HTTPListen.
func (d *Broker) Metrics() *metrics.Metrics { return d.metrics }

// Store and Core expose the parts for tests and tools.
func (d *Broker) Store() *store.Store  { return d.st }
func (d *Broker) Core() *broker.Broker { return d.b }

// Close stops gracefully: parked pulls are answered, the listener and
// connections close, the broker unregisters, the store flushes and closes.
func (d *Broker) Close() error {
	d.closeOnce.Do(func() {
		var errs []error
		if d.http != nil {
			errs = append(errs, d.http.Close())
		}
		d.stopReady()
		<-d.readyDone
		d.authMu.Lock()
		d.authClosed = true
		d.authMu.Unlock()
		d.authCancel()
		d.authWG.Wait()
		if d.grpc != nil {
			// First, while the broker still serves its calls: parked
			// receives are answered, clients leave the client table.
			ctx, cancel := context.WithTimeout(context.Background(), grpcStopWait)
			errs = append(errs, d.grpc.Shutdown(ctx), <-d.grpcDone)
			cancel()
		}
		errs = append(errs, d.closeControl())
		errs = append(errs, d.b.Close()) // answers parked pulls
		errs = append(errs, d.srv.Close())
		errs = append(errs, <-d.done)
		d.reg.Close()
		errs = append(errs, d.client.Close())
		errs = append(errs, d.closeReplication())
		errs = append(errs, d.st.Close())
		d.closeErr = errors.Join(errs...)
	})
	return d.closeErr
}

// advertiseAddr picks the address for routes.
func advertiseAddr(advertise string, listen net.Addr) (string, error) {
	tcp, _ := listen.(*net.TCPAddr)
	port := 0
	if tcp != nil {
		port = tcp.Port
	} else if ap, err := netip.ParseAddrPort(listen.String()); err == nil {
		// An ip:port of another network (netx.Mem).
		if advertise == "" && !ap.Addr().IsUnspecified() {
			return ap.String(), nil
		}
		port = int(ap.Port())
	}
	if advertise != "" {
		if !strings.Contains(advertise, ":") {
			advertise = fmt.Sprintf("%s:%d", advertise, port)
		}
		return advertise, nil
	}
	if tcp != nil && !tcp.IP.IsUnspecified() {
		return tcp.String(), nil
	}
	ip, err := firstNonLoopbackIPv4()
	if err != nil {
		return "", fmt.Errorf("broker: choose an address for routes: %w; set --advertise", err)
	}
	return fmt.Sprintf("%s:%d", ip, port), nil
}

func firstNonLoopbackIPv4() (net.IP, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.To4(), nil
		}
	}
	return net.IPv4(127, 0, 0, 1), nil
}
