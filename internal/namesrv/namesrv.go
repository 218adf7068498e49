package namesrv

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/remoting"
)

// CodeNeedFullRegistration answers a refused delta, with ext
// petrelNeedFull=true (the request codes are in package rmq).
const CodeNeedFullRegistration = remoting.CodeSystemError

const (
	defaultBrokerTTL    = 120 * time.Second
	defaultScanInterval = 10 * time.Second
)

// Options configure a name server.
type Options struct {
	// Clock drives expiry; default clock.Real.
	Clock clock.Clock
	// BrokerTTL is how long a broker may stay silent before it is dropped;
	// default 120 s.
	BrokerTTL time.Duration
	// ScanInterval is the period of the expiry scan; default 10 s.
	ScanInterval time.Duration
	// Logger receives lifecycle and broker events; default discard.
	Logger *slog.Logger
	// MaxFrameBytes is passed to the remoting server (0: its default,
	// 16 MiB). A full registration of a very large broker can exceed it
	// unless compressed (the Registrar compresses).
	MaxFrameBytes int
	// Limits are passed to the remoting server (zero fields: its
	// defaults).
	Limits remoting.Limits
	// Network is the network daemon.StartNameServer listens on; default
	// the real one (netx.TCP). Serve takes a listener of any network.
	Network netx.Network
	// Guard, if set, checks every request before its handler
	// (authwire.Guard with Role NameServer under --auth).
	Guard remoting.Guard
}

func (o *Options) setDefaults() {
	if o.Clock == nil {
		o.Clock = clock.Real
	}
	if o.BrokerTTL <= 0 {
		o.BrokerTTL = defaultBrokerTTL
	}
	if o.ScanInterval <= 0 {
		o.ScanInterval = defaultScanInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Server is a name server: a Table behind the remoting transport, with a
// clock-driven expiry scan. Safe for concurrent use.
type Server struct {
	opts Options
	log  *slog.Logger
	rs   *remoting.Server

	mu          sync.Mutex // guards everything below; never held across I/O
	table       *Table
	sessions    map[*remoting.Conn]uint64
	nextSession uint64
	timer       clock.Timer
	closed      bool

	// testConnClosed, when set before Serve, runs at the end of each
	// connection-close callback.
	testConnClosed func()
}

// New returns a name server with its handlers registered and its expiry
// scan started; call Serve to accept connections.
func New(opts Options) *Server {
	opts.setDefaults()
	s := &Server{
		opts:     opts,
		log:      opts.Logger.With("component", "namesrv"),
		table:    NewTable(),
		sessions: map[*remoting.Conn]uint64{},
	}
	s.rs = remoting.NewServer(remoting.ServerOptions{
		MaxFrameBytes: opts.MaxFrameBytes,
		Logger:        opts.Logger,
		OnConnClose:   s.connClosed,
		Limits:        opts.Limits,
		Guard:         opts.Guard,
	})
	s.rs.Handle(rmq.CodeRegisterBroker, s.registerBroker)
	s.rs.Handle(rmq.CodeUnregisterBroker, s.unregisterBroker)
	s.rs.Handle(rmq.CodeQueryDataVersion, s.queryDataVersion)
	s.rs.Handle(rmq.CodeGetRouteInfoByTopic, s.routeInfo)
	s.rs.Handle(rmq.CodeGetBrokerClusterInfo, s.clusterInfo)
	s.rs.Handle(rmq.CodeGetAllTopicList, s.allTopics)
	s.rs.Handle(rmq.CodeDeleteTopicInNamesrv, s.deleteTopic)
	s.rs.Handle(rmq.CodePutKVConfig, s.putKV)
	s.rs.Handle(rmq.CodeGetKVConfig, s.getKV)
	s.rs.Handle(rmq.CodeDeleteKVConfig, s.deleteKV)
	s.rs.Handle(rmq.CodeGetKVListByNamespace, s.kvList)
	s.rs.Handle(rmq.CodeWipeWritePermOfBroker, s.wipeWritePerm)
	s.rs.Handle(rmq.CodeAddWritePermOfBroker, s.addWritePerm)
	s.registerConfig()
	s.registerTopicLists()
	s.mu.Lock()
	s.timer = s.opts.Clock.AfterFunc(s.opts.ScanInterval, s.scan)
	s.mu.Unlock()
	return s
}

// Serve accepts connections on ln until Close; it returns what the
// remoting server's Serve returns.
func (s *Server) Serve(ln net.Listener) error {
	s.log.Info("name server listening", "addr", ln.Addr().String())
	return s.rs.Serve(ln)
}

// Close stops the expiry scan and the transport. It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.timer != nil {
		s.timer.Stop()
	}
	s.mu.Unlock()
	return s.rs.Close()
}

