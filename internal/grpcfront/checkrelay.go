package grpcfront

// Check-backs of halves sent through a slave. The master checks an
// undecided half back with a producer of its group connected to it; a 5.x
// producer on a slave's endpoint is connected to the slave only. So the
// slave's front registers itself with the master as a producer of the
// groups its clients send halves for (a HEART_BEAT on a connection of its
// own, as RocketMQ's proxy registers its clients' groups with the
// brokers), and relays each CHECK_TRANSACTION_STATE the master sends on
// that connection to one of its producers of the group, on its Telemetry
// stream (the same RecoverOrphanedTransactionCommand a master's front
// sends). The producer's answer is an EndTransaction through the slave,
// forwarded with the offsets the check named.
//
// The registration is made before each forwarded half of a new group or on
// a new connection, and renewed every relayAnnounceEvery (on the front's
// clock) for the groups that still have producers here: the master keeps a
// producer group for its ClientExpiry, and a master that restarted, or a
// connection that broke, learns the groups again. A check the slave
// cannot relay (no producer of the group here now, its stream full) is
// dropped; the master checks again at its next round.

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// relayAnnounceEvery is how often the relay renews its registration.
const relayAnnounceEvery = 30 * time.Second

// maxRelayGroups bounds the producer groups the relay registers; halves of
// more groups are still forwarded, their check-backs not relayed.
const maxRelayGroups = 4096

// checkRelay registers a slave's transactional producers with its master
// and relays the master's check-backs to them.
type checkRelay struct {
	s      *Server
	master func() string
	cl     *remoting.Client // owned: closed by close
	clk    clock.Clock
	log    *slog.Logger

	mu        sync.Mutex
	groups    []string       // registered groups, sorted
	announced *remoting.Conn // the connection the master knows them on
	sent      []string       // the groups last announced there
	timer     clock.Timer    // the next renewal
	closed    bool
	id        string // the client id it registers under
}

func newCheckRelay(s *Server, cfg Config) *checkRelay {
	r := &checkRelay{s: s, master: cfg.Master, clk: s.clk, log: s.log,
		id: fmt.Sprintf("petrel-slave-grpc@%s-%d", s.b.Config().BrokerName, s.b.Config().BrokerID)}
	r.cl = remoting.NewClient(remoting.ClientOptions{Network: cfg.Network, Logger: cfg.Logger, Handler: r.handle, Sign: cfg.Sign})
	r.mu.Lock()
	r.timer = r.clk.AfterFunc(relayAnnounceEvery, r.renew)
	r.mu.Unlock()
	return r
}

// close stops renewals and the relay's connection.
func (r *checkRelay) close() {
	r.mu.Lock()
	r.closed = true
	if r.timer != nil {
		r.timer.Stop()
	}
	r.mu.Unlock()
	r.cl.Close()
}

// renew re-announces the groups that still have producers here (while
// the broker is a slave: the master drops a producer group not named for
// its ClientExpiry, default 120 s) and schedules the next renewal. A group
// without a producer here any more is left out, so that the master
// expires it and keeps its halves open instead of counting checks nobody
// can answer.
func (r *checkRelay) renew() {
	if r.s.b.Role() == broker.RoleSlave {
		r.mu.Lock()
		r.groups = slices.DeleteFunc(r.groups, func(g string) bool { return len(r.s.b.ProducerConns(g)) == 0 })
		r.mu.Unlock()
		ctx, cancel := context.WithTimeout(r.s.stop, r.s.cfg.ForwardTimeout)
		r.ensure(ctx, "", true)
		cancel()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.timer = r.clk.AfterFunc(relayAnnounceEvery, r.renew)
	}
}

// ensure makes sure the master knows this front as a producer of group
// (and of the other registered groups) on the relay's current connection:
// a HEART_BEAT when the group is new, the connection is, or force.
// Failures are logged: a send is not refused for them.
func (r *checkRelay) ensure(ctx context.Context, group string, force bool) {
	addr := r.master()
	if addr == "" {
		return
	}
	r.mu.Lock()
	if group != "" {
		if i, found := slices.BinarySearch(r.groups, group); !found && len(r.groups) < maxRelayGroups {
			r.groups = slices.Insert(r.groups, i, group)
		}
	}
	empty := len(r.groups) == 0
	r.mu.Unlock()
	if empty {
		return
	}
	conn, err := r.cl.Conn(ctx, addr)
	if err != nil {
		r.log.Debug("cannot register the slave's producers with the master", "master", addr, "err", err)
		return
	}
	r.mu.Lock()
	if !force && conn == r.announced && slices.Equal(r.sent, r.groups) {
		r.mu.Unlock()
		return
	}
	hb := rmq.HeartbeatData{ClientID: r.id, ConsumerDataSet: []rmq.ConsumerData{}}
	for _, g := range r.groups {
		hb.ProducerDataSet = append(hb.ProducerDataSet, rmq.ProducerData{GroupName: g})
	}
	sent := slices.Clone(r.groups)
	r.mu.Unlock()
	resp, err := conn.Invoke(ctx, rmq.EncodeHeartbeat(hb))
	if err != nil || resp.Code != rmq.RespSuccess {
		r.log.Warn("cannot register the slave's producers with the master: their halves are not checked back until it succeeds",
			"master", addr, "err", err, "code", codeOf(resp))
		return
	}
	r.mu.Lock()
	r.announced, r.sent = conn, sent
	r.mu.Unlock()
}

func codeOf(c *remoting.Command) int16 {
	if c == nil {
		return -1
	}
	return c.Code
}

// handle answers what the master sends on the relay's connection: check-
// backs (oneway) are relayed; anything else is not supported.
func (r *checkRelay) handle(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	if req.Code != rmq.CodeCheckTransactionState {
		return remoting.NewResponse(req, rmq.RespRequestCodeNotSupported, fmt.Sprintf("request code %d is not supported here", req.Code))
	}
	h, err := rmq.DecodeCheckTransactionState(req)
	if err != nil {
		r.log.Warn("a check-back from the master cannot be read", "err", err)
		return nil
	}
	body := bytes.Clone(req.Body) // the frame's buffer is reused
	rec := message.Record(body)
	if _, err := message.Check(rec); err != nil {
		r.log.Warn("a check-back from the master carries no half message", "err", err)
		return nil
	}
	pg, _ := rec.Property(message.PropertyProducerGroup)
	group := string(pg)
	id := h.TransactionID
	if id == "" {
		id = h.MsgID
	}
	r.s.fwd.halves.put(halfKey{group, id}, halfAt{phys: h.CommitLogOffset, queueOffset: h.TranStateTableOffset})
	chk := broker.TransactionCheck{Group: group, Body: body, Header: broker.TransactionCheckHeader{
		TranStateTableOffset: h.TranStateTableOffset, CommitLogOffset: h.CommitLogOffset,
		MsgID: h.MsgID, TransactionID: h.TransactionID, OffsetMsgID: h.OffsetMsgID,
	}}
	conns := r.s.b.ProducerConns(group)
	start := 0
	if len(conns) > 0 {
		start = rand.IntN(len(conns))
	}
	for i := range conns {
		chk.Conn = conns[(start+i)%len(conns)]
		if r.s.sendCheck(chk) {
			return nil
		}
	}
	r.log.Debug("check-back from the master not relayed: no producer of the group can take it here", "group", group)
	return nil
}
