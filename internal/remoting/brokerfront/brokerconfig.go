package brokerfront

// GET_BROKER_CONFIG (26) and UPDATE_BROKER_CONFIG (25), as RocketMQ's
// AdminBrokerProcessor serves them to `mqadmin getBrokerConfig` /
// `updateBrokerConfig` and `petrel broker config get|set`.
//
// 26 answers the broker's configuration under RocketMQ's key names
// (BrokerConfig and MessageStoreConfig) where a Petrel setting means the
// same, as a properties body, with ext version: the configuration's data
// version (counter: updates applied since start). The keys of the broker
// come from broker.Config and its run-time settings; the process's
// (listen port, flush mode, store directory, name servers, ...) from
// ConfigOptions.Facts.
//
// 25 takes a properties body and applies only the settings that are
// safe at run time: autoCreateTopicEnable and brokerPermission (a drain:
// 4 takes no sends, and the registrations carry it; 6 restores). Every
// other key is refused by name, with the flag to restart the broker
// with when Petrel has one; a key Petrel does not have is named as such.
// A request with any refused key changes nothing (RocketMQ applies every
// key it is given, and keeps unknown ones). Updates are applied one at a
// time; a brokerPermission change answers once the name servers have the
// re-registered topics (bounded by Options.RouteWait).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// ConfigOptions connect the broker configuration requests to the
// process that runs the broker.
type ConfigOptions struct {
	// Facts, if set, returns the process's settings that the broker does
	// not hold, by RocketMQ key (listenPort, flushDiskType,
	// storePathRootDir, namesrvAddr, ...); they are read-only. It must be
	// quick and safe for concurrent use.
	Facts func() []rmq.Property
	// PermissionChanged, if set, is called after brokerPermission
	// changed, so that the broker's registrations carry it (the daemon
	// registers its topics again, masked).
	PermissionChanged func()
}

// Run-time settings of UPDATE_BROKER_CONFIG, by RocketMQ key.
const (
	keyAutoCreateTopic  = "autoCreateTopicEnable"
	keyBrokerPermission = "brokerPermission"
)

// RestartFlags returns, for each key GET_BROKER_CONFIG may answer that
// UPDATE_BROKER_CONFIG refuses, the flags of `petrel broker` that set it
// (the refusal's remedy; a test checks that they exist). A key answered
// without an entry is one no flag sets.
func RestartFlags() map[string]string { return maps.Clone(restartFlags) }

var restartFlags = map[string]string{
	"brokerName":                    "--broker-name",
	"brokerClusterName":             "--cluster",
	"brokerId":                      "--broker-id",
	"brokerRole":                    "--broker-id and --replication",
	"listenPort":                    "--broker-listen",
	"brokerIP1":                     "--advertise",
	"namesrvAddr":                   "--namesrv",
	"storePathRootDir":              "--data-dir",
	"storePathCommitLog":            "--data-dir",
	"flushDiskType":                 "--flush",
	"flushIntervalCommitLog":        "--flush-interval",
	"mappedFileSizeCommitLog":       "--segment-bytes",
	"fileReservedTime":              "--file-reserved-time",
	"diskMaxUsedSpaceRatio":         "--disk-max-used-ratio",
	"maxMessageSize":                "--max-message-bytes",
	"messageDelayLevel":             "--delay-levels",
	"timerMaxDelaySec":              "--max-timer-delay",
	"transactionTimeOut":            "--transaction-timeout",
	"transactionCheckMax":           "--transaction-max-checks",
	"transactionCheckInterval":      "--transaction-check-interval",
	"slaveReadEnable":               "--slave-read-enable",
	"accessMessageInMemoryMaxRatio": "--access-message-in-memory-max-ratio",
	"haListenPort":                  "--ha-listen",
	"enableControllerMode":          "--controller",
	"controllerAddr":                "--controller",
	"authenticationEnabled":         "--auth",
}

// registerBrokerConfig installs 25 and 26.
func (f *Front) registerBrokerConfig(s *remoting.Server) {
	s.Handle(rmq.CodeUpdateBrokerConfig, f.updateBrokerConfig)
	s.Handle(rmq.CodeGetBrokerConfig, f.brokerConfig)
}

