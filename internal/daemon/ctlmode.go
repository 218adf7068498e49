package daemon

// Controller mode (BrokerConfig.Controller; replication.md §2.6, §2.7):
// the controller, not the flags, owns a replica's role. At start the
// replica is a fenced slave (no writes); it registers with the controller
// (retrying with back-off until one answers), which assigns its replica id
// once (persisted in <data-dir>/ha/replica-id) and hands out an
// incarnation, then heartbeats every HeartbeatInterval. Every answer
// carries the group as committed; the role manager (rolemgr.go, one
// goroutine, so role changes never overlap) reconciles the replica with
// it: promotion when the view names this replica master at a newer epoch,
// demotion when it names another, the in-sync set (AlterISR) and a
// graceful transfer (Resign). A master acks only while it holds the lease
// its granted heartbeats extend (groupLease).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/controller/api"
	"github.com/petrelmq/petrel/internal/controller/client"
	"github.com/petrelmq/petrel/internal/ha"
	"github.com/petrelmq/petrel/internal/ha/epoch"
	"github.com/petrelmq/petrel/internal/ha/track"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/commitlog"
	"github.com/petrelmq/petrel/internal/vfs"
)

// ControllerConfig puts a broker in controller mode.
type ControllerConfig struct {
	// Addrs are the controller voters' addresses (--controller); empty:
	// not in controller mode.
	Addrs []string
	// HeartbeatInterval is how often the replica heartbeats the
	// controller leader (--controller-heartbeat-interval); default 500 ms.
	HeartbeatInterval time.Duration
	// CallTimeout bounds each call to the controller; default
	// 2×HeartbeatInterval, at least 1 s.
	CallTimeout time.Duration
	// SyncReplicasSet makes HAConfig.SyncReplicas (--sync-replicas given)
	// the slaves every write needs; unset, a group of n replicas needs
	// min(1, n−2): a 2-replica group stays writable after a failover, a
	// 3-replica group needs one slave.
	SyncReplicasSet bool
	// TransferWait bounds how long a master asked to transfer waits for
	// the target to hold its whole log before it gives up (and takes its
	// lease back); default 5 s.
	TransferWait time.Duration
}

// Defaults of ControllerConfig.
const (
	DefaultControllerHeartbeat = 500 * time.Millisecond
	defaultTransferWait        = 5 * time.Second
)

func (c *ControllerConfig) setDefaults() {
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultControllerHeartbeat
	}
	if c.CallTimeout <= 0 {
		c.CallTimeout = max(2*c.HeartbeatInterval, time.Second)
	}
	if c.TransferWait <= 0 {
		c.TransferWait = defaultTransferWait
	}
}

// controlled says whether the broker runs in controller mode.
func (c *BrokerConfig) controlled() bool { return len(c.Controller.Addrs) > 0 }

// ctlClient is the controller as a replica calls it
// (internal/controller/client's *Client).
type ctlClient interface {
	Register(context.Context, *api.RegisterRequest) (*api.RegisterResponse, error)
	Heartbeat(context.Context, *api.HeartbeatRequest) (*api.HeartbeatResponse, error)
	AlterISR(context.Context, *api.AlterISRRequest) (*api.GroupView, error)
	Resign(context.Context, *api.ResignRequest) (*api.GroupView, error)
	Close() error
}