// scan drops brokers silent for BrokerTTL and re-arms itself.
func (s *Server) scan() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	gone := s.table.Expire(s.opts.Clock.Now(), s.opts.BrokerTTL)
	s.timer = s.opts.Clock.AfterFunc(s.opts.ScanInterval, s.scan)
	s.mu.Unlock()
	for _, addr := range gone {
		s.log.Warn("broker expired", "broker_addr", addr, "ttl", s.opts.BrokerTTL)
	}
}

func (s *Server) connClosed(c *remoting.Conn) {
	s.mu.Lock()
	id, ok := s.sessions[c]
	delete(s.sessions, c)
	var gone []string
	if ok {
		gone = s.table.DropSession(id)
	}
	s.mu.Unlock()
	for _, addr := range gone {
		s.log.Info("broker connection closed", "broker_addr", addr)
	}
	if f := s.testConnClosed; f != nil {
		f()
	}
}

// session returns the id of c, allocating one; s.mu must be held. The
// remoting server calls OnConnClose only after every handler of the
// connection returned, so a session allocated here is always dropped.
func (s *Server) session(c *remoting.Conn) uint64 {
	if c == nil {
		return 0
	}
	id, ok := s.sessions[c]
	if !ok {
		s.nextSession++
		id = s.nextSession
		s.sessions[c] = id
	}
	return id
}

func fail(req *remoting.Command, code int16, err error) *remoting.Command {
	return remoting.NewResponse(req, code, err.Error())
}

func bodyResponse(req *remoting.Command, body []byte) *remoting.Command {
	resp := remoting.NewResponse(req, rmq.RespSuccess, "")
	resp.Body = body
	return resp
}

func (s *Server) registerBroker(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	r, err := decodeRegistration(req)
	if err != nil {
		s.log.Warn("bad broker registration", "err", err)
		return fail(req, remoting.CodeSystemError, err)
	}
	s.mu.Lock()
	r.Session = s.session(c)
	delta, base, nTopics := r.Delta, r.BaseVersion, len(r.Topics)+len(r.Removed)
	res := s.table.Register(r, s.opts.Clock.Now())
	order, hasOrder := s.table.KVList(OrderTopicNamespace)
	s.mu.Unlock()

	if res.NeedFull {
		s.log.Info("delta registration refused", "broker", r.Broker.Name, "broker_id", r.Broker.ID,
			"broker_addr", r.Addr, "base_version", base.String(), "held_version", res.Version.String())
		return rmq.EncodeNeedFullRegistration(req, "delta base version "+base.String()+" is not the version held here; send a full registration")
	}
	if res.Ignored {
		s.log.Warn("master claim of a lower epoch ignored: the broker is a deposed master", "broker", r.Broker.Name,
			"broker_addr", r.Addr, "epoch", r.MasterEpoch, "master_epoch", res.HeldEpoch, "master_addr", res.MasterAddr)
	} else if res.Stale {
		s.log.Info("stale full registration ignored", "broker", r.Broker.Name, "broker_id", r.Broker.ID,
			"broker_addr", r.Addr, "version", r.Version.String(), "held_version", res.Version.String())
	} else {
		s.log.Debug("broker registered", "broker", r.Broker.Name, "broker_id", r.Broker.ID, "broker_addr", r.Addr,
			"delta", delta, "topics", nTopics, "version", res.Version.String())
	}
	out := rmq.RegisterBrokerResponse{MasterAddr: res.MasterAddr, MasterHAAddr: res.MasterHAAddr, DataVersion: res.Version}
	if hasOrder {
		out.OrderTopicConf = order
	}
	return rmq.EncodeRegisterBrokerResponse(req, out)
}

