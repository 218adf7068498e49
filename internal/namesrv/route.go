package namesrv

import (
	"slices"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// MasterID is the broker id of a master; every other id is a slave.
const MasterID = rmq.MasterID

// OrderTopicNamespace is the KV namespace whose values (keyed by topic)
// become a route's orderTopicConf, as in Java.
const OrderTopicNamespace = "ORDER_TOPIC_CONFIG"

// BrokerID names one broker process: a broker name shared by a master and
// its slaves, the cluster it belongs to, and its id (0 = master).
type BrokerID struct {
	Cluster string
	Name    string
	ID      int64
}

// The table holds what brokers register and answers in the shapes clients
// read: the wire structs of package rmq.
type (
	// TopicConfig is one topic as a broker registers it (Java TopicConfig;
	// 5.x "attributes" are dropped).
	TopicConfig = rmq.RegisteredTopic
	// DataVersion identifies a broker's topic set; the broker changes it
	// whenever a topic changes (Java DataVersion).
	DataVersion = rmq.DataVersion
	// QueueData is a route's entry for one broker's queues of a topic.
	QueueData = rmq.QueueData
	// BrokerData lists the addresses of one broker name, by broker id.
	BrokerData = rmq.BrokerData
	// RouteData is a topic route, the answer to GET_ROUTEINFO_BY_TOPIC.
	RouteData = rmq.TopicRouteData
	// ClusterInfo is the answer to GET_BROKER_CLUSTER_INFO: every live
	// broker name with its addresses, and the broker names of each cluster.
	ClusterInfo = rmq.ClusterInfo
)

// Registration is one REGISTER_BROKER request, decoded.
type Registration struct {
	Broker       BrokerID
	Addr         string // address clients dial
	HAServerAddr string
	Version      DataVersion // the broker's data version after this registration
	// Topics is, for a full registration, the broker's complete topic set;
	// for a delta, the topics added or changed since BaseVersion. Register
	// keeps the map: the caller must not use it afterwards.
	Topics map[string]TopicConfig
	// Removed lists topics deleted since BaseVersion (delta only).
	Removed []string
	// Delta marks an incremental registration on top of BaseVersion.
	Delta       bool
	BaseVersion DataVersion
	// Session identifies the connection the registration came on; when it
	// closes, DropSession removes the broker. 0 means none.
	Session uint64
	// MasterEpoch is the master epoch the broker claims (ext
	// petrelMasterEpoch; controller mode); 0: none (official brokers).
	MasterEpoch uint32
}

// RegisterResult is the table's answer to a registration.
type RegisterResult struct {
	// NeedFull reports a refused delta: the table does not hold the
	// broker at BaseVersion (unknown broker, expired, restarted name
	// server, other address). Nothing was changed.
	NeedFull bool
	// Version is the data version the table now holds for the broker.
	Version DataVersion
	// MasterAddr and MasterHAAddr name the master of a slave's broker
	// name, when one is registered.
	MasterAddr   string
	MasterHAAddr string
	// Stale reports a full registration ignored because the table holds
	// the same broker process at a newer version (a registration that
	// was delayed in the network). Nothing was changed.
	Stale bool
	// Ignored reports a claim to broker id 0 with a lower master epoch
	// than the live master's (HeldEpoch): a deposed master that has not
	// learned it yet. Nothing was changed; MasterAddr and MasterHAAddr
	// name the live master.
	Ignored   bool
	HeldEpoch uint32
}

// staleVersion reports whether a full registration at v is older than the
// version held for the same broker process: both its counter and its
// timestamp are behind. A broker that restarted with a new topic table
// (counter reset) registers with a later timestamp and is not stale.
func staleVersion(v, held DataVersion) bool {
	return v.Counter < held.Counter && v.Timestamp <= held.Timestamp
}

type instance struct {
	BrokerID
	addr     string
	haAddr   string
	epoch    uint32 // master epoch of its last registration (0: none)
	version  DataVersion
	lastSeen time.Time
	session  uint64
	// topics is the registered topic set; kept for masters only, since
	// routes take queue data from masters.
	topics map[string]TopicConfig
}

// Table is the name server's route table: live broker processes, the topics
// of each master, and the KV configuration. It is a pure state machine —
// no goroutines, sockets or clock; callers pass the time in — and it is not
// safe for concurrent use.
//
// A broker name whose master is gone while a slave of it is still live
// keeps the master's last topic set (orphans), so that its queues stay in
// routes with only the slaves in brokerAddrs: consumers keep reading them
// from a slave, and producers, which send only to a listed master, move to
// the other broker names (RocketMQ's name server keeps a broker name's
// queue data until its last address is gone). The master's next full
// registration replaces the kept set.
//
// Invariant: topicIndex[t] holds broker name n exactly when the live master
// of n has topic t, or n has no live master, a live slave, and t in
// orphans[n].
type Table struct {
	brokers    map[string]map[int64]*instance // broker name -> id -> process
	topicIndex map[string]map[string]struct{} // topic -> broker names
	kv         map[string]map[string]string   // namespace -> key -> value
	orphans    map[string]map[string]TopicConfig
	wiped      map[string]struct{} // broker names drained by an operator (writeperm.go)
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{
		brokers:    map[string]map[int64]*instance{},
		topicIndex: map[string]map[string]struct{}{},
		kv:         map[string]map[string]string{},
		orphans:    map[string]map[string]TopicConfig{},
		wiped:      map[string]struct{}{},
	}
}

// Register applies a full or delta registration received at now. A full
// registration replaces everything known about the broker process, unless
// the table holds that process (same address) at a newer version (see
// RegisterResult.Stale): an older version never replaces a newer one. A
// delta applies only when the table holds the broker at r.BaseVersion and
// from r.Addr, otherwise it changes nothing and the result asks for a full
// one.
//
// Master epochs (controller mode): a claim to broker id 0 from another
// address with a lower MasterEpoch than the live master's is ignored (see
// RegisterResult.Ignored): a higher or equal epoch replaces the master,
// the highest epoch wins. A registration without an epoch (official
// brokers) is taken as before, whatever the held master's epoch.
func (t *Table) Register(r Registration, now time.Time) RegisterResult {
	b := t.brokers[r.Broker.Name][r.Broker.ID]
	if r.Broker.ID == MasterID && !r.Delta && r.MasterEpoch > 0 && b != nil && b.addr != r.Addr && r.MasterEpoch < b.epoch {
		// A deposed master (its delta from this address asks for a full
		// registration below, like any other address's).
		return RegisterResult{Ignored: true, HeldEpoch: b.epoch, MasterAddr: b.addr, MasterHAAddr: b.haAddr}
	}
	if r.Delta {
		if b == nil || b.addr != r.Addr || b.version != r.BaseVersion || b.Cluster != r.Broker.Cluster {
			res := RegisterResult{NeedFull: true}
			if b != nil {
				res.Version = b.version
			}
			return res
		}
		if b.ID == MasterID {
			for _, name := range r.Removed {
				if _, ok := b.topics[name]; ok {
					delete(b.topics, name)
					t.unindex(name, b.Name)
				}
			}
			for name, tc := range r.Topics {
				b.topics[name] = tc
				t.index(name, b.Name)
			}
		}
	} else {
		if b != nil && b.addr == r.Addr && b.Cluster == r.Broker.Cluster && staleVersion(r.Version, b.version) {
			return RegisterResult{Version: b.version, Stale: true}
		}
		// Another process that used this address is gone (renamed or
		// re-numbered broker): drop it so its address is not routed twice.
		for _, ids := range t.brokers {
			for _, o := range ids {
				if o.addr == r.Addr && (o.Name != r.Broker.Name || o.ID != r.Broker.ID) {
					t.remove(o)
				}
			}
		}
		if b == nil {
			b = &instance{BrokerID: r.Broker}
			ids := t.brokers[r.Broker.Name]
			if ids == nil {
				ids = map[int64]*instance{}
				t.brokers[r.Broker.Name] = ids
			}
			ids[r.Broker.ID] = b
		}
		b.Cluster = r.Broker.Cluster
		b.addr = r.Addr
		b.haAddr = r.HAServerAddr
		if b.ID == MasterID {
			for name := range b.topics {
				if _, ok := r.Topics[name]; !ok {
					t.unindex(name, b.Name)
				}
			}
			if r.Topics == nil {
				r.Topics = map[string]TopicConfig{}
			}
			for name := range t.orphans[b.Name] {
				if _, ok := r.Topics[name]; !ok {
					t.unindex(name, b.Name)
				}
			}
			delete(t.orphans, b.Name)
			b.topics = r.Topics
			for name := range b.topics {
				t.index(name, b.Name)
			}
		}
	}
	b.version = r.Version
	b.lastSeen = now
	b.session = r.Session
	b.epoch = r.MasterEpoch
	res := RegisterResult{Version: b.version}
	if b.ID != MasterID {
		if m := t.brokers[b.Name][MasterID]; m != nil {
			res.MasterAddr, res.MasterHAAddr = m.addr, m.haAddr
		}
	}
	return res
}

// Touch records a sign of life from a broker process (QUERY_DATA_VERSION)
// at now and reports whether the table's version for it differs from v; an
// unknown process counts as changed.
func (t *Table) Touch(broker BrokerID, addr string, v DataVersion, now time.Time) (changed bool) {
	b := t.brokers[broker.Name][broker.ID]
	if b == nil || b.addr != addr {
		return true
	}
	b.lastSeen = now
	return b.version != v
}

// Unregister removes a broker process. A non-empty addr must match the
// registered address, so that a late unregister of an old process does not
// remove its successor.
func (t *Table) Unregister(cluster, brokerName string, brokerID int64, addr string) {
	b := t.brokers[brokerName][brokerID]
	if b == nil || (addr != "" && b.addr != addr) || (cluster != "" && b.Cluster != cluster) {
		return
	}
	t.remove(b)
}

// Expire removes every broker process not heard from for longer than ttl
// and returns their addresses, sorted.
func (t *Table) Expire(now time.Time, ttl time.Duration) []string {
	return t.removeWhere(func(b *instance) bool { return now.Sub(b.lastSeen) > ttl })
}

// DropSession removes every broker process whose last registration came
// on session (a connection that closed) and returns their addresses,
// sorted. Session 0 is never dropped.
func (t *Table) DropSession(session uint64) []string {
	if session == 0 {
		return nil
	}
	return t.removeWhere(func(b *instance) bool { return b.session == session })
}

func (t *Table) removeWhere(f func(*instance) bool) []string {
	var gone []*instance
	for _, ids := range t.brokers {
		for _, b := range ids {
			if f(b) {
				gone = append(gone, b)
			}
		}
	}
	addrs := make([]string, 0, len(gone))
	for _, b := range gone {
		t.remove(b)
		addrs = append(addrs, b.addr)
	}
	slices.Sort(addrs)
	return addrs
}

func (t *Table) remove(b *instance) {
	ids := t.brokers[b.Name]
	if ids[b.ID] != b {
		return
	}
	delete(ids, b.ID)
	if len(ids) == 0 {
		delete(t.brokers, b.Name)
	}
	if b.ID == MasterID {
		if len(ids) > 0 {
			// Slaves remain: they serve the master's queues.
			t.orphans[b.Name] = b.topics
			return
		}
		for name := range b.topics {
			t.unindex(name, b.Name)
		}
	}
	if len(ids) == 0 {
		for name := range t.orphans[b.Name] {
			t.unindex(name, b.Name)
		}
		delete(t.orphans, b.Name)
	}
}

// topicsOf is the topic set routed for broker name n: its live master's,
// or, with no live master, the one the last master registered.
func (t *Table) topicsOf(n string) map[string]TopicConfig {
	if m := t.brokers[n][MasterID]; m != nil {
		return m.topics
	}
	return t.orphans[n]
}

func (t *Table) index(topic, broker string) {
	s := t.topicIndex[topic]
	if s == nil {
		s = map[string]struct{}{}
		t.topicIndex[topic] = s
	}
	s[broker] = struct{}{}
}

func (t *Table) unindex(topic, broker string) {
	s := t.topicIndex[topic]
	delete(s, broker)
	if len(s) == 0 {
		delete(t.topicIndex, topic)
	}
}

// Route builds the route of topic: the queue data of every live master that
// has it (or of a broker name's last master, while only its slaves are
// live), sorted by broker name, with the addresses of all live processes of
// those broker names. It reports false when no broker name has the topic.
// The result shares nothing with the table.
func (t *Table) Route(topic string) (RouteData, bool) {
	names := t.topicIndex[topic]
	if len(names) == 0 {
		return RouteData{}, false
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	slices.Sort(sorted)
	rd := RouteData{
		BrokerDatas:       make([]BrokerData, 0, len(sorted)),
		QueueDatas:        make([]QueueData, 0, len(sorted)),
		FilterServerTable: map[string][]string{},
	}
	for _, n := range sorted {
		tc := t.topicsOf(n)[topic]
		rd.QueueDatas = append(rd.QueueDatas, QueueData{
			BrokerName:     n,
			Perm:           t.routedPerm(n, tc.Perm),
			ReadQueueNums:  tc.ReadQueueNums,
			WriteQueueNums: tc.WriteQueueNums,
			TopicSysFlag:   tc.TopicSysFlag,
		})
		rd.BrokerDatas = append(rd.BrokerDatas, t.brokerData(n))
	}
	rd.OrderTopicConf = t.kv[OrderTopicNamespace][topic]
	return rd, true
}

func (t *Table) brokerData(name string) BrokerData {
	ids := t.brokers[name]
	bd := BrokerData{BrokerName: name, BrokerAddrs: make(map[int64]string, len(ids))}
	for id, b := range ids {
		bd.BrokerAddrs[id] = b.addr
		if bd.Cluster == "" || id == MasterID {
			bd.Cluster = b.Cluster
		}
	}
	return bd
}

// ClusterInfo lists every live broker name with its addresses and the
// broker names of each cluster (sorted).
func (t *Table) ClusterInfo() ClusterInfo {
	ci := ClusterInfo{BrokerAddrTable: map[string]BrokerData{}, ClusterAddrTable: map[string][]string{}}
	for name := range t.brokers {
		bd := t.brokerData(name)
		ci.BrokerAddrTable[name] = bd
		ci.ClusterAddrTable[bd.Cluster] = append(ci.ClusterAddrTable[bd.Cluster], name)
	}
	for _, names := range ci.ClusterAddrTable {
		slices.Sort(names)
	}
	return ci
}

// Topics returns every topic some live master has, sorted.
func (t *Table) Topics() []string {
	out := make([]string, 0, len(t.topicIndex))
	for name := range t.topicIndex {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// DeleteTopic removes topic from every broker, so that it has no route
// until a broker registers it again (its next full registration, or a
// delta that changes it).
func (t *Table) DeleteTopic(topic string) {
	for n := range t.topicIndex[topic] {
		delete(t.topicsOf(n), topic)
	}
	delete(t.topicIndex, topic)
}

// BrokerVersion returns the data version held for a broker process.
func (t *Table) BrokerVersion(broker BrokerID) (DataVersion, bool) {
	b := t.brokers[broker.Name][broker.ID]
	if b == nil {
		return DataVersion{}, false
	}
	return b.version, true
}

// PutKV sets a KV configuration value.
func (t *Table) PutKV(namespace, key, value string) {
	m := t.kv[namespace]
	if m == nil {
		m = map[string]string{}
		t.kv[namespace] = m
	}
	m[key] = value
}

// GetKV returns a KV configuration value.
func (t *Table) GetKV(namespace, key string) (string, bool) {
	v, ok := t.kv[namespace][key]
	return v, ok
}

// DeleteKV removes a KV configuration value.
func (t *Table) DeleteKV(namespace, key string) {
	m := t.kv[namespace]
	delete(m, key)
	if len(m) == 0 {
		delete(t.kv, namespace)
	}
}

// KVList returns a copy of a namespace's values, or false when it has none.
func (t *Table) KVList(namespace string) (map[string]string, bool) {
	m := t.kv[namespace]
	if len(m) == 0 {
		return nil, false
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out, true
}
