package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/ha"
	"github.com/petrelmq/petrel/internal/ha/epoch"
	"github.com/petrelmq/petrel/internal/ha/track"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/commitlog"
	"github.com/petrelmq/petrel/internal/vfs"
)

// replicated says whether the broker is a member of a replicated group: a
// slave, or a master that serves replication (--ha-listen). Every member
// bounds what it dispatches by the group's commit point.
func (c *BrokerConfig) replicated() bool {
	if c.controlled() { // the role is the controller's; replication needs --ha-listen
		return c.HA.Listen != ""
	}
	return c.Broker.Role == broker.RoleSlave || c.HA.Listen != ""
}

// replication is a broker's share of its group's replication: on a master
// the fetch server and the commit-point tracker, on a slave the fetcher.
type replication struct {
	log    *slog.Logger
	epochs *epoch.History

	tracker *track.Tracker // master
	master  *ha.Master     // master
	stop    chan struct{}  // ends the first-slave watch (master)
	wg      sync.WaitGroup

	slaveCfg ha.SlaveConfig // slave: set up by newReplication, started by startSlave
	slave    *ha.Slave
	st       *store.Store
}

// storeSource is the master's store as the fetch server reads it: the
// commit log's first retained byte is its MinOffset.
type storeSource struct{ *store.Store }

func (s storeSource) MinOffset() int64 { return s.CommitLogMinOffset() }

// joinedFile records, in the data directory, that a slave has joined the
// master's group: from then on a master with the default --sync-replicas
// waits for its slaves, also after a restart with none connected (no
// silent downgrade to a single broker). Exported by ha (petrel verify
// waits for it).
const joinedFile = ha.SlaveJoinedFile

// newReplication opens the epoch history and, on a master, starts the
// fetch server; the broker's Replicator and ReplicationStatus are set in
// bcfg unless the caller set them (tests). A slave's fetcher starts later (startSlave), once the registrar
// that learns its master exists.
func newReplication(cfg *BrokerConfig, st *store.Store, bcfg *broker.Config) (*replication, error) {
	fsys := cfg.Store.FS
	if fsys == nil {
		fsys = vfs.OS
	}
	clk := bcfg.Clock
	if clk == nil {
		clk = clock.Real
	}
	log := cfg.Logger
	dir := path.Join(cfg.Store.Dir, "ha")
	if err := fsys.MkdirAll(dir); err != nil {
		return nil, fmt.Errorf("broker: replication state in %s: %w", dir, err)
	}
	epochs, err := epoch.Open(fsys, path.Join(dir, "epochs"))
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	r := &replication{log: log, epochs: epochs, st: st, stop: make(chan struct{})}
	if bcfg.Role == broker.RoleSlave {
		st.SetReplica(true) // its log takes only the master's bytes
		r.slaveCfg = ha.SlaveConfig{Group: bcfg.BrokerName, ID: bcfg.BrokerID, Network: cfg.Network, Epochs: epochs, Logger: log, Clock: clk,
			Credentials: cfg.Security.haCredentials()}
		if bcfg.ReplicationStatus == nil {
			bcfg.ReplicationStatus = r.slaveStatus
		}
		return r, nil
	}
	joined, err := exists(fsys, path.Join(cfg.Store.Dir, joinedFile))
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	need := cfg.HA.SyncReplicas
	if cfg.HA.AwaitFirstSlave && !joined {
		need = 0
	}
	tcfg := track.DefaultConfig()
	tcfg.SyncReplicas = max(need, 0)
	tcfg.AsyncFlush = cfg.Store.FlushMode == commitlog.FlushAsync
	if err := tcfg.Validate(); err != nil {
		return nil, fmt.Errorf("broker: --sync-replicas: %w", err)
	}
	r.tracker = track.New(tcfg, clk, log)
	m, err := ha.StartMaster(ha.MasterConfig{
		Group: bcfg.BrokerName, Listen: cfg.HA.Listen, Network: netx.Or(cfg.Network), Tracker: r.tracker,
		Epochs: epochs, OnCommit: st.SetCommitPoint, Logger: log, Clock: clk, Linger: asyncLinger(bcfg),
		HWPushDelay: hwPushDelay, Authenticate: cfg.Security.haAuthenticate(),
	}, storeSource{st})
	if err != nil {
		return nil, fmt.Errorf("broker: replication listener (--ha-listen %s): %w", cfg.HA.Listen, err)
	}
	r.tracker.Restore(st.CommitPoint())
	r.master = m
	if bcfg.Replicator == nil {
		bcfg.Replicator = m
	}
	if bcfg.ReplicationStatus == nil {
		bcfg.ReplicationStatus = r.masterStatus
	}
	if need < cfg.HA.SyncReplicas {
		r.wg.Add(1)
		go r.awaitFirstSlave(fsys, path.Join(cfg.Store.Dir, joinedFile), cfg.HA.SyncReplicas)
	}
	return r, nil
}

