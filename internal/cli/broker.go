package cli

// petrel broker config get|set and petrel broker drain|undrain.
//
// config get and set send RocketMQ's GET_BROKER_CONFIG (26) and
// UPDATE_BROKER_CONFIG (25) to every live master, or to the broker
// --broker names (host:port, or a master's broker name), as mqadmin
// getBrokerConfig / updateBrokerConfig do. drain and undrain send
// WIPE_WRITE_PERM_OF_BROKER (205) and ADD_WRITE_PERM_OF_BROKER (327) to
// every name server of --namesrv (each keeps its own routes), as mqadmin
// wipeWritePerm / addWritePerm do: producers stop choosing the broker's
// queues at their next route refresh while consumers go on reading them.
// undrain also restores the broker's own brokerPermission when a
// `config set brokerPermission=4` had taken its write permission away.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// BrokerConfig is one broker's configuration as `broker config get`
// prints it.
type BrokerConfig struct {
	Broker  string            `json:"broker"`
	Address string            `json:"address"`
	Config  map[string]string `json:"config"`
}

// BrokerFailure is a broker or name server that did not apply a change.
type BrokerFailure struct {
	Broker  string `json:"broker,omitempty"`
	Address string `json:"address"`
	Error   string `json:"error"`
}

// ConfigSetResult is the answer of `broker config set`.
type ConfigSetResult struct {
	Settings map[string]string `json:"settings"`
	Brokers  []string          `json:"brokers"`
	Failed   []BrokerFailure   `json:"failed,omitempty"`
}

// DrainResult is the answer of `broker drain` and `broker undrain`.
type DrainResult struct {
	Broker string `json:"broker"`
	// Action is "drained" or "undrained".
	Action      string          `json:"action"`
	NameServers []DrainAnswer   `json:"nameServers"`
	Failed      []BrokerFailure `json:"failed,omitempty"`
	// PermissionRestored: undrain set the broker's brokerPermission back
	// to 6 (read and write).
	PermissionRestored bool `json:"permissionRestored,omitempty"`
}

// DrainAnswer is one name server's answer: the topics of the broker it
// routes.
type DrainAnswer struct {
	Address string `json:"address"`
	Topics  int32  `json:"topics"`
}

// BrokerConfigGet prints the configuration of every live master, or of
// the broker named by broker (host:port or a master's broker name).
func (c *CLI) BrokerConfigGet(ctx context.Context, broker string) error {
	ms, err := c.authTargets(ctx, broker)
	if err != nil {
		return err
	}
	var out []BrokerConfig
	for _, m := range ms {
		cfg, err := c.brokerConfig(ctx, m)
		if err != nil {
			return err
		}
		out = append(out, BrokerConfig{Broker: m.name, Address: m.addr, Config: cfg})
	}
	if c.json() {
		return c.writeJSON(struct {
			Brokers []BrokerConfig `json:"brokers"`
		}{out})
	}
	t := newTable("BROKER", "KEY", "VALUE")
	for _, b := range out {
		keys := make([]string, 0, len(b.Config))
		for k := range b.Config {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t.add(b.Broker, k, clip(b.Config[k], 200))
		}
	}
	return t.write(c.cfg.Out)
}

func (c *CLI) brokerConfig(ctx context.Context, m masterBroker) (map[string]string, error) {
	resp, err := c.callOK(ctx, m.addr, "get broker config", rmq.EncodeGetBrokerConfig())
	if err != nil {
		return nil, err
	}
	props, err := rmq.DecodeProperties(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: the configuration broker %s answered does not read as properties: %w", ErrRefused, m.addr, err)
	}
	cfg := make(map[string]string, len(props))
	for _, p := range props {
		cfg[p.Key] = p.Value
	}
	return cfg, nil
}

// ParseSettings reads `config set`'s KEY=VALUE arguments. A repeated key
// or an argument without '=' or key is an ErrUsage error.
func ParseSettings(args []string) ([]rmq.Property, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("%w: give at least one KEY=VALUE, e.g. autoCreateTopicEnable=false", ErrUsage)
	}
	seen := map[string]bool{}
	out := make([]rmq.Property, 0, len(args))
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: %q is not KEY=VALUE, e.g. brokerPermission=4", ErrUsage, a)
		}
		if seen[k] {
			return nil, fmt.Errorf("%w: %s is given twice; give each key once", ErrUsage, k)
		}
		seen[k] = true
		out = append(out, rmq.Property{Key: k, Value: v})
	}
	return out, nil
}

