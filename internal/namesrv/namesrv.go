package namesrv

import (
	"context"
	"encoding/json"
	"fmt"
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

func jsonBody(resp *remoting.Command, v any) *remoting.Command {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own plain types are encoded: a failure is a bug.
		panic(fmt.Sprintf("namesrv: encode answer: %v", err))
	}
	resp.Body = b
	return resp
}

type kvTable struct {
	Table map[string]string `json:"table"`
}

func (s *Server) registerBroker(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	r, err := decodeRegistration(req.ExtFields, req.Body)
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
		resp := remoting.NewResponse(req, CodeNeedFullRegistration,
			"delta base version "+base.String()+" is not the version held here; send a full registration")
		resp.SetExt(ExtNeedFull, "true")
		return resp
	}
	if res.Stale {
		s.log.Info("stale full registration ignored", "broker", r.Broker.Name, "broker_id", r.Broker.ID,
			"broker_addr", r.Addr, "version", r.Version.String(), "held_version", res.Version.String())
	} else {
		s.log.Debug("broker registered", "broker", r.Broker.Name, "broker_id", r.Broker.ID, "broker_addr", r.Addr,
			"delta", delta, "topics", nTopics, "version", res.Version.String())
	}
	resp := remoting.NewResponse(req, remoting.CodeSuccess, "")
	resp.SetExt(extHAServerAddr, res.MasterHAAddr)
	resp.SetExt(extMasterAddr, res.MasterAddr)
	resp.SetExt(ExtDataVersion, res.Version.String())
	if hasOrder {
		jsonBody(resp, kvTable{Table: order})
	}
	return resp
}

func (s *Server) unregisterBroker(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	id, err := brokerIdentity(req.ExtFields)
	if err != nil {
		return fail(req, remoting.CodeSystemError, err)
	}
	addr := req.Ext(extBrokerAddr)
	s.mu.Lock()
	s.table.Unregister(id.Cluster, id.Name, id.ID, addr)
	s.mu.Unlock()
	s.log.Info("broker unregistered", "broker", id.Name, "broker_id", id.ID, "broker_addr", addr)
	return remoting.NewResponse(req, remoting.CodeSuccess, "")
}

func (s *Server) queryDataVersion(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	id, err := brokerIdentity(req.ExtFields)
	if err != nil {
		return fail(req, remoting.CodeSystemError, err)
	}
	var v DataVersion
	if err := json.Unmarshal(req.Body, &v); err != nil {
		return fail(req, remoting.CodeSystemError, fmt.Errorf("%w: data version body: %v", ErrBadRegistration, err))
	}
	s.mu.Lock()
	changed := s.table.Touch(id, req.Ext(extBrokerAddr), v, s.opts.Clock.Now())
	held, ok := s.table.BrokerVersion(id)
	s.mu.Unlock()
	resp := remoting.NewResponse(req, remoting.CodeSuccess, "")
	resp.SetExt(extChanged, strconv.FormatBool(changed))
	if ok {
		jsonBody(resp, held)
	}
	return resp
}

func (s *Server) routeInfo(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic := req.Ext("topic")
	s.mu.Lock()
	rd, ok := s.table.Route(topic)
	s.mu.Unlock()
	if !ok {
		return remoting.NewResponse(req, rmq.RespTopicNotExist,
			"no route for topic "+strconv.Quote(topic)+" in the name server: create the topic on a broker, or enable auto-create")
	}
	return jsonBody(remoting.NewResponse(req, remoting.CodeSuccess, ""), rd)
}

func (s *Server) clusterInfo(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	s.mu.Lock()
	ci := s.table.ClusterInfo()
	s.mu.Unlock()
	return jsonBody(remoting.NewResponse(req, remoting.CodeSuccess, ""), ci)
}

func (s *Server) allTopics(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	s.mu.Lock()
	topics := s.table.Topics()
	s.mu.Unlock()
	return jsonBody(remoting.NewResponse(req, remoting.CodeSuccess, ""), struct {
		TopicList []string `json:"topicList"`
	}{topics})
}

func (s *Server) deleteTopic(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	topic := req.Ext("topic")
	s.mu.Lock()
	s.table.DeleteTopic(topic)
	s.mu.Unlock()
	s.log.Info("topic deleted", "topic", topic)
	return remoting.NewResponse(req, remoting.CodeSuccess, "")
}

func (s *Server) putKV(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ns, key := req.Ext("namespace"), req.Ext("key")
	if ns == "" || key == "" {
		return remoting.NewResponse(req, remoting.CodeSystemError, "namespace and key are required")
	}
	s.mu.Lock()
	s.table.PutKV(ns, key, req.Ext("value"))
	s.mu.Unlock()
	return remoting.NewResponse(req, remoting.CodeSuccess, "")
}

func (s *Server) getKV(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ns, key := req.Ext("namespace"), req.Ext("key")
	s.mu.Lock()
	v, ok := s.table.GetKV(ns, key)
	s.mu.Unlock()
	if !ok {
		return remoting.NewResponse(req, rmq.RespQueryNotFound, "no config item, namespace: "+ns+" key: "+key)
	}
	return remoting.NewResponse(req, remoting.CodeSuccess, "").SetExt("value", v)
}

func (s *Server) deleteKV(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	s.mu.Lock()
	s.table.DeleteKV(req.Ext("namespace"), req.Ext("key"))
	s.mu.Unlock()
	return remoting.NewResponse(req, remoting.CodeSuccess, "")
}

func (s *Server) kvList(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	ns := req.Ext("namespace")
	s.mu.Lock()
	m, ok := s.table.KVList(ns)
	s.mu.Unlock()
	if !ok {
		return remoting.NewResponse(req, rmq.RespQueryNotFound, "no config items in namespace "+ns)
	}
	return jsonBody(remoting.NewResponse(req, remoting.CodeSuccess, ""), kvTable{Table: m})
}
