package brokerfront

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
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
}

// defaultRouteWait bounds how long a topic change waits for the name
// servers by default.
const defaultRouteWait = 3 * time.Second

// Front serves the broker over remoting.
type Front struct {
	b   *broker.Broker
	log *slog.Logger

	nextID atomic.Uint64
	mu     sync.Mutex
	conns  map[uint64]*remoting.Conn

	awaitRoutes func(context.Context) error // nil: topic changes do not wait
	routeWait   time.Duration
}

type connIDKey struct{}

// New returns a front for b. Call Register to install its handlers and
// ConnClosed from the server's OnConnClose.
func New(b *broker.Broker, opts Options) *Front {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	f := &Front{b: b, log: opts.Logger.With("component", "brokerfront"), conns: make(map[uint64]*remoting.Conn)}
	if opts.RouteWait == 0 {
		opts.RouteWait = defaultRouteWait
	}
	if opts.AwaitRoutes != nil && opts.RouteWait > 0 {
		f.awaitRoutes, f.routeWait = opts.AwaitRoutes, opts.RouteWait
	}
	b.OnConsumerIDsChanged(f.notifyConsumerIDsChanged)
	b.OnTransactionCheck(f.sendCheck)
	return f
}

// Register installs the handlers on s.
func (f *Front) Register(s *remoting.Server) {
	s.HandleBatch(f.send, rmq.CodeSendMessage, codeSendMessageV2, rmq.CodeSendBatchMessage)
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
	s.Handle(rmq.CodeEndTransaction, f.endTransaction)
	s.Handle(rmq.CodeGetBrokerRuntimeInfo, f.runtimeInfo)
	s.Handle(rmq.CodeGetTopicStatsInfo, f.topicStats)
	s.Handle(rmq.CodeGetConsumerConnectionList, f.consumerConnections)
	s.Handle(rmq.CodeGetConsumeStats, f.consumeStats)
	s.Handle(rmq.CodeInvokeBrokerToResetOffset, f.resetOffset)
}

// id returns the connection's id, assigning one on first use.
func (f *Front) id(c *remoting.Conn) uint64 {
	if v, ok := c.Value(connIDKey{}).(uint64); ok {
		return v
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := c.Value(connIDKey{}).(uint64); ok {
		return v
	}
	id := f.nextID.Add(1)
	c.SetValue(connIDKey{}, id)
	f.conns[id] = c
	return id
}

// ConnClosed tells the broker a connection is gone (its clients leave, its
// parked pulls are answered). Hook it to remoting.ServerOptions.OnConnClose.
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

// notifyConsumerIDsChanged sends NOTIFY_CONSUMER_IDS_CHANGED (40) to the
// group's members so they rebalance at once; clients never answer it.
func (f *Front) notifyConsumerIDsChanged(group string, conns []uint64) {
	for _, id := range conns {
		f.mu.Lock()
		c := f.conns[id]
		f.mu.Unlock()
		if c == nil {
			continue
		}
		req := remoting.NewRequest(rmq.CodeNotifyConsumerIDsChanged, map[string]string{"consumerGroup": group}, nil)
		if err := c.InvokeOneway(req); err != nil {
			f.log.Debug("notify consumer ids changed failed", "group", group, "remote", c.RemoteAddr().String(), "err", err)
		}
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

// numbers parses a request's numeric ext fields, remembering the first
// that is not a number: the request is then refused with a remark that
// names it, instead of running with 0 (Java refuses such a header too). An
// absent or empty field is 0.
type numbers struct {
	field, value string // the first field that did not parse
	bits         int
}

func (n *numbers) int32(field, v string) int32 {
	return int32(n.parse(field, v, 32))
}

func (n *numbers) int64(field, v string) int64 { return n.parse(field, v, 64) }

func (n *numbers) parse(field, v string, bits int) int64 {
	if v == "" {
		return 0
	}
	x, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		if n.field == "" {
			n.field, n.value, n.bits = field, v, bits
		}
		return 0
	}
	return x
}

// refused is the answer to a request with a field that did not parse
// (code: MESSAGE_ILLEGAL for sends, SYSTEM_ERROR for the rest, as Java),
// or nil when all did.
func (n *numbers) refused(req *remoting.Command, code int16) *remoting.Command {
	if n.field == "" {
		return nil
	}
	v := n.value
	if len(v) > 64 {
		v = v[:64] + "..."
	}
	return remoting.NewResponse(req, code, fmt.Sprintf("request header field %s is %q, not a %d-bit integer; send it as decimal digits", n.field, v, n.bits))
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