// controlMode is a broker's controller-mode machinery.
type controlMode struct {
	cfg        ControllerConfig
	log        *slog.Logger
	clk        clock.Clock
	cl         ctlClient
	fsys       vfs.FS
	idPath     string
	token      string // registration token, persisted with the id (replicaid.go)
	cluster    string
	group      string
	st         *store.Store
	epochs     *epoch.History // nil without replication (no --ha-listen)
	ha         *haListener    // nil without --ha-listen
	network    netx.Network
	asyncFlush bool
	linger     time.Duration
	// haAuthn and haCreds: the replication port's authentication of
	// slaves (--auth) and the credentials this replica sends as a slave.
	haAuthn func(accessKey string, content, sig []byte) error
	haCreds ha.Credentials
	// syncReplicas >= 0: --sync-replicas given explicitly
	// (SyncReplicasSet); -1: the rule of minSlaves.
	syncReplicas int
	rep          *swapReplicator
	lease        *groupLease

	// Set by start (the parts built after broker.New).
	d *Broker

	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
	kick      chan struct{} // cap 1: the role manager has a view to apply
	hbNow     chan struct{} // cap 1: heartbeat at once

	mu       sync.Mutex // guards the fields below
	id       int64      // replica id (0 until the controller assigned one)
	inc      uint64     // incarnation of the last registration
	view     api.GroupView
	haveView bool
	// moved ends when the master the view names changes (masterMoved).
	moved       context.Context
	movedCancel context.CancelFunc
	registered  bool
	reregister  bool
	role        broker.Role
	epoch       uint32         // the epoch this replica is master of (role master)
	tracker     *track.Tracker // the master term's tracker (read by heartbeats)
	slave       *ha.Slave      // the slave term's fetcher (read by status)
	fenceGen    uint64         // bumped by every fence: older heartbeats' grants are void
	transfering bool           // a transfer under way: grants are not applied
	leaseEpoch  uint32         // +1: the epoch whose first grant was logged

	// Owned by the role manager goroutine.
	master         *ha.Master
	slaveOf        string
	isrApplied     uint64  // the view's ISRVersion last handed to the tracker (+1: 0 is none)
	isrTerm        uint32  // the epoch isrApplied belongs to
	isrMin         int     // the minSlaves last handed to the tracker
	isrPending     []int64 // slaves proposed for the set on the view of isrApplied, not yet settled
	noFollowLogged bool
	failedEpoch    uint32 // +1: the epoch whose promotion failure was logged at Error
	slaveErrLogged bool
	transferTried  [2]int64
	identity       [2]int64 // what the registrar registers: broker id, epoch
	regStarted     bool
	prevISR        []int64 // last in-sync set the tracker reported (OnInSync)
}

// newControlMode prepares controller mode before broker.New: it reads the
// persisted replica id, opens the epoch history and the --ha-listen
// listener, and sets the broker's start role (a fenced slave), lease,
// Replicator and status in cfg.Broker.
func newControlMode(cfg *BrokerConfig, st *store.Store) (_ *controlMode, err error) {
	cc := cfg.Controller
	cc.setDefaults()
	fsys := cfg.Store.FS
	if fsys == nil {
		fsys = vfs.OS
	}
	bcfg := &cfg.Broker
	clk := bcfg.Clock
	if clk == nil {
		clk = clock.Real
	}
	dir := path.Join(cfg.Store.Dir, "ha")
	if err := fsys.MkdirAll(dir); err != nil {
		return nil, fmt.Errorf("broker: controller mode state in %s: %w", dir, err)
	}
	c := &controlMode{
		cfg: cc, log: cfg.Logger.With("component", "controller_mode", "group", bcfg.BrokerName), clk: clk,
		fsys: fsys, idPath: path.Join(dir, replicaIDFile), cluster: bcfg.ClusterName, group: bcfg.BrokerName, st: st,
		network: cfg.Network, asyncFlush: cfg.Store.FlushMode == commitlog.FlushAsync, linger: asyncLinger(bcfg),
		haAuthn: cfg.Security.haAuthenticate(), haCreds: cfg.Security.haCredentials(),
		syncReplicas: -1, rep: &swapReplicator{}, lease: newGroupLease(clk),
		kick: make(chan struct{}, 1), hbNow: make(chan struct{}, 1), role: broker.RoleSlave,
	}
	if cc.SyncReplicasSet {
		c.syncReplicas = max(cfg.HA.SyncReplicas, 0)
	}
	st.SetReplica(true) // a fenced slave until the controller names it master
	if c.id, c.token, err = readReplicaID(fsys, c.idPath, c.group); err != nil {
		return nil, err
	}
	if c.token == "" {
		// Persisted before the first Register, so that a retry of one
		// whose answer was lost is the same replica, not a new one.
		if c.token, err = newReplicaToken(); err != nil {
			return nil, err
		}
		if err := writeReplicaID(fsys, c.idPath, c.cluster, c.group, c.id, c.token); err != nil {
			return nil, err
		}
	}
	if bcfg.BrokerID != 0 {
		c.log.Warn("controller mode: the broker id of the flags is ignored; the controller assigns the replica id", "broker_id", bcfg.BrokerID, "replica_id", c.id)
	}
	if cfg.HA.Listen != "" {
		if c.epochs, err = epoch.Open(fsys, path.Join(dir, "epochs")); err != nil {
			return nil, fmt.Errorf("broker: %w", err)
		}
		// An epoch is recorded (fsynced) before the bytes it describes, so
		// a crash can leave entries at or above the recovered log's end:
		// they describe nothing, and the next promotion's entry could not
		// follow them (the simulation's F3).
		if err := c.epochs.TruncateAfter(st.Written()); err != nil {
			return nil, fmt.Errorf("broker: drop the epochs above the log's end %d: %w", st.Written(), err)
		}
		if c.ha, err = newHAListener(cfg.Network, cfg.HA.Listen); err != nil {
			return nil, fmt.Errorf("broker: replication listener (--ha-listen %s): %w", cfg.HA.Listen, err)
		}
		if bcfg.Replicator == nil {
			bcfg.Replicator = c.rep
		}
		if bcfg.ReplicationStatus == nil {
			bcfg.ReplicationStatus = c.status
		}
	}
	bcfg.BrokerID, bcfg.Role = c.id, broker.RoleSlave
	if bcfg.Lease == nil {
		bcfg.Lease = c.lease
	}
	if bcfg.MasterAddr == nil {
		bcfg.MasterAddr = c.masterAddr
	}
	if bcfg.MasterMoved == nil {
		bcfg.MasterMoved = c.masterMoved
	}
	return c, nil
}

