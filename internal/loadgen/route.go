package loadgen

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/namesrv"
	"github.com/petrelmq/petrel/internal/remoting"
)

// Request and response codes used by the load generator.
const (
	codeSendMessageV2 int16 = 310

	permWrite, permRead   = 2, 4
	defaultControlTimeout = 5 * time.Second
)

// Sentinel errors; the errors of Produce and Consume wrap one of them.
var (
	// ErrConfig: a configuration field is missing or out of range.
	ErrConfig = errors.New("loadgen: bad configuration")
	// ErrNotLoopback: an address is neither loopback nor this host's and
	// AllowRemote is off.
	ErrNotLoopback = errors.New("loadgen: address is not local")
	// ErrNoRoute: the name servers have no usable route for the topic.
	ErrNoRoute = errors.New("loadgen: no route")
	// ErrTooManyErrors: the run stopped after MaxErrors failed requests.
	ErrTooManyErrors = errors.New("loadgen: too many failed requests")
)

// queueRef is one queue of the topic on one broker.
type queueRef struct {
	broker  int // index into route.addrs
	name    string
	queueID int32
}

// route is what a run needs of a topic route: the address of each broker
// group's master (or, for a consume from another broker id, of that
// replica) and the queues.
type route struct {
	addrs  []string // addresses requests go to, by broker index
	names  []string // broker names, by broker index
	queues []queueRef
	// ctrl are the addresses of offset queries and commits, by broker
	// index: the group's master, or addrs' when the route lists none.
	ctrl []string
}

// checkAddr refuses an address that is neither loopback nor one of this
// host's own (a server listening on all addresses advertises its first
// non-loopback one) unless allowRemote.
func checkAddr(addr string, allowRemote bool) error {
	if allowRemote {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: %q is not host:port", ErrConfig, addr)
	}
	if host == "localhost" {
		return nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && (ip.IsLoopback() || isHostAddr(ip)) {
		return nil
	}
	return fmt.Errorf("%w: %s is not an address of this host; only local addresses are used unless remote addresses are allowed (AllowRemote, --allow-remote)", ErrNotLoopback, addr)
}

// isHostAddr reports whether ip is assigned to one of this host's
// interfaces.
func isHostAddr(ip netip.Addr) bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if own, ok := netip.AddrFromSlice(n.IP); ok && own.Unmap() == ip.Unmap() {
				return true
			}
		}
	}
	return false
}

// invokeTimeout runs one control request bounded by d.
func invokeTimeout(ctx context.Context, cl *remoting.Client, addr string, d time.Duration, req *remoting.Command) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return cl.Invoke(ctx, addr, req)
}

