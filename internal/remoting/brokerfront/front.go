package brokerfront

import (
	"cmp"
	"context"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
)

// Options configure a Front.
type Options struct {
	// Logger; default discard.
	Logger *slog.Logger
	// AwaitRoutes, if set, returns once the name servers have accepted the
	// topic changes made so far; a topic create or delete answers after
	// it, so that the route is there (or gone) when the client moves on.
	AwaitRoutes func(ctx context.Context) error
	// RouteWait bounds that wait; 0 means 3 s, negative: do not wait.
	RouteWait time.Duration
	// Forward, when set together with the broker's Config.MasterAddr, is
	// the client a slave forwards 4.x sends to its master with
	// (forward.go; the one the gRPC front's forwards use). It is not
	// closed by the front.
	Forward *remoting.Client
	// ForwardTimeout bounds a forwarded send beyond the broker's
	// ReplicationTimeout; 0 means DefaultForwardTimeout.
	ForwardTimeout time.Duration
	// Authenticated says the server's Guard authenticates every request
	// (--auth), so a request's AccessKey names its verified user. Only
	// then does get user (3004) answer a super user the password.
	Authenticated bool
	// BrokerConfig connects GET/UPDATE_BROKER_CONFIG to the process
	// (brokerconfig.go); zero: the broker's own settings only.
	BrokerConfig ConfigOptions
	// ClientCallTimeout bounds a request the broker forwards to a
	// consumer client (307, 309, 223; clientfwd.go); 0 means
	// DefaultClientCallTimeout.
	ClientCallTimeout time.Duration
	// TopicRoute, if set, reads a topic's readable queues on every broker
	// of its route from the name servers (NameServerRoutes; ErrNoRoute
	// when they know none): QUERY_ASSIGNMENT assigns over them
	// (assign.go). Nil: over this broker's queues.
	TopicRoute func(ctx context.Context, topic string) ([]broker.RouteQueue, error)
}

// defaultRouteWait bounds how long a topic change waits for the name
// servers by default.
const defaultRouteWait = 3 * time.Second

// Front serves the broker over remoting.
type Front struct {
	b    *broker.Broker
	log  *slog.Logger
	name string     // the broker's name
	fwd  *forwarder // nil: a slave refuses sends

	// mu guards conns: this front's connections by the broker's id (the
	// admin handlers look members up in it).
	mu    sync.Mutex
	conns map[uint64]*remoting.Conn

	awaitRoutes func(context.Context) error // nil: topic changes do not wait
	routeWait   time.Duration

	// authAdm is the broker's user and ACL store (auth.go): the broker
	// itself; tests put an in-memory one here.
	authAdm       authAdmin
	authenticated bool // Options.Authenticated

	// Broker configuration requests (brokerconfig.go).
	cfgOpts    ConfigOptions
	cfgMu      sync.Mutex      // serializes updates; guards cfgVersion
	cfgVersion rmq.DataVersion // counter: updates that changed a setting

	clientTimeout time.Duration // Options.ClientCallTimeout

	routes routeCache // QUERY_ASSIGNMENT's routes (assign.go)
}

type connIDKey struct{}

// New returns a front for b. Call Register to install its handlers and
// ConnClosed from the server's OnConnClose.
func New(b *broker.Broker, opts Options) *Front {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	bc := b.Config()
	f := &Front{b: b, log: opts.Logger.With("component", "brokerfront"), name: bc.BrokerName, conns: make(map[uint64]*remoting.Conn),
		authenticated: opts.Authenticated, clientTimeout: opts.ClientCallTimeout}
	f.authAdm = b
	f.routes = routeCache{read: opts.TopicRoute, routes: map[string]cachedRoute{}}
	f.cfgOpts, f.cfgVersion = opts.BrokerConfig, rmq.DataVersion{Timestamp: bc.Clock.Now().UnixMilli()}
	if opts.Forward != nil && bc.MasterAddr != nil {
		f.fwd = &forwarder{f: f, master: bc.MasterAddr, moved: bc.MasterMoved, cl: opts.Forward,
			timeout: cmp.Or(opts.ForwardTimeout, DefaultForwardTimeout) + bc.ReplicationTimeout}
	}
	if opts.RouteWait == 0 {
		opts.RouteWait = defaultRouteWait
	}
	if opts.AwaitRoutes != nil && opts.RouteWait > 0 {
		f.awaitRoutes, f.routeWait = opts.AwaitRoutes, opts.RouteWait
	}
	return f
}

