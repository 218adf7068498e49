package daemon

import (
	"context"
	"errors"
	"fmt"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/broker/staterec"
	"github.com/petrelmq/petrel/internal/namesrv"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// handBackPeer is how a slave reaches its master's broker front; set once
// the client and the registrar exist (after broker.New).
type handBackPeer struct {
	client *remoting.Client
	reg    *namesrv.Registrar
}

// setupStateReplication turns the state stream on for every member of a
// replicated group (a single broker writes none), and on a slave wires the
// hand-back of offsets committed on it to its master.
func (d *Broker) setupStateReplication(cfg *BrokerConfig) {
	if !cfg.replicated() {
		return
	}
	cfg.Broker.StateReplication = true
	if cfg.Broker.Role == broker.RoleSlave && cfg.Broker.HandBackOffsets == nil {
		cfg.Broker.HandBackOffsets = d.handBackOffsets
	}
}

var errNoMaster = errors.New("daemon: the master's address is not known yet")

// masterAddr is the client address of the master of this slave's group:
// in controller mode the one the controller committed (known at once on a
// failover), else the one the name servers named.
func (d *Broker) masterAddr() string {
	if d.ctl != nil {
		return d.ctl.masterAddr()
	}
	return d.reg.Master().Addr
}

// masterMoved is the gRPC front's Config.MasterMoved in controller mode:
// a context that ends once the controller names another master.
func (d *Broker) masterMoved() context.Context { return d.ctl.masterMoved() }

// handBackOffsets sends offs to the master named by the name servers (or
// the controller).
func (d *Broker) handBackOffsets(ctx context.Context, offs []broker.OffsetEntry) (broker.HandBack, error) {
	p := d.handBack.Load()
	if p == nil {
		return broker.HandBack{}, errNoMaster
	}
	addr := d.masterAddr()
	if addr == "" {
		return broker.HandBack{}, errNoMaster
	}
	in := make([]staterec.Offset, len(offs))
	for i, o := range offs {
		in[i] = staterec.Offset{Group: o.Group, Topic: o.Topic, QueueID: o.QueueID, Offset: o.Offset}
	}
	resp, err := p.client.Invoke(ctx, addr, rmq.EncodeHandBackRequest(in))
	if err != nil {
		return broker.HandBack{}, err
	}
	if resp.Code != rmq.RespSuccess {
		return broker.HandBack{}, fmt.Errorf("daemon: the master %s refused the hand-back (code %d): %s", addr, resp.Code, resp.Remark)
	}
	out, end, err := rmq.DecodeHandBackResponse(resp, len(offs))
	if err != nil {
		return broker.HandBack{}, err
	}
	return broker.HandBack{Offsets: out, StateEnd: end}, nil
}