// brokerConfig answers 26.
func (f *Front) brokerConfig(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	f.cfgMu.Lock()
	v := f.cfgVersion
	f.cfgMu.Unlock()
	return rmq.EncodeGetBrokerConfigResponse(req, f.configProperties(), v)
}

// configProperties is the configuration, sorted by key.
func (f *Front) configProperties() []rmq.Property {
	c := f.b.Config()
	role := "ASYNC_MASTER"
	switch {
	case f.b.Role() == broker.RoleSlave:
		role = "SLAVE"
	case c.Replicator != nil && !c.ReplicationAsync:
		role = "SYNC_MASTER"
	}
	props := []rmq.Property{
		{Key: "brokerName", Value: c.BrokerName},
		{Key: "brokerClusterName", Value: c.ClusterName},
		{Key: "brokerId", Value: itoa(c.BrokerID)},
		{Key: "brokerRole", Value: role},
		{Key: keyAutoCreateTopic, Value: strconv.FormatBool(f.b.AutoCreateTopics())},
		{Key: keyBrokerPermission, Value: itoa(int64(f.b.Permission()))},
		{Key: "defaultTopicQueueNums", Value: itoa(int64(c.DefaultTopicQueueNums))},
		{Key: "maxMessageSize", Value: itoa(int64(c.MaxMessageBytes))},
		{Key: "messageDelayLevel", Value: delayLevels(c.DelayLevels)},
		{Key: "timerMaxDelaySec", Value: itoa(int64(c.MaxTimerDelay / time.Second))},
		{Key: "transactionTimeOut", Value: itoa(c.TransactionTimeout.Milliseconds())},
		{Key: "transactionCheckMax", Value: itoa(int64(c.TransactionMaxChecks))},
		{Key: "transactionCheckInterval", Value: itoa(c.TransactionCheckInterval.Milliseconds())},
		{Key: "slaveReadEnable", Value: strconv.FormatBool(c.SlaveReadEnable)},
		{Key: "accessMessageInMemoryMaxRatio", Value: itoa(int64(c.AccessMessageInMemoryMaxRatio))},
		{Key: "longPollingEnable", Value: "true"},
	}
	if f.cfgOpts.Facts != nil {
		have := map[string]bool{}
		for _, p := range props {
			have[p.Key] = true
		}
		for _, p := range f.cfgOpts.Facts() {
			if !have[p.Key] {
				props = append(props, p)
				have[p.Key] = true
			}
		}
	}
	slices.SortFunc(props, func(a, b rmq.Property) int { return strings.Compare(a.Key, b.Key) })
	return props
}

// delayLevels writes delays as RocketMQ's messageDelayLevel: "1s 5s 1m
// 2h", each in the largest unit (s, m, h, d) that divides it, else in
// milliseconds ("1500ms", which RocketMQ would not read; Petrel's flags
// allow it).
func delayLevels(ds []time.Duration) string {
	out := make([]string, len(ds))
	for i, d := range ds {
		switch {
		case d%(24*time.Hour) == 0:
			out[i] = itoa(int64(d/(24*time.Hour))) + "d"
		case d%time.Hour == 0:
			out[i] = itoa(int64(d/time.Hour)) + "h"
		case d%time.Minute == 0:
			out[i] = itoa(int64(d/time.Minute)) + "m"
		case d%time.Second == 0:
			out[i] = itoa(int64(d/time.Second)) + "s"
		default:
			out[i] = itoa(d.Milliseconds()) + "ms"
		}
	}
	return strings.Join(out, " ")
}

// configUpdate is what a 25 request changes: nil fields stay.
type configUpdate struct {
	autoCreate *bool
	perm       *int32
}

