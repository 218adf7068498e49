package controller

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/remoting"
)

// NodeConfig configures StartNode: one controller voter serving raft and
// the controller's remoting codes on one port.
type NodeConfig struct {
	// ID is this voter's id (≥ 1).
	ID int
	// Listen is the port of both raft and remoting ("host:port"; port 0
	// picks one, for a single voter).
	Listen string
	// Advertise is the address the other voters and the brokers dial;
	// empty: this voter's entry in Peers (or, with no Peers, the listen
	// address made dialable). Given, it must equal that entry.
	Advertise string
	// Peers are all voters, this one included. Empty: a single voter
	// (petrel server), whose address is Advertise or the listen address.
	Peers []Voter
	// DataDir is the process's data directory; the raft log and snapshots
	// are kept in DataDir/controller.
	DataDir string
	// Network listens and dials (nil: TCP). With TLS, give the plain one.
	Network netx.Network
	// TLS, when set, serves raft and remoting over TLS and dials the other
	// voters with it (see MuxConfig.TLS).
	TLS *tls.Config
	// Service configures liveness and leases (DefaultServiceConfig()); its
	// Clock and Logger default to the node's.
	Service ServiceConfig
	// HeartbeatTimeout, ElectionTimeout, LeaderLeaseTimeout: raft's (0:
	// 1 s, 1 s, 500 ms).
	HeartbeatTimeout, ElectionTimeout, LeaderLeaseTimeout time.Duration
	// Remoting bounds what the controller's remoting clients can make it
	// hold (zero fields: remoting's defaults).
	Remoting remoting.Limits
	// Guard, if set, checks every remoting request of the port before its
	// handler (authwire.Guard with Role Internal under --auth); raft
	// streams are not remoting and are protected by TLS only.
	Guard remoting.Guard
	// Logger: nil discards. Clock: nil is clock.Real (the service's time;
	// raft and sockets always run on real time).
	Logger *slog.Logger
	Clock  clock.Clock
}

// Node is a running controller voter: the mux on its port, the raft voter,
// the Service and its remoting server.
type Node struct {
	cfg   NodeConfig
	addr  string
	mux   *Mux
	raft  *Raft
	svc   *Service
	srv   *remoting.Server
	log   *slog.Logger
	serve sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

// StartNode listens on cfg.Listen, starts the raft voter (bootstrapping
// the peers on the first start) and serves the controller's codes. On an
// error nothing keeps running.
func StartNode(cfg NodeConfig) (*Node, error) {
	if cfg.ID < 1 {
		return nil, fmt.Errorf("controller: voter id %d: give an id ≥ 1", cfg.ID)
	}
	if cfg.DataDir == "" {
		return nil, errors.New("controller: no data directory")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	scfg := cfg.Service
	if scfg.Clock == nil {
		scfg.Clock = cfg.Clock
	}
	if scfg.Logger == nil {
		scfg.Logger = lg
	}
	if scfg.ElectionSilence == 0 {
		// What NewRaft's voters guarantee (ServiceConfig.ElectionSilence).
		scfg.ElectionSilence = cmp.Or(cfg.HeartbeatTimeout, DefaultRaftHeartbeatTimeout)
	}
	if err := scfg.Validate(); err != nil {
		return nil, err
	}
	peers := cfg.Peers
	if len(peers) > 0 {
		if err := checkVoters(peers); err != nil {
			return nil, err
		}
		self, ok := findVoter(peers, cfg.ID)
		if !ok {
			return nil, fmt.Errorf("controller: voter id %d is not among the peers %s; list every voter, this one included", cfg.ID, FormatPeers(peers))
		}
		if cfg.Advertise != "" && cfg.Advertise != self.Addr {
			return nil, fmt.Errorf("controller: voter %d advertises %s but the peers list it as %s; the peers dial the listed address", cfg.ID, cfg.Advertise, self.Addr)
		}
	}
	ln, err := netx.Or(cfg.Network).Listen(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("controller: listen on %s: %w", cfg.Listen, err)
	}
	if len(peers) == 0 {
		peers = []Voter{{ID: cfg.ID, Addr: cmpOr(cfg.Advertise, dialable(ln.Addr()))}}
	}
	self, _ := findVoter(peers, cfg.ID)
	mux := NewMux(ln, MuxConfig{Advertise: self.Addr, Network: cfg.Network, TLS: cfg.TLS, Logger: lg})
	r, err := NewRaft(RaftConfig{
		ID:                 cfg.ID,
		Addr:               self.Addr,
		Peers:              peers,
		Dir:                filepath.Join(cfg.DataDir, "controller"),
		Stream:             mux.RaftStream(),
		HeartbeatTimeout:   cfg.HeartbeatTimeout,
		ElectionTimeout:    cfg.ElectionTimeout,
		LeaderLeaseTimeout: cfg.LeaderLeaseTimeout,
		Logger:             lg,
	})
	if err != nil {
		_ = mux.Close()
		return nil, err
	}
	srv := remoting.NewServer(remoting.ServerOptions{Logger: lg, Limits: cfg.Remoting, Guard: cfg.Guard})
	svc := NewService(scfg, r)
	svc.Register(srv)
	n := &Node{cfg: cfg, addr: self.Addr, mux: mux, raft: r, svc: svc, srv: srv, log: lg.With("component", "controller", "voter", cfg.ID)}
	n.serve.Add(1)
	go func() {
		defer n.serve.Done()
		if err := srv.Serve(mux.Listener()); err != nil && !errors.Is(err, net.ErrClosed) {
			n.log.Error("controller remoting server stopped", "err", err)
		}
	}()
	svc.Start()
	n.log.Info("controller voter started", "addr", self.Addr, "listen", ln.Addr().String(), "peers", FormatPeers(peers), "tls", cfg.TLS != nil)
	return n, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// dialable turns a listen address into one to dial: all-addresses becomes
// loopback.
func dialable(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return net.JoinHostPort(host, port)
}

// Addr is the voter's advertised address (raft and remoting).
func (n *Node) Addr() string { return n.addr }

// ListenAddr is the address the node listens on.
func (n *Node) ListenAddr() net.Addr { return n.mux.Addr() }

// Log is the node's raft log.
func (n *Node) Log() Log { return n.raft }

// Raft is the node's raft log with its extra operations (Snapshot).
func (n *Node) Raft() *Raft { return n.raft }

// Service is the node's controller service.
func (n *Node) Service() *Service { return n.svc }

// Close stops the service, the remoting server, raft and the listener, in
// that order, and waits for them. It is idempotent.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		var errs []error
		if err := n.svc.Close(); err != nil {
			errs = append(errs, err)
		}
		if err := n.srv.Close(); err != nil {
			errs = append(errs, err)
		}
		if err := n.raft.Close(); err != nil {
			errs = append(errs, err)
		}
		if err := n.mux.Close(); err != nil {
			errs = append(errs, err)
		}
		n.serve.Wait()
		n.closeErr = errors.Join(errs...)
		n.log.Info("controller voter stopped")
	})
	return n.closeErr
}