// Register installs the handlers on s.
func (f *Front) Register(s *remoting.Server) {
	s.HandleBatch(f.send, rmq.CodeSendMessage, codeSendMessageV2, rmq.CodeSendBatchMessage)
	s.Handle(rmq.CodeSendReplyMessage, f.reply)   // reply.go
	s.Handle(rmq.CodeSendReplyMessageV2, f.reply) // reply.go
	s.Handle(rmq.CodePullMessage, f.pull)
	s.Handle(rmq.CodeQueryConsumerOffset, f.queryConsumerOffset)
	s.Handle(rmq.CodeUpdateConsumerOffset, f.updateConsumerOffset)
	s.Handle(rmq.CodeSearchOffsetByTimestamp, f.searchOffset)
	s.Handle(rmq.CodeGetMaxOffset, f.maxOffset)
	s.Handle(rmq.CodeGetMinOffset, f.minOffset)
	s.Handle(rmq.CodeHeartBeat, f.heartbeat)
	s.Handle(rmq.CodeUnregisterClient, f.unregisterClient)
	s.Handle(rmq.CodeGetConsumerListByGroup, f.consumerList)
	s.Handle(rmq.CodeLockBatchMQ, f.lockBatch)
	s.Handle(rmq.CodeUnlockBatchMQ, f.unlockBatch)
	s.Handle(rmq.CodeUpdateAndCreateTopic, f.createTopic)
	s.Handle(rmq.CodeDeleteTopicInBroker, f.deleteTopic)
	s.Handle(rmq.CodeGetAllSubscriptionGroup, f.allGroups)
	s.Handle(rmq.CodeUpdateAndCreateSubscriptionGroup, f.updateGroup)
	s.Handle(rmq.CodeDeleteSubscriptionGroup, f.deleteGroup)
	s.Handle(rmq.CodeGetAllTopicConfig, f.allTopics)
	s.Handle(rmq.CodeQueryMessage, f.queryMessage)
	s.Handle(rmq.CodeViewMessageByID, f.viewMessage)
	s.Handle(rmq.CodeConsumerSendMsgBack, f.sendBack)
	s.Handle(rmq.CodePetrelResendDLQ, f.resendDLQ)
	s.Handle(rmq.CodePetrelCancelDelayed, f.cancelDelayed)
	s.Handle(rmq.CodeRecallMessage, f.recall) // recall.go
	s.Handle(rmq.CodePetrelHandBackOffsets, f.handBack)
	s.Handle(rmq.CodeEndTransaction, f.endTransaction)
	s.Handle(rmq.CodeGetBrokerRuntimeInfo, f.runtimeInfo)
	s.Handle(rmq.CodeGetTopicStatsInfo, f.topicStats)
	s.Handle(rmq.CodeGetConsumerConnectionList, f.consumerConnections)
	s.Handle(rmq.CodeGetConsumeStats, f.consumeStats)
	s.Handle(rmq.CodeInvokeBrokerToResetOffset, f.resetOffset)
	s.Handle(rmq.CodeAuthCreateUser, f.createUser)
	s.Handle(rmq.CodeAuthUpdateUser, f.updateUser)
	s.Handle(rmq.CodeAuthDeleteUser, f.deleteUser)
	s.Handle(rmq.CodeAuthGetUser, f.getUser)
	s.Handle(rmq.CodeAuthListUser, f.listUsers)
	s.Handle(rmq.CodeAuthCreateACL, f.createACL)
	s.Handle(rmq.CodeAuthUpdateACL, f.updateACL)
	s.Handle(rmq.CodeAuthDeleteACL, f.deleteACL)
	s.Handle(rmq.CodeAuthGetACL, f.getACL)
	s.Handle(rmq.CodeAuthListACL, f.listACLs)
	f.registerPop(s)
	f.registerPopMore(s)
	f.registerConsumeBy(s)
	f.registerBrokerConfig(s)
	f.registerAdminMore(s)
	f.registerClientFwd(s)
	f.registerAssign(s)
	f.registerAdminList(s)
}

// id returns the connection's id, registering it with the broker on first
// use.
func (f *Front) id(c *remoting.Conn) uint64 {
	if v, ok := c.Value(connIDKey{}).(uint64); ok {
		return v
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := c.Value(connIDKey{}).(uint64); ok {
		return v
	}
	id := f.b.RegisterConn(broker.ConnInfo{Protocol: broker.ProtocolRemoting, Remote: addrPort(c.RemoteAddr())}, &remoteConn{f: f, c: c})
	c.SetValue(connIDKey{}, id)
	f.conns[id] = c
	return id
}

// ConnClosed tells the broker a connection is gone (its registration
// ends, its clients leave, its parked pulls are answered). Hook it to
// remoting.ServerOptions.OnConnClose.
func (f *Front) ConnClosed(c *remoting.Conn) {
	v, ok := c.Value(connIDKey{}).(uint64)
	if !ok {
		return
	}
	f.mu.Lock()
	delete(f.conns, v)
	f.mu.Unlock()
	f.b.ConnClosed(v)
}

// remoteConn is the broker's handler of one remoting connection.
type remoteConn struct {
	f *Front
	c *remoting.Conn
}

func (r *remoteConn) CheckTransaction(chk broker.TransactionCheck) bool {
	return r.f.sendCheck(r.c, chk)
}

func (r *remoteConn) NotifyConsumerIDsChanged(group string) { r.f.notifyConsumerIDsChanged(r.c, group) }

// Expired is never called: a remoting registration has no idle timeout
// (the connection's close ends it).
func (r *remoteConn) Expired() {}

// notifyConsumerIDsChanged sends NOTIFY_CONSUMER_IDS_CHANGED (40) to a
// member of the group so it rebalances at once; clients never answer it.
func (f *Front) notifyConsumerIDsChanged(c *remoting.Conn, group string) {
	req := rmq.EncodeNotifyConsumerIDsChanged(rmq.ConsumerGroupRequest{ConsumerGroup: group})
	if err := c.InvokeOneway(req); err != nil {
		f.log.Debug("notify consumer ids changed failed", "group", group, "remote", c.RemoteAddr().String(), "err", err)
	}
}

// addrPort turns a connection's remote address into the born host.
func addrPort(a net.Addr) netip.AddrPort {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.AddrPort()
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