// masterAddr is the client address of the master the last view names
// ("" when it names none, or this replica).
func (c *controlMode) masterAddr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.view.Master == 0 || c.view.Master == c.id {
		return ""
	}
	for _, r := range c.view.Replicas {
		if r.ID == c.view.Master {
			return r.Addr
		}
	}
	return ""
}

// masterMoved returns a context that ends once the view names another
// master than now (or the same replica at another address): the gRPC
// front's forwards to a paused or cut-off master end with it.
func (c *controlMode) masterMoved() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.moved == nil {
		c.moved, c.movedCancel = context.WithCancel(context.Background())
	}
	return c.moved
}

// masterOf is the master's id and client address in v ("" when unknown).
func masterOf(v api.GroupView) (int64, string) {
	for _, r := range v.Replicas {
		if r.ID == v.Master {
			return v.Master, r.Addr
		}
	}
	return v.Master, ""
}

// haAddr is the replication address to register ("" without one).
func (c *controlMode) haAddr(adv string) string {
	if c.ha == nil {
		return ""
	}
	return HAAdvertise(adv, c.ha.Addr().String())
}

// start runs the registration, the heartbeats and the role manager.
func (c *controlMode) start(d *Broker, cl ctlClient) {
	c.d, c.cl = d, cl
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.wg.Add(2)
	go c.heartbeats()
	go c.manage()
}

// Close stops the heartbeats and the role manager, then the master or
// slave term; the lease is revoked first.
func (c *controlMode) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *controlMode) close() error {
	c.lease.Revoke()
	if c.cancel != nil {
		c.cancel()
		c.wg.Wait()
	}
	c.rep.set(nil)
	var errs []error
	if c.master != nil {
		errs = append(errs, c.master.Close())
		c.master = nil
	}
	c.stopSlave()
	if c.cl != nil {
		errs = append(errs, c.cl.Close())
	}
	if c.ha != nil {
		errs = append(errs, c.ha.Close())
	}
	return errors.Join(errs...)
}

