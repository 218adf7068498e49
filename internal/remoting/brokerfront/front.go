package brokerfront

import (
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
)

// Options configure a Front.
type Options struct {
	// Logger; default discard.
	Logger *slog.Logger
}

// Front serves the broker over remoting.
type Front struct {
	b   *broker.Broker
	log *slog.Logger

	nextID atomic.Uint64
	mu     sync.Mutex
	conns  map[uint64]*remoting.Conn
}

type connIDKey struct{}

// New returns a front for b. Call Register to install its handlers and
// ConnClosed from the server's OnConnClose.
func New(b *broker.Broker, opts Options) *Front {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	f := &Front{b: b, log: opts.Logger.With("component", "brokerfront"), conns: make(map[uint64]*remoting.Conn)}
	b.OnConsumerIDsChanged(f.notifyConsumerIDsChanged)
	b.OnTransactionCheck(f.sendCheck)
	return f
}

// Register installs the handlers on s.
func (f *Front) Register(s *remoting.Server) {
	s.OnReadIdle(f.readIdle)
	s.HandleAsync(codeSendMessage, f.send)
	s.HandleAsync(codeSendMessageV2, f.send)
	s.HandleAsync(codeSendBatchMessage, f.send)
	s.Handle(codePullMessage, f.pull)
	s.Handle(codeQueryConsumerOffset, f.queryConsumerOffset)
	s.Handle(codeUpdateConsumerOffset, f.updateConsumerOffset)
	s.Handle(codeSearchOffsetByTimestamp, f.searchOffset)
	s.Handle(codeGetMaxOffset, f.maxOffset)
	s.Handle(codeGetMinOffset, f.minOffset)
	s.Handle(codeHeartBeat, f.heartbeat)
	s.Handle(codeUnregisterClient, f.unregisterClient)
	s.Handle(codeGetConsumerListByGroup, f.consumerList)
	s.Handle(codeLockBatchMQ, f.lockBatch)
	s.Handle(codeUnlockBatchMQ, f.unlockBatch)
	s.Handle(codeUpdateAndCreateTopic, f.createTopic)
	s.Handle(codeDeleteTopicInBroker, f.deleteTopic)
	s.Handle(codeGetAllSubscriptionGroup, f.allGroups)
	s.Handle(codeUpdateAndCreateSubscriptionGroup, f.updateGroup)
	s.Handle(codeDeleteSubscriptionGroup, f.deleteGroup)
	s.Handle(codeGetAllTopicConfig, f.allTopics)
	s.Handle(codeQueryMessage, f.queryMessage)
	s.Handle(codeViewMessageByID, f.viewMessage)
	s.Handle(codeConsumerSendMsgBack, f.sendBack)
	s.Handle(codePetrelResendDLQ, f.resendDLQ)
	s.Handle(codePetrelCancelDelayed, f.cancelDelayed)
	s.Handle(codeEndTransaction, f.endTransaction)
	s.Handle(codeGetBrokerRuntimeInfo, f.runtimeInfo)
	s.Handle(codeGetTopicStatsInfo, f.topicStats)
	s.Handle(codeGetConsumerConnectionList, f.consumerConnections)
	s.Handle(codeGetConsumeStats, f.consumeStats)
	s.Handle(codeInvokeBrokerToResetOffset, f.resetOffset)
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
		req := remoting.NewRequest(codeNotifyConsumerIDsChanged, map[string]string{"consumerGroup": group}, nil)
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

func parseInt32(s string) int32 {
	v, _ := strconv.ParseInt(s, 10, 32)
	return int32(v)
}

func parseInt64(s string) int64 {
	v, _ := strconv.ParseInt(s, 10, 64)
	return v
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
