package brokerfront

// A slave's 4.x producers (issue 17 item 5). The official 4.x clients
// poll routes every 30 s, so after a failover they keep sending to the old
// master for up to that long; once demoted it is a slave. A slave that
// knows its master (broker.Config.MasterAddr) and has a client to reach it
// (Options.Forward) relays SEND_MESSAGE, SEND_MESSAGE_V2 and
// SEND_BATCH_MESSAGE to the master instead of refusing them:
//
//   - each request goes as it came (its decoded header re-encoded, the
//     body copied), and the master's answer goes back as it came: its
//     code (SEND_OK, FLUSH_SLAVE_TIMEOUT, a refusal…), remark and ext
//     fields (msgId, queueId, queueOffset are the master's: the slave's
//     log is the master's, byte for byte). A oneway send is forwarded
//     oneway. The stored born host is the slave's address (remoting has
//     no field for it; the gRPC front's forwards do the same).
//   - sends to one queue (topic, queue id) of one read are forwarded one
//     after the other, in order; the others concurrently. At most
//     maxForwardedSends are in flight per front; beyond, a send is
//     SYSTEM_BUSY at once (producers retry).
//   - a send waits ForwardTimeout beyond the broker's ReplicationTimeout,
//     so a master waiting for its slaves answers before the forward gives
//     up. A master that cannot be reached (no answer in time, the
//     connection failed) is SERVICE_NOT_AVAILABLE with a sentence naming
//     it (the cause goes to the log); producers retry, and the message id
//     the master's dedup window knows makes a resend of a send that was
//     stored after all answer as the original.
//   - a forward is abandoned as soon as the group's master changes
//     (broker.Config.MasterMoved: a paused or cut-off master was replaced,
//     or this slave was promoted): SERVICE_NOT_AVAILABLE saying so, and
//     the producer's retry reaches the new master at once rather than
//     after the forward's timeout.
//   - a forwarded request carries ext rmq.ExtForwarded=true (the gRPC
//     front's forwards too); a slave never forwards such a request again
//     (two slaves naming each other during a route change refuse instead
//     of passing it around, and a slave not yet promoted does not pass a
//     gRPC front's forward on to the master it is replacing).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// DefaultForwardTimeout is Options.ForwardTimeout's default.
const DefaultForwardTimeout = 3 * time.Second

// maxForwardedSends bounds the sends a front has in flight to its master:
// they share the client's connection, on which the master runs at most
// remoting.DefaultMaxInFlightPerConn requests (with the gRPC front's
// forwards).
const maxForwardedSends = 128

// forwarder relays a slave's sends to its master.
type forwarder struct {
	f        *Front
	master   func() string
	moved    func() context.Context // broker.Config.MasterMoved (nil: no watch)
	cl       *remoting.Client
	timeout  time.Duration // ForwardTimeout + the broker's ReplicationTimeout
	inFlight atomic.Int64
	failing  atomic.Bool // the last forward failed: later failures log at Debug
}

// forwardTo returns the master to forward reqs to now, or "" when the
// front does not forward (a master, no source or client, none known), and
// a context that ends once that master is replaced (nil without
// broker.Config.MasterMoved).
func (f *Front) forwardTo() (string, context.Context) {
	w := f.fwd
	if w == nil || f.b.Role() != broker.RoleSlave {
		return "", nil
	}
	var moved context.Context
	if w.moved != nil {
		moved = w.moved() // before the address: a change after reading it ends the forwards
	}
	return w.master(), moved
}