// sleep waits d on the clock; false when closed.
func (c *controlMode) sleep(d time.Duration, wake <-chan struct{}) bool {
	ch := make(chan struct{})
	t := c.clk.AfterFunc(d, func() { close(ch) })
	defer t.Stop()
	select {
	case <-ch:
	case <-wake:
	case <-c.ctx.Done():
		return false
	}
	return true
}

// heartbeats registers, then heartbeats every interval (at once when the
// role manager asks: a new master's first lease).
func (c *controlMode) heartbeats() {
	defer c.wg.Done()
	for c.ctx.Err() == nil {
		c.mu.Lock()
		reg := !c.registered || c.reregister
		c.mu.Unlock()
		if reg {
			if !c.register() {
				return
			}
			continue
		}
		c.heartbeat()
		if !c.sleep(c.cfg.HeartbeatInterval, c.hbNow) {
			return
		}
	}
}

// lastEpoch is the epoch of the replica's last record (0: empty log).
func (c *controlMode) lastEpoch() uint32 {
	if c.epochs == nil {
		return 0
	}
	if w := c.st.Written(); w > 0 {
		if e, ok := c.epochs.EpochAt(w - 1); ok {
			return e
		}
	}
	return 0
}

// register registers with the controller until one answers (back-off
// 100 ms .. 5 s); false when closed.
func (c *controlMode) register() bool {
	backoff := 100 * time.Millisecond
	for attempt := 0; ; attempt++ {
		c.mu.Lock()
		id := c.id
		c.mu.Unlock()
		req := &api.RegisterRequest{Cluster: c.cluster, Group: c.group, ReplicaID: id, Token: c.token, Addr: c.d.advertise,
			HAAddr: c.haAddr(c.d.advertise), LastEpoch: c.lastEpoch(), LEO: c.st.Written(), Durable: c.st.Durable()}
		if a := c.d.GRPCAddr(); a != nil {
			req.GRPCAddr = HAAdvertise(c.d.advertise, a.String())
		}
		ctx, cancel := context.WithTimeout(c.ctx, c.cfg.CallTimeout)
		resp, err := c.cl.Register(ctx, req)
		cancel()
		if err == nil {
			if err := c.registeredAs(id, resp); err != nil {
				c.log.Error("controller mode: cannot keep the replica id the controller assigned; registering again", "err", err)
			} else {
				return true
			}
		} else if c.ctx.Err() != nil {
			return false
		} else if attempt%10 == 3 {
			c.log.Warn("controller mode: no controller accepted the registration yet; the replica stays a fenced slave and retries", "controller", c.cfg.Addrs, "err", err)
		}
		if !c.sleep(backoff, nil) {
			return false
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// registeredAs takes the controller's answer to a registration as id.
func (c *controlMode) registeredAs(id int64, resp *api.RegisterResponse) error {
	if resp.ReplicaID < 1 {
		return fmt.Errorf("the controller assigned replica id %d", resp.ReplicaID)
	}
	if resp.ReplicaID != id {
		if id != 0 {
			c.log.Error("controller mode: the controller answered another replica id than the persisted one; keeping the controller's", "persisted", id, "assigned", resp.ReplicaID)
		}
		if err := writeReplicaID(c.fsys, c.idPath, c.cluster, c.group, resp.ReplicaID, c.token); err != nil {
			return err
		}
	}
	c.mu.Lock()
	c.id, c.inc, c.registered, c.reregister = resp.ReplicaID, resp.Incarnation, true, false
	c.mu.Unlock()
	c.log.Info("registered with the controller", "replica_id", resp.ReplicaID, "incarnation", resp.Incarnation,
		"master", resp.Group.Master, "epoch", resp.Group.Epoch)
	c.post(resp.Group)
	return nil
}

// heartbeat sends one heartbeat and applies its answer.
func (c *controlMode) heartbeat() {
	c.mu.Lock()
	req := &api.HeartbeatRequest{Group: c.group, ReplicaID: c.id, Incarnation: c.inc, Master: c.role == broker.RoleMaster}
	gen, tr := c.fenceGen, c.tracker
	if req.Master {
		req.Epoch = c.epoch
	} else {
		req.Epoch = c.view.Epoch
	}
	slave := c.slave
	c.mu.Unlock()
	req.LastEpoch, req.LEO, req.Durable = c.lastEpoch(), c.st.Written(), c.st.Durable()
	req.HW = c.st.CommitPoint()
	if req.Master && tr != nil {
		req.HW = tr.HW()
		req.InSync = tr.InSync()
	} else if slave != nil {
		req.HW = slave.Status().HW
	}
	sent := c.clk.Now()
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.CallTimeout)
	resp, err := c.cl.Heartbeat(ctx, req)
	cancel()
	if err != nil {
		if c.ctx.Err() == nil {
			c.log.Debug("controller mode: heartbeat failed", "err", err)
		}
		return
	}
	if !resp.Registered {
		c.log.Warn("controller mode: the controller does not know this incarnation; registering again", "incarnation", req.Incarnation)
		c.mu.Lock()
		c.reregister = true
		c.mu.Unlock()
		return
	}
	if resp.Lease && req.Master {
		c.mu.Lock()
		if c.role == broker.RoleMaster && c.epoch == req.Epoch && c.fenceGen == gen && !c.transfering {
			c.lease.Extend(sent.Add(time.Duration(resp.LeaseMillis) * time.Millisecond))
			if c.leaseEpoch != req.Epoch+1 {
				c.leaseEpoch = req.Epoch + 1
				c.log.Info("controller mode: master lease granted; sends are acked", "epoch", req.Epoch, "lease", time.Duration(resp.LeaseMillis)*time.Millisecond)
			}
		}
		c.mu.Unlock()
	}
	c.post(resp.Group)
}

// post hands a group view to the role manager; an older view (lower
// epoch, or the same epoch with a lower in-sync set version) than the
// last one is dropped (a deposed controller's).
func (c *controlMode) post(v api.GroupView) {
	c.mu.Lock()
	if c.haveView && (v.Epoch < c.view.Epoch || v.Epoch == c.view.Epoch && v.ISRVersion < c.view.ISRVersion) {
		c.mu.Unlock()
		return
	}
	oldID, oldAddr := masterOf(c.view)
	c.view, c.haveView = v, true
	if id, addr := masterOf(v); (id != oldID || addr != oldAddr) && c.movedCancel != nil {
		c.movedCancel()
		c.moved, c.movedCancel = nil, nil
	}
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// heartbeatNow makes the heartbeat loop send at once.
func (c *controlMode) heartbeatNow() {
	select {
	case c.hbNow <- struct{}{}:
	default:
	}
}

// minSlaves is how many in-sync slaves a write needs in a group of n
// replicas: --sync-replicas when given, else min(1, n−2) (a 2-replica
// group stays writable after a failover, a 3-replica group needs one
// slave).
func (c *controlMode) minSlaves(n int) int {
	if c.syncReplicas >= 0 {
		return c.syncReplicas
	}
	return max(0, min(1, n-2))
}

// status is the broker's ReplicationStatus in controller mode.
func (c *controlMode) status() broker.ReplicationInfo {
	c.mu.Lock()
	tr, s, id, role := c.tracker, c.slave, c.id, c.role
	c.mu.Unlock()
	if role == broker.RoleMaster && tr != nil {
		return masterInfo(tr, c.epochs)
	}
	if s == nil {
		return broker.ReplicationInfo{CommitPoint: c.st.CommitPoint()}
	}
	return slaveInfo(s, id)
}

// without returns ids minus id, sorted.
func without(ids []int64, id int64) []int64 {
	out := make([]int64, 0, len(ids))
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

// newControllerClient is the client of the controller addresses.
func newControllerClient(cfg *BrokerConfig, cc ControllerConfig) ctlClient {
	return client.New(cc.Addrs, client.Options{Network: cfg.Network, Timeout: cc.CallTimeout, Logger: cfg.Logger, ConfiguredOnly: true, Sign: cfg.Security.Sign()})
}