func (s *Server) unregisterBroker(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeUnregisterBroker(req)
	if err != nil {
		return fail(req, remoting.CodeSystemError, bad(err))
	}
	id := brokerID(h.BrokerIdentity)
	s.mu.Lock()
	s.table.Unregister(id.Cluster, id.Name, id.ID, h.BrokerAddr)
	s.mu.Unlock()
	s.log.Info("broker unregistered", "broker", id.Name, "broker_id", id.ID, "broker_addr", h.BrokerAddr)
	return remoting.NewResponse(req, remoting.CodeSuccess, "")
}

func (s *Server) queryDataVersion(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeQueryDataVersion(req)
	if err != nil {
		return fail(req, remoting.CodeSystemError, bad(err))
	}
	id := brokerID(h.BrokerIdentity)
	s.mu.Lock()
	changed := s.table.Touch(id, h.BrokerAddr, h.DataVersion, s.opts.Clock.Now())
	held, ok := s.table.BrokerVersion(id)
	s.mu.Unlock()
	out := rmq.QueryDataVersionResponse{Changed: changed}
	if ok {
		out.Held = &held
	}
	return rmq.EncodeQueryDataVersionResponse(req, out)
}

func (s *Server) routeInfo(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeRouteRequest(req)
	if err != nil {
		return fail(req, remoting.CodeSystemError, err)
	}
	s.mu.Lock()
	rd, ok := s.table.Route(h.Topic)
	s.mu.Unlock()
	if !ok {
		return remoting.NewResponse(req, rmq.RespTopicNotExist,
			"no route for topic "+strconv.Quote(h.Topic)+" in the name server: create the topic on a broker, or enable auto-create")
	}
	return bodyResponse(req, rmq.EncodeTopicRouteDataBody(rd))
}

func (s *Server) clusterInfo(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	s.mu.Lock()
	ci := s.table.ClusterInfo()
	s.mu.Unlock()
	return bodyResponse(req, rmq.EncodeClusterInfoBody(ci))
}

func (s *Server) allTopics(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	s.mu.Lock()
	topics := s.table.Topics()
	s.mu.Unlock()
	return bodyResponse(req, rmq.EncodeTopicListBody(rmq.TopicListBody{TopicList: topics}))
}

func (s *Server) deleteTopic(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeDeleteTopic(req)
	if err != nil {
		return fail(req, remoting.CodeSystemError, err)
	}
	s.mu.Lock()
	s.table.DeleteTopic(h.Topic)
	s.mu.Unlock()
	s.log.Info("topic deleted", "topic", h.Topic)
	return remoting.NewResponse(req, remoting.CodeSuccess, "")
}

func (s *Server) putKV(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeKVConfig(req)
	if err != nil {
		return fail(req, remoting.CodeSystemError, err)
	}
	s.mu.Lock()
	s.table.PutKV(h.Namespace, h.Key, h.Value)
	s.mu.Unlock()
	return remoting.NewResponse(req, remoting.CodeSuccess, "")
}

func (s *Server) getKV(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeKVConfig(req)
	if err != nil {
		return fail(req, remoting.CodeSystemError, err)
	}
	s.mu.Lock()
	v, ok := s.table.GetKV(h.Namespace, h.Key)
	s.mu.Unlock()
	if !ok {
		return remoting.NewResponse(req, rmq.RespQueryNotFound, "no config item, namespace: "+h.Namespace+" key: "+h.Key)
	}
	return rmq.EncodeGetKVConfigResponse(req, v)
}

func (s *Server) deleteKV(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeKVConfig(req)
	if err != nil {
		return fail(req, remoting.CodeSystemError, err)
	}
	s.mu.Lock()
	s.table.DeleteKV(h.Namespace, h.Key)
	s.mu.Unlock()
	return remoting.NewResponse(req, remoting.CodeSuccess, "")
}

func (s *Server) kvList(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeKVList(req)
	if err != nil {
		return fail(req, remoting.CodeSystemError, err)
	}
	s.mu.Lock()
	m, ok := s.table.KVList(h.Namespace)
	s.mu.Unlock()
	if !ok {
		return remoting.NewResponse(req, rmq.RespQueryNotFound, "no config items in namespace "+h.Namespace)
	}
	return bodyResponse(req, rmq.EncodeKVTableBody(rmq.KVTable{Table: m}))
}