// hwPushDelay: a slave learns a commit point move with the next bytes
// when they come within this long (ha.MasterConfig.HWPushDelay).
const hwPushDelay = 2 * time.Millisecond

// asyncLinger is how long the fetch server lets a response wait for more
// bytes: under async replication no send waits for the slaves, so it
// ships fewer, larger responses (1 ms); under sync replication none.
func asyncLinger(bcfg *broker.Config) time.Duration {
	if bcfg.ReplicationAsync {
		return time.Millisecond
	}
	return 0
}

// awaitFirstSlave raises the tracker's requirement to want, and records
// it on disk, once a slave has joined.
func (r *replication) awaitFirstSlave(fsys vfs.FS, marker string, want int) {
	defer r.wg.Done()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		if len(r.tracker.Stats().Slaves) == 0 {
			continue
		}
		if err := writeMarker(fsys, marker); err != nil {
			r.log.Error("cannot record that a slave joined; sends keep waiting for it only until a restart", "err", err)
		}
		if err := r.tracker.SetSyncReplicas(want); err != nil {
			r.log.Error("cannot require the slaves", "err", err)
			return
		}
		r.log.Info("a slave joined: sync sends now wait for the slaves", "sync_replicas", want)
		return
	}
}

// Addr is the master's replication address (its listener's).
func (r *replication) Addr() string { return r.master.Addr() }

// startSlave starts a slave's fetcher; master names the master's
// replication address ("" while unknown).
func (r *replication) startSlave(master func() string) error {
	r.slaveCfg.Master = master
	s, err := ha.StartSlave(r.slaveCfg, r.st)
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	r.slave = s
	return nil
}

func (r *replication) masterStatus() broker.ReplicationInfo {
	return masterInfo(r.tracker, r.epochs)
}

func (r *replication) slaveStatus() broker.ReplicationInfo {
	if r.slave == nil {
		return broker.ReplicationInfo{}
	}
	return slaveInfo(r.slave, r.slaveCfg.ID)
}

// masterInfo is a master's replication status: its tracker's commit point
// and slaves, and the epoch it writes in.
func masterInfo(tr *track.Tracker, epochs *epoch.History) broker.ReplicationInfo {
	st := tr.Stats()
	info := broker.ReplicationInfo{CommitPoint: st.HW}
	if e, ok := epochs.Last(); ok {
		info.Epoch = e.Epoch
	}
	for _, s := range st.Slaves {
		info.Replicas = append(info.Replicas, broker.ReplicaInfo{ID: s.ID, LagBytes: s.LagBytes, Lag: s.LagTime, InSync: s.InSync})
	}
	return info
}

// slaveInfo is slave id's replication status as its fetcher s sees it.
func slaveInfo(s *ha.Slave, id int64) broker.ReplicationInfo {
	ss := s.Status()
	return broker.ReplicationInfo{Epoch: ss.Epoch, CommitPoint: ss.HW, LogRestarts: ss.Restarts, Replicas: []broker.ReplicaInfo{{
		ID: id, LagBytes: ss.LagBytes, Lag: ss.LagTime, InSync: ss.Connected,
	}}}
}

// Close stops the fetch server or the fetcher.
func (r *replication) Close() error {
	close(r.stop)
	r.wg.Wait()
	var errs []error
	if r.master != nil {
		errs = append(errs, r.master.Close())
	}
	if r.slave != nil {
		errs = append(errs, r.slave.Close())
	}
	return errors.Join(errs...)
}

func exists(fsys vfs.FS, p string) (bool, error) {
	_, err := fsys.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func writeMarker(fsys vfs.FS, p string) error {
	f, err := fsys.Create(p)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return fsys.SyncDir(path.Dir(p))
}

// closeReplication stops the replication of d, if any (and controller
// mode's, closeControl).
func (d *Broker) closeReplication() error {
	err := d.closeControl()
	if d.repl == nil {
		return err
	}
	return errors.Join(err, d.repl.Close())
}

// closeControl stops controller mode, if on (idempotent).
func (d *Broker) closeControl() error {
	if d.ctl == nil {
		return nil
	}
	return d.ctl.Close()
}

// haAdvertise is the replication address a master registers: the
// advertised host with the port its fetch server listens on.
func (d *Broker) haAdvertise(adv string) string {
	if d.ctl != nil {
		return d.ctl.haAddr(adv)
	}
	if d.repl == nil || d.repl.master == nil {
		return ""
	}
	return HAAdvertise(adv, d.repl.Addr())
}

// masterHA returns where a slave finds its master's replication: the
// --ha-master address, or what the name servers last named.
func (d *Broker) masterHA(fixed string) func() string {
	return func() string {
		if fixed != "" {
			return fixed
		}
		return d.reg.Master().HAAddr
	}
}
