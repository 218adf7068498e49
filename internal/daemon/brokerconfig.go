package daemon

// The process's side of GET/UPDATE_BROKER_CONFIG (brokerfront's
// brokerconfig.go): the settings the broker itself does not hold, under
// RocketMQ's key names, and the re-registration that makes a changed
// brokerPermission reach the name servers.
//
// A broker's registrations carry each topic's perm & brokerPermission
// when the permission is not read-write (RocketMQ's BrokerController
// does the same), so a drain set on the broker survives a name server
// restart and the broker's own restart does not (brokerPermission is not
// kept: a restarted broker is read-write again, as its flags say).

import (
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting/brokerfront"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
	"github.com/petrelmq/petrel/internal/store/commitlog"
)

// configOptions connects the broker configuration requests to d; the
// facts are read once from cfg (they do not change while it runs).
func (d *Broker) configOptions(cfg *BrokerConfig) brokerfront.ConfigOptions {
	facts := configFacts(cfg, d.ln.Addr(), d.advertise)
	return brokerfront.ConfigOptions{
		Facts:             func() []rmq.Property { return facts },
		PermissionChanged: func() { d.reg.Update(d.topicTable()) },
	}
}

// configFacts are cfg's settings under RocketMQ's keys.
func configFacts(cfg *BrokerConfig, listen net.Addr, advertise string) []rmq.Property {
	flush := "SYNC_FLUSH"
	if cfg.Store.FlushMode == commitlog.FlushAsync {
		flush = "ASYNC_FLUSH"
	}
	out := []rmq.Property{
		{Key: "namesrvAddr", Value: strings.Join(cfg.NameServers, ";")},
		{Key: "storePathRootDir", Value: cfg.Store.Dir},
		{Key: "flushDiskType", Value: flush},
		{Key: "flushIntervalCommitLog", Value: strconv.FormatInt(cfg.Store.FlushInterval.Milliseconds(), 10)},
		{Key: "mappedFileSizeCommitLog", Value: strconv.FormatInt(cfg.Store.SegmentBytes, 10)},
		{Key: "fileReservedTime", Value: strconv.FormatInt(int64(cfg.Store.FileReservedTime/time.Hour), 10)},
		{Key: "diskMaxUsedSpaceRatio", Value: strconv.Itoa(int(cfg.Store.DiskHighWater*100 + 0.5))},
		{Key: "authenticationEnabled", Value: strconv.FormatBool(cfg.Security.Auth != nil)},
		{Key: "enableControllerMode", Value: strconv.FormatBool(cfg.controlled())},
	}
	if _, port, err := net.SplitHostPort(listen.String()); err == nil {
		out = append(out, rmq.Property{Key: "listenPort", Value: port})
	}
	if host, _, err := net.SplitHostPort(advertise); err == nil {
		out = append(out, rmq.Property{Key: "brokerIP1", Value: host})
	}
	if cfg.HA.Listen != "" {
		if _, port, err := net.SplitHostPort(cfg.HA.Listen); err == nil {
			out = append(out, rmq.Property{Key: "haListenPort", Value: port})
		}
	}
	return out
}

// maskPerm is the perm a topic is registered with under the broker's
// permission (RocketMQ: perm & brokerPermission when that is not
// read-write).
func maskPerm(perm, brokerPerm int32) int32 {
	if brokerPerm&(broker.PermRead|broker.PermWrite) == broker.PermRead|broker.PermWrite {
		return perm
	}
	return perm & brokerPerm
}
