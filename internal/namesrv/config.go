package namesrv

// GET_NAMESRV_CONFIG (319) and UPDATE_NAMESRV_CONFIG (318), as RocketMQ's
// DefaultRequestProcessor serves them to `mqadmin getNamesrvConfig` /
// `updateNamesrvConfig`.
//
// 319 answers, as a properties body (rmq.EncodeProperties), the name
// server's settings under RocketMQ's NamesrvConfig names where a Petrel
// setting means the same:
//
//	scanNotActiveBrokerInterval    Options.ScanInterval in ms (run time)
//	orderMessageEnable             true: routes always carry orderTopicConf
//	                               from KV ORDER_TOPIC_CONFIG
//	returnOrderTopicConfigToBroker true: registrations answer it too
//	enableAllTopicList             true: 206 is always served
//	enableControllerInNamesrv      false: Petrel's controller runs apart
//
// 318 takes a properties body and applies only scanNotActiveBrokerInterval
// (the expiry scan is re-armed at once). A fixed setting given the value
// it has changes nothing and is accepted (mqadmin may send what 319
// answered); any other value of it, and every key Petrel does not have
// (RocketMQ's configStorePath, kvConfigPath, rocketmqHome and
// configBlackList among them), is refused by name, and then nothing is
// changed. BrokerTTL has no NamesrvConfig name (RocketMQ fixes its 120 s)
// and is not listed.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// Name server settings of 318/319, by RocketMQ key.
const (
	keyScanInterval = "scanNotActiveBrokerInterval"
	minScanInterval = 100 * time.Millisecond
	maxScanInterval = 10 * time.Minute
)

// fixedConfig is what 319 answers for the settings Petrel fixes, and why
// they cannot change (the refusal's words).
var fixedConfig = []struct{ key, value, why string }{
	{"enableAllTopicList", "true", "the name server always answers GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206)"},
	{"enableControllerInNamesrv", "false", "Petrel's controller runs as its own process (petrel controller)"},
	{"orderMessageEnable", "true", "routes always carry the orderTopicConf of KV namespace ORDER_TOPIC_CONFIG when it is set"},
	{"returnOrderTopicConfigToBroker", "true", "registrations always answer the ORDER_TOPIC_CONFIG of KV namespace ORDER_TOPIC_CONFIG"},
}

// registerConfig installs 318 and 319.
func (s *Server) registerConfig() {
	s.rs.Handle(rmq.CodeGetNamesrvConfig, s.getConfig)
	s.rs.Handle(rmq.CodeUpdateNamesrvConfig, s.updateConfig)
}

// configProperties is the configuration, sorted by key.
func (s *Server) configProperties() []rmq.Property {
	s.mu.Lock()
	scan := s.opts.ScanInterval
	s.mu.Unlock()
	var props []rmq.Property
	for _, f := range fixedConfig {
		props = append(props, rmq.Property{Key: f.key, Value: f.value})
	}
	props = append(props, rmq.Property{Key: keyScanInterval, Value: strconv.FormatInt(scan.Milliseconds(), 10)})
	return props
}

func (s *Server) getConfig(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
	return rmq.EncodeGetNamesrvConfigResponse(req, s.configProperties())
}

// planConfig reads the properties of a 318 request: the new scan
// interval (0: unchanged) and the refusals, in the order given.
func planConfig(props []rmq.Property) (scan time.Duration, refusals []string) {
next:
	for _, p := range props {
		v := strings.TrimSpace(p.Value)
		if p.Key == keyScanInterval {
			ms, err := strconv.ParseInt(v, 10, 64)
			d := time.Duration(ms) * time.Millisecond
			if err != nil || d < minScanInterval || d > maxScanInterval {
				refusals = append(refusals, fmt.Sprintf("%s must be milliseconds from %d to %d, not %q", p.Key,
					minScanInterval.Milliseconds(), maxScanInterval.Milliseconds(), rmq.ClipKey(p.Value)))
				continue
			}
			scan = d
			continue
		}
		for _, f := range fixedConfig {
			if p.Key == f.key {
				if !strings.EqualFold(v, f.value) {
					refusals = append(refusals, fmt.Sprintf("cannot change %s: it is always %s in Petrel (%s)", p.Key, f.value, f.why))
				}
				continue next
			}
		}
		refusals = append(refusals, fmt.Sprintf("Petrel has no name server setting %s (mqadmin getNamesrvConfig lists them)", rmq.ClipKey(p.Key)))
	}
	return scan, refusals
}

func (s *Server) updateConfig(_ context.Context, c *remoting.Conn, req *remoting.Command) *remoting.Command {
	props, err := rmq.DecodeProperties(req.Body)
	if err != nil {
		return remoting.NewResponse(req, rmq.RespInvalidParameter, err.Error())
	}
	scan, refusals := planConfig(props)
	if len(refusals) > 0 {
		return remoting.NewResponse(req, rmq.RespInvalidParameter, "nothing was changed: "+strings.Join(refusals, "; "))
	}
	if scan > 0 {
		s.mu.Lock()
		changed := s.opts.ScanInterval != scan
		s.opts.ScanInterval = scan
		// Re-arm the pending scan with the new interval. A timer that
		// already fired has a scan waiting for s.mu, which re-arms
		// itself with the new interval.
		if changed && !s.closed && s.timer != nil && s.timer.Stop() {
			s.timer = s.opts.Clock.AfterFunc(scan, s.scan)
		}
		s.mu.Unlock()
		remote := ""
		if c != nil {
			remote = c.RemoteAddr().String()
		}
		s.log.Info("name server config updated", "scan_interval", scan, "changed", changed, "remote", remote)
	}
	return remoting.NewResponse(req, rmq.RespSuccess, "")
}