// forwardSends relays the sends of one read to master (see the file
// comment) and returns, ascending, the indexes of those it leaves to the
// local path (sends forwarded to this slave already, which the broker
// refuses); it does not block.
func (w *forwarder) forwardSends(ctx context.Context, reqs []*remoting.Command, reply func(int, func() *remoting.Command), master string, moved context.Context) (local []int) {
	type queue struct {
		topic string
		id    int32
	}
	var chains [][]int
	var byQueue map[queue]int
	type fwd struct {
		req *remoting.Command // the client's
		out *remoting.Command // to the master
	}
	outs := make([]fwd, len(reqs))
	for i, req := range reqs {
		if req.Ext(rmq.ExtForwarded) != "" {
			local = append(local, i)
			continue
		}
		h, err := rmq.DecodeSendHeader(req)
		if err != nil {
			resp := remoting.NewResponse(req, rmq.RespMessageIllegal, err.Error())
			reply(i, func() *remoting.Command { return resp })
			continue
		}
		if n := w.inFlight.Add(1); n > maxForwardedSends {
			w.inFlight.Add(-1)
			resp := remoting.NewResponse(req, rmq.RespSystemBusy, fmt.Sprintf(
				"broker %s is a slave with %d sends in flight to its master, the most it forwards; retry shortly", w.f.name, maxForwardedSends))
			reply(i, func() *remoting.Command { return resp })
			continue
		}
		out := rmq.AppendSendHeader(remoting.NewRequest(req.Code, nil, bytes.Clone(req.Body)), h)
		out.Code = req.Code // V1, V2 and batch alike (AppendSendHeader writes the V2 letters, which all three read)
		out.AppendExt(rmq.ExtForwarded, "true")
		outs[i] = fwd{req: req, out: out}
		q := queue{h.Topic, h.QueueID}
		if h.QueueID < 0 {
			chains = append(chains, []int{i})
			continue
		}
		if byQueue == nil {
			byQueue = make(map[queue]int)
		}
		if c, ok := byQueue[q]; ok {
			chains[c] = append(chains[c], i)
			continue
		}
		byQueue[q] = len(chains)
		chains = append(chains, []int{i})
	}
	for _, chain := range chains {
		go func() {
			for _, i := range chain {
				o := outs[i]
				resp := w.forward(ctx, master, moved, o.req, o.out)
				w.inFlight.Add(-1)
				if resp == nil {
					reply(i, nil) // oneway: no answer
					continue
				}
				reply(i, func() *remoting.Command { return resp })
			}
		}()
	}
	return local
}

// forward sends out (the forwarded form of req) to master and returns the
// answer to give req's client (nil for a oneway request). When moved ends
// first (the group has another master) the forward is abandoned: the old
// master may be paused or cut off, and the producer's retry reaches the
// new one (the send may have been stored: the retry carries its message
// id, which the master's dedup window answers as the original).
func (w *forwarder) forward(ctx context.Context, master string, moved context.Context, req, out *remoting.Command) *remoting.Command {
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	ctx, stop := broker.WhileMasterStays(ctx, moved)
	defer stop()
	if req.IsOneway() {
		if err := w.cl.InvokeOneway(ctx, master, out); err != nil {
			w.unreachable(master, err)
		}
		return nil
	}
	resp, err := w.cl.Invoke(ctx, master, out)
	if err != nil {
		if errors.Is(context.Cause(ctx), broker.ErrMasterMoved) {
			w.f.log.Info("forward abandoned: the group has another master now; the producer retries there", "old_master", master)
			return remoting.NewResponse(req, rmq.RespServiceNotAvailable, fmt.Sprintf(
				"broker %s forwarded this send to its master at %s, but the group's master changed while it waited; retry: it goes to the new master", w.f.name, master))
		}
		return w.unreachable(master, err).build(req)
	}
	if w.failing.Load() && w.failing.CompareAndSwap(true, false) {
		w.f.log.Info("forwarding sends to the master again", "master", master)
	}
	relayed := remoting.NewResponse(req, resp.Code, resp.Remark)
	resp.EachExt(func(k, v string) { relayed.SetExt(k, v) })
	if len(resp.Body) > 0 {
		relayed.Body = bytes.Clone(resp.Body)
	}
	return relayed
}

// unavailable is the answer to a send whose forward failed.
type unavailable struct{ msg string }

func (u unavailable) build(req *remoting.Command) *remoting.Command {
	return remoting.NewResponse(req, rmq.RespServiceNotAvailable, u.msg)
}

// unreachable logs a failed forward (Warn for the first of a run of
// failures, then Debug) and returns the client's answer.
func (w *forwarder) unreachable(master string, err error) unavailable {
	name := w.f.name
	if !errors.Is(err, context.Canceled) {
		if !w.failing.Load() && w.failing.CompareAndSwap(false, true) {
			w.f.log.Warn("forwarding a send to the master failed", "master", master, "err", err)
		} else {
			w.f.log.Debug("forwarding a send to the master failed", "master", master, "err", err)
		}
	}
	return unavailable{msg: fmt.Sprintf("broker %s is a slave and cannot reach its master at %s, which takes the sends of %s; retry shortly (the master may be changing)", name, master, name)}
}
