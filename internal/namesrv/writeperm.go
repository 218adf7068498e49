package namesrv

// Drains: WIPE_WRITE_PERM_OF_BROKER (205) and ADD_WRITE_PERM_OF_BROKER
// (327), what `mqadmin wipeWritePerm` / `addWritePerm` and `petrel broker
// drain` / `undrain` send to every name server.
//
// RocketMQ's name server rewrites the perm of the broker name's queue
// data in its topic table (wipe: perm &^ WRITE; add: perm = READ|WRITE)
// and answers the number of topics touched. The rewritten queue data
// holds until the broker's next registration that carries a changed data
// version or comes first after the broker was gone (a restart): then the
// broker's own perms come back, and the drain with them, unless the
// broker's brokerPermission was lowered too (mqadmin updateBrokerConfig
// -k brokerPermission -v 4), which its registrations then carry.
//
// Petrel keeps the drain as a mark on the broker name instead, applied
// whenever a route is built (Table.routedPerm): no registration, full or
// delta, heartbeat or restart of the broker, undoes it; only
// ADD_WRITE_PERM does, and then each topic's registered perm is routed
// again (a topic registered read-only stays read-only, where RocketMQ
// would make it writable). The mark is the name server's memory only: a
// restarted name server has none, which is why `petrel broker drain`
// reports each name server's answer, and why a drain meant to outlast a
// name-server restart also lowers the broker's brokerPermission. The
// count answered is the number of topics the table routes for the broker
// name, as RocketMQ counts the queue data it touched. At most
// MaxDrainedBrokers broker names are marked at once.

import (
	"context"
	"fmt"

	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// MaxDrainedBrokers bounds the broker names a name server holds wiped;
// a wipe beyond it is refused (a name server without auth takes writes
// from anyone).
const MaxDrainedBrokers = 4096

// ErrTooManyDrained is returned by WipeWritePerm when MaxDrainedBrokers
// broker names are already wiped.
var ErrTooManyDrained = fmt.Errorf("namesrv: %d broker names are drained already, the limit; undrain some with ADD_WRITE_PERM_OF_BROKER (petrel broker undrain)", MaxDrainedBrokers)

// WipeWritePerm drains broker name: from now on its queues are routed
// without write permission, whatever its processes register, until
// AddWritePerm. It returns the number of topics routed for the broker
// name (0 when none is registered; the mark is kept anyway, for the
// broker that registers it later).
func (t *Table) WipeWritePerm(broker string) (int, error) {
	if _, ok := t.wiped[broker]; !ok {
		if len(t.wiped) >= MaxDrainedBrokers {
			return 0, ErrTooManyDrained
		}
		t.wiped[broker] = struct{}{}
	}
	return len(t.topicsOf(broker)), nil
}

// AddWritePerm ends a drain of broker name: its queues are routed with
// the perms its master registered. It returns the number of topics
// routed for the broker name.
func (t *Table) AddWritePerm(broker string) int {
	delete(t.wiped, broker)
	return len(t.topicsOf(broker))
}

// Drained reports whether broker name is drained.
func (t *Table) Drained(broker string) bool {
	_, ok := t.wiped[broker]
	return ok
}

// routedPerm is the perm a route gives broker name's queues of a topic
// registered with perm.
func (t *Table) routedPerm(broker string, perm int32) int32 {
	if _, ok := t.wiped[broker]; ok {
		return perm &^ rmq.PermWrite
	}
	return perm
}

func (s *Server) wipeWritePerm(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeWritePermRequest(req)
	if err != nil {
		return fail(req, rmq.RespInvalidParameter, err)
	}
	s.mu.Lock()
	n, err := s.table.WipeWritePerm(h.BrokerName)
	s.mu.Unlock()
	if err != nil {
		return fail(req, rmq.RespSystemBusy, err)
	}
	s.log.Info("broker write permission wiped", "broker", h.BrokerName, "topics", n, "remote", remote(c))
	return rmq.EncodeWritePermResponse(req, n)
}

func (s *Server) addWritePerm(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	h, err := rmq.DecodeWritePermRequest(req)
	if err != nil {
		return fail(req, rmq.RespInvalidParameter, err)
	}
	s.mu.Lock()
	n := s.table.AddWritePerm(h.BrokerName)
	s.mu.Unlock()
	s.log.Info("broker write permission restored", "broker", h.BrokerName, "topics", n, "remote", remote(c))
	return rmq.EncodeWritePermResponse(req, n)
}

func remote(c *remoting.Conn) string {
	if c == nil {
		return ""
	}
	return c.RemoteAddr().String()
}