// planConfigUpdate reads the properties of a 25 request against the keys
// answered by 26 (known): the run-time settings parse into the update,
// every other key is a refusal, in the order given. refusals is nil when
// the update may be applied.
func planConfigUpdate(props []rmq.Property, known map[string]bool) (u configUpdate, refusals []string) {
	for _, p := range props {
		v := strings.TrimSpace(p.Value)
		switch p.Key {
		case keyAutoCreateTopic:
			on := strings.EqualFold(v, "true")
			if !on && !strings.EqualFold(v, "false") {
				refusals = append(refusals, fmt.Sprintf("%s must be true or false, not %q", p.Key, rmq.ClipKey(p.Value)))
				continue
			}
			u.autoCreate = &on
		case keyBrokerPermission:
			n64, err := strconv.ParseInt(v, 10, 32)
			n := int32(n64)
			if err != nil || (n != broker.PermRead && n != broker.PermWrite && n != broker.PermRead|broker.PermWrite) {
				refusals = append(refusals, fmt.Sprintf("%s must be 6 (read and write), 4 (read only: a drain) or 2 (write only), not %q", p.Key, rmq.ClipKey(p.Value)))
				continue
			}
			u.perm = &n
		default:
			switch flag, ok := restartFlags[p.Key]; {
			case ok:
				refusals = append(refusals, fmt.Sprintf("cannot change %s at run time: restart the broker with %s", p.Key, flag))
			case known[p.Key]:
				refusals = append(refusals, fmt.Sprintf("cannot change %s: Petrel fixes it (no flag sets it)", p.Key))
			default:
				refusals = append(refusals, fmt.Sprintf("Petrel has no broker setting %s (petrel broker config get lists them)", rmq.ClipKey(p.Key)))
			}
		}
	}
	return u, refusals
}

// updateBrokerConfig serves 25.
func (f *Front) updateBrokerConfig(ctx context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	props, err := rmq.DecodeProperties(req.Body)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespInvalidParameter, err.Error())
	}
	known := map[string]bool{}
	for _, p := range f.configProperties() {
		known[p.Key] = true
	}
	u, refusals := planConfigUpdate(props, known)
	if len(refusals) > 0 {
		return remoting.NewResponse(req, rmq.RespInvalidParameter, "nothing was changed: "+strings.Join(refusals, "; "))
	}
	// Updates apply one at a time (RocketMQ's is synchronized); the wait
	// for the name servers below is outside the lock, and each
	// PermissionChanged registers the permission current when it runs.
	f.cfgMu.Lock()
	changed := false
	if u.autoCreate != nil {
		before := f.b.AutoCreateTopics()
		if err := f.b.SetAutoCreateTopics(*u.autoCreate); err != nil {
			f.cfgMu.Unlock()
			f.log.Warn("auto-create setting not applied", "err", err)
			return remoting.NewResponse(req, rmq.RespSystemError, "the broker could not create its template topic "+broker.TemplateTopic+" for auto-creation, so nothing was changed; retry")
		}
		changed = changed || before != *u.autoCreate
	}
	permChanged := false
	if u.perm != nil {
		if permChanged, err = f.b.SetPermission(*u.perm); err != nil {
			f.cfgMu.Unlock()
			return remoting.NewResponse(req, rmq.RespInvalidParameter, "brokerPermission must be 6, 4 or 2")
		}
		changed = changed || permChanged
	}
	if changed {
		f.cfgVersion.Counter++
		f.cfgVersion.Timestamp = f.b.Config().Clock.Now().UnixMilli()
	}
	f.cfgMu.Unlock()
	f.log.Info("broker config updated", "keys", len(props), "changed", changed, "remote", remoteAddr(c))
	if !permChanged || f.cfgOpts.PermissionChanged == nil {
		return remoting.NewResponse(req, rmq.RespSuccess, "")
	}
	f.cfgOpts.PermissionChanged()
	if f.awaitRoutes == nil {
		return remoting.NewResponse(req, rmq.RespSuccess, "")
	}
	wctx, cancel := context.WithTimeout(ctx, f.routeWait)
	defer cancel()
	if err := f.awaitRoutes(wctx); err != nil {
		f.log.Warn("brokerPermission change not yet accepted by every name server", "err", err)
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return remoting.NewResponse(req, rmq.RespSuccess, "brokerPermission changed; the name servers have not all accepted the broker's new registration yet (they will at its next heartbeat)")
		}
		return remoting.NewResponse(req, rmq.RespSuccess, "brokerPermission changed; some name server did not accept the broker's new registration (it will get it at the next heartbeat)")
	}
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}

func remoteAddr(c *remoting.Conn) string {
	if c == nil {
		return ""
	}
	return c.RemoteAddr().String()
}