// BrokerConfigSet applies settings (KEY=VALUE, see ParseSettings) on
// every live master, or on the broker named by broker. A broker refuses
// the keys it cannot change at run time, by name, and then changes
// nothing; the command goes on with the other brokers and fails naming
// every refusal.
func (c *CLI) BrokerConfigSet(ctx context.Context, broker string, settings []string) error {
	props, err := ParseSettings(settings)
	if err != nil {
		return err
	}
	ms, err := c.authTargets(ctx, broker)
	if err != nil {
		return err
	}
	res := ConfigSetResult{Settings: map[string]string{}, Brokers: []string{}}
	for _, p := range props {
		res.Settings[p.Key] = p.Value
	}
	var errs []error
	for _, m := range ms {
		if _, err := c.callOK(ctx, m.addr, "update broker config", rmq.EncodeUpdateBrokerConfig(props)); err != nil {
			res.Failed = append(res.Failed, BrokerFailure{Broker: m.name, Address: m.addr, Error: err.Error()})
			errs = append(errs, err)
			continue
		}
		res.Brokers = append(res.Brokers, m.name)
	}
	if len(errs) > 0 && len(res.Brokers) > 0 {
		errs = append(errs, fmt.Errorf("the settings were applied on %s only: run the command again once the others answer", strings.Join(res.Brokers, ", ")))
	}
	if c.json() {
		if err := c.writeJSON(res); err != nil {
			return err
		}
	} else if len(res.Brokers) > 0 {
		kv := make([]string, len(props))
		for i, p := range props {
			kv[i] = p.Key + "=" + p.Value
		}
		if _, err := fmt.Fprintf(c.cfg.Out, "%s set on %s\n", strings.Join(kv, " "), strings.Join(res.Brokers, ", ")); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// BrokerDrain wipes the write permission of broker name's queues on
// every name server: producers leave it at their next route refresh
// (RocketMQ clients: every 30 s), consumers keep reading its queues. An
// unknown broker name is an ErrNotFound error; a name server that does
// not answer makes the command fail after the others were asked.
func (c *CLI) BrokerDrain(ctx context.Context, name string) error {
	if err := c.checkBrokerName(ctx, name); err != nil {
		return err
	}
	res, err := c.writePerm(ctx, name, true)
	if werr := c.writeDrain(res); werr != nil {
		return werr
	}
	return err
}

// BrokerUndrain gives broker name's queues their write permission back
// on every name server, and sets the broker's own brokerPermission back
// to 6 when it lacks write (a `config set brokerPermission=4`). The
// broker need not be running (a drain may end while it restarts).
func (c *CLI) BrokerUndrain(ctx context.Context, name string) error {
	if name == "" {
		return fmt.Errorf("%w: give the broker name to undrain, as `petrel cluster list` shows it", ErrUsage)
	}
	res, err := c.writePerm(ctx, name, false)
	if err == nil {
		res.PermissionRestored, err = c.restorePermission(ctx, name)
	}
	if werr := c.writeDrain(res); werr != nil {
		return werr
	}
	return err
}

// checkBrokerName makes sure the name servers know broker name.
func (c *CLI) checkBrokerName(ctx context.Context, name string) error {
	if name == "" {
		return fmt.Errorf("%w: give the broker name to drain, as `petrel cluster list` shows it", ErrUsage)
	}
	ci, err := c.clusterInfo(ctx)
	if err != nil {
		return err
	}
	if _, ok := ci.BrokerAddrTable[name]; !ok {
		known := make([]string, 0, len(ci.BrokerAddrTable))
		for n := range ci.BrokerAddrTable {
			known = append(known, n)
		}
		sort.Strings(known)
		return fmt.Errorf("%w: the name servers know no broker named %q (they know %s); see `petrel cluster list`", ErrNotFound, name, strings.Join(known, ", "))
	}
	return nil
}

// writePerm sends 205 (wipe) or 327 to every name server.
func (c *CLI) writePerm(ctx context.Context, name string, wipe bool) (DrainResult, error) {
	res := DrainResult{Broker: name, Action: "undrained", NameServers: []DrainAnswer{}}
	what := "undrain (ADD_WRITE_PERM_OF_BROKER)"
	if wipe {
		res.Action, what = "drained", "drain (WIPE_WRITE_PERM_OF_BROKER)"
	}
	var errs []error
	for _, ns := range c.cfg.NameServers {
		req := rmq.EncodeAddWritePerm(rmq.WritePermRequest{BrokerName: name})
		if wipe {
			req = rmq.EncodeWipeWritePerm(rmq.WritePermRequest{BrokerName: name})
		}
		resp, err := c.callNameServer(ctx, ns, what, req)
		var n int32
		if err == nil {
			if n, err = rmq.DecodeWritePermResponse(resp, wipe); err != nil {
				err = fmt.Errorf("%w: name server %s answered %s without its topic count: %w", ErrRefused, ns, what, err)
			}
		}
		if err != nil {
			res.Failed = append(res.Failed, BrokerFailure{Address: ns, Error: err.Error()})
			errs = append(errs, err)
			continue
		}
		res.NameServers = append(res.NameServers, DrainAnswer{Address: ns, Topics: n})
	}
	if len(errs) > 0 && len(res.NameServers) > 0 {
		errs = append(errs, fmt.Errorf("broker %s is %s on %d of %d name servers only: run the command again once the others answer", name, res.Action, len(res.NameServers), len(c.cfg.NameServers)))
	}
	return res, errors.Join(errs...)
}

// callNameServer sends req to one name server and turns a failure or a
// non-zero code into an error naming it.
func (c *CLI) callNameServer(ctx context.Context, ns, what string, req *remoting.Command) (*remoting.Command, error) {
	cctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	resp, err := c.rc.Invoke(cctx, ns, req)
	if err != nil {
		if h := c.transportHint(err); h != "" {
			return nil, fmt.Errorf("%w: name server %s: %w; %s", ErrUnreachable, ns, rootCause(err), h)
		}
		return nil, fmt.Errorf("%w: cannot reach the name server at %s (%v); check that it is running, or fix --namesrv", ErrUnreachable, ns, rootCause(err))
	}
	if resp.Code != rmq.RespSuccess {
		return nil, c.refused(ns, what, resp)
	}
	return resp, nil
}

// restorePermission sets the brokerPermission of broker name's live
// master to 6 when it lacks write, and reports whether it did. A broker
// that is not running, or does not answer the key, is left alone.
func (c *CLI) restorePermission(ctx context.Context, name string) (bool, error) {
	ci, err := c.clusterInfo(ctx)
	if err != nil {
		return false, nil // the routes are restored; the broker is asked at its next undrain
	}
	addr := master(ci.BrokerAddrTable[name])
	if addr == "" {
		return false, nil
	}
	cfg, err := c.brokerConfig(ctx, masterBroker{name: name, addr: addr})
	if err != nil {
		return false, err
	}
	p, err := strconv.Atoi(cfg["brokerPermission"])
	if err != nil || p&int(rmq.PermWrite) != 0 {
		return false, nil
	}
	if _, err := c.callOK(ctx, addr, "update broker config", rmq.EncodeUpdateBrokerConfig([]rmq.Property{{Key: "brokerPermission", Value: "6"}})); err != nil {
		return false, err
	}
	return true, nil
}

func (c *CLI) writeDrain(res DrainResult) error {
	if c.json() {
		return c.writeJSON(res)
	}
	if len(res.NameServers) == 0 {
		return nil
	}
	t := newTable("NAME SERVER", "TOPICS")
	for _, a := range res.NameServers {
		t.add(a.Address, a.Topics)
	}
	if err := t.write(c.cfg.Out); err != nil {
		return err
	}
	var note string
	if res.Action == "drained" {
		note = fmt.Sprintf("broker %s drained: producers leave it at their next route refresh (every 30 s for RocketMQ clients) while consumers read its queues to the end; `petrel broker undrain %s` restores it.\n"+
			"A restarted name server forgets the drain: drain again then, or also run `petrel broker config set brokerPermission=4 --broker %s` once producers have moved (the broker then refuses sends and registers read-only).\n",
			res.Broker, res.Broker, res.Broker)
	} else {
		note = fmt.Sprintf("broker %s undrained: producers choose it again at their next route refresh.\n", res.Broker)
		if res.PermissionRestored {
			note += "its brokerPermission was set back to 6 (read and write).\n"
		}
	}
	_, err := fmt.Fprint(c.cfg.Out, note)
	return err
}