// queryRoute asks the name servers in turn for the route of topic. It
// returns (nil, nil) when a name server answered TOPIC_NOT_EXIST and none
// had a route.
func queryRoute(ctx context.Context, cl *remoting.Client, nameServers []string, topic string) (*namesrv.RouteData, error) {
	var errs []error
	for _, ns := range nameServers {
		resp, err := invokeTimeout(ctx, cl, ns, defaultControlTimeout, remoting.NewRequest(rmq.CodeGetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		switch resp.Code {
		case rmq.RespSuccess:
			var rj namesrv.RouteData
			if err := rmq.UnmarshalFastJSON(resp.Body, &rj); err != nil {
				errs = append(errs, fmt.Errorf("route of %q from %s is not valid JSON: %w", topic, ns, err))
				continue
			}
			return &rj, nil
		case rmq.RespTopicNotExist:
			continue
		default:
			errs = append(errs, fmt.Errorf("route of %q from %s: code %d: %s", topic, ns, resp.Code, resp.Remark))
		}
	}
	if len(errs) == len(nameServers) {
		return nil, fmt.Errorf("ask the name servers for the route of %q: %w", topic, errors.Join(errs...))
	}
	return nil, nil
}

// masters asks the name servers for the master address of every broker.
func masters(ctx context.Context, cl *remoting.Client, nameServers []string) ([]string, error) {
	var errs []error
	for _, ns := range nameServers {
		resp, err := invokeTimeout(ctx, cl, ns, defaultControlTimeout, remoting.NewRequest(rmq.CodeGetBrokerClusterInfo, nil, nil))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if resp.Code != rmq.RespSuccess {
			errs = append(errs, fmt.Errorf("cluster info from %s: code %d: %s", ns, resp.Code, resp.Remark))
			continue
		}
		var cj namesrv.ClusterInfo
		if err := rmq.UnmarshalFastJSON(resp.Body, &cj); err != nil {
			errs = append(errs, fmt.Errorf("cluster info from %s is not valid JSON: %w", ns, err))
			continue
		}
		var out []string
		for _, bd := range cj.BrokerAddrTable {
			if a := bd.BrokerAddrs[namesrv.MasterID]; a != "" {
				out = append(out, a)
			}
		}
		if len(out) > 0 {
			sort.Strings(out)
			return out, nil
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return nil, nil
}

// resolveConfig is what resolve needs of a run's configuration.
type resolveConfig struct {
	nameServers []string
	topic       string
	create      bool  // create the topic when it has no route
	queues      int32 // queues of a created topic
	write       bool  // the run writes: use write queues, else read queues
	allowRemote bool
	wait        time.Duration // how long to wait for a broker / route to appear
	// brokerID is the replica of each group a read run uses (0: the
	// master); the route must list it for every group of the topic.
	brokerID int64
}

// resolve returns the topic's route, creating the topic when asked. A
// fresh broker may not have registered yet, so it retries for up to
// rc.wait.
func resolve(ctx context.Context, cl *remoting.Client, rc resolveConfig) (*route, error) {
	for _, ns := range rc.nameServers {
		if err := checkAddr(ns, rc.allowRemote); err != nil {
			return nil, err
		}
	}
	deadline := time.Now().Add(rc.wait)
	created := false
	var last error
	for {
		rj, err := queryRoute(ctx, cl, rc.nameServers, rc.topic)
		switch {
		case err != nil:
			last = err
		case rj != nil:
			rt, err := buildRoute(rj, rc)
			if err == nil {
				return rt, nil
			}
			last = err
		case !rc.create:
			last = fmt.Errorf("%w: topic %q does not exist; produce to it first", ErrNoRoute, rc.topic)
		case !created:
			addrs, err := masters(ctx, cl, rc.nameServers)
			if err != nil {
				last = err
				break
			}
			if len(addrs) == 0 {
				last = fmt.Errorf("%w: the name servers know no broker", ErrNoRoute)
				break
			}
			if err := createTopic(ctx, cl, addrs, rc); err != nil {
				return nil, err
			}
			created = true
			continue
		default:
			last = fmt.Errorf("%w: topic %q was created but has no route yet", ErrNoRoute, rc.topic)
		}
		if !time.Now().Before(deadline) {
			return nil, last
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("resolve topic %q: %w (last: %w)", rc.topic, ctx.Err(), last)
		case <-t.C:
		}
	}
}

func createTopic(ctx context.Context, cl *remoting.Client, addrs []string, rc resolveConfig) error {
	q := strconv.Itoa(int(rc.queues))
	for _, a := range addrs {
		if err := checkAddr(a, rc.allowRemote); err != nil {
			return err
		}
		req := remoting.NewRequest(rmq.CodeUpdateAndCreateTopic, map[string]string{
			"topic": rc.topic, "readQueueNums": q, "writeQueueNums": q, "perm": "6",
			"topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
		}, nil)
		resp, err := invokeTimeout(ctx, cl, a, defaultControlTimeout, req)
		if err != nil {
			return fmt.Errorf("create topic %q on %s: %w", rc.topic, a, err)
		}
		if resp.Code != rmq.RespSuccess {
			return fmt.Errorf("create topic %q on %s: code %d: %s", rc.topic, a, resp.Code, resp.Remark)
		}
	}
	return nil
}

func buildRoute(rj *namesrv.RouteData, rc resolveConfig) (*route, error) {
	addrOf, masterOf := map[string]string{}, map[string]string{}
	listed := map[string][]int64{}
	for _, bd := range rj.BrokerDatas {
		id := int64(namesrv.MasterID)
		if !rc.write {
			id = rc.brokerID
		}
		if a := bd.BrokerAddrs[id]; a != "" {
			addrOf[bd.BrokerName] = a
		}
		masterOf[bd.BrokerName] = bd.BrokerAddrs[namesrv.MasterID]
		for l, a := range bd.BrokerAddrs {
			if a != "" {
				listed[bd.BrokerName] = append(listed[bd.BrokerName], l)
			}
		}
	}
	rt := &route{}
	for _, qd := range rj.QueueDatas {
		addr := addrOf[qd.BrokerName]
		n, perm := qd.ReadQueueNums, int32(permRead)
		if rc.write {
			n, perm = qd.WriteQueueNums, permWrite
		}
		if qd.Perm&perm == 0 || n <= 0 {
			continue
		}
		if addr == "" && !rc.write && rc.brokerID != namesrv.MasterID {
			ids := listed[qd.BrokerName]
			slices.Sort(ids)
			return nil, fmt.Errorf("%w: broker %s of topic %q has no broker id %d in the route (listed: %v)", ErrNoRoute, qd.BrokerName, rc.topic, rc.brokerID, ids)
		}
		if addr == "" {
			continue
		}
		if err := checkAddr(addr, rc.allowRemote); err != nil {
			return nil, err
		}
		ctrl := cmp.Or(masterOf[qd.BrokerName], addr)
		if err := checkAddr(ctrl, rc.allowRemote); err != nil {
			return nil, err
		}
		bi := len(rt.addrs)
		rt.addrs = append(rt.addrs, addr)
		rt.ctrl = append(rt.ctrl, ctrl)
		rt.names = append(rt.names, qd.BrokerName)
		for q := range n {
			rt.queues = append(rt.queues, queueRef{broker: bi, name: qd.BrokerName, queueID: q})
		}
	}
	if len(rt.queues) == 0 {
		where := "a live master"
		if !rc.write && rc.brokerID != namesrv.MasterID {
			where = fmt.Sprintf("broker id %d", rc.brokerID)
		}
		return nil, fmt.Errorf("%w: the route of topic %q has no %s queue on %s", ErrNoRoute, rc.topic, map[bool]string{true: "writable", false: "readable"}[rc.write], where)
	}
	return rt, nil
}
