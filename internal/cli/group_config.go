package cli

// Subscription-group configs: `group create|update|delete`, as mqadmin's
// updateSubGroup and deleteSubGroup do it (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
// 200 with a SubscriptionGroupConfig JSON body, DELETE_SUBSCRIPTIONGROUP 207)
// on every live master, and the configs `group list` shows
// (GET_ALL_SUBSCRIPTIONGROUP_CONFIG 201).

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/remoting"
)

const (

	// defaultRetryMaxTimes is RocketMQ's retryMaxTimes of a new group.
	defaultRetryMaxTimes = 16
)

// GroupSpec is what `group create` and `group update` set. A nil field is
// left as it is (update) or takes RocketMQ's default (create: consume
// enabled, not orderly, not broadcast, 16 retries).
type GroupSpec struct {
	Name          string
	Orderly       *bool
	RetryMax      *int32
	Broadcast     *bool
	ConsumeEnable *bool
	// SetAttrs are attributes to set; RemoveAttrs (update only) to remove.
	SetAttrs    map[string]string
	RemoveAttrs []string
}

// GroupConfig is a group's config as `group list` and the results of
// create and update show it.
type GroupConfig struct {
	Group         string            `json:"group"`
	ConsumeEnable bool              `json:"consumeEnable"`
	Orderly       bool              `json:"orderly"`
	Broadcast     bool              `json:"broadcast"`
	RetryMaxTimes int32             `json:"retryMaxTimes"`
	Attributes    map[string]string `json:"attributes"`
}

// GroupResult is the answer of `group create|update|delete`.
type GroupResult struct {
	Group   string   `json:"group"`
	Action  string   `json:"action"` // created, updated, deleted
	Brokers []string `json:"brokers"`
	// Config is the group's config after the change (not for delete).
	Config *GroupConfig `json:"config,omitempty"`
	// CleanOffset: delete also removed the group's offsets.
	CleanOffset bool `json:"cleanOffset,omitempty"`
}

// rawGroup is one entry of a broker's subscriptionGroupTable, kept as raw
// fields so that an update sends back what it does not change exactly as
// the broker has it.
type rawGroup map[string]json.RawMessage

func (g rawGroup) config(name string) GroupConfig {
	out := GroupConfig{Group: name}
	_ = json.Unmarshal(g["consumeEnable"], &out.ConsumeEnable)
	_ = json.Unmarshal(g["consumeMessageOrderly"], &out.Orderly)
	_ = json.Unmarshal(g["consumeBroadcastEnable"], &out.Broadcast)
	_ = json.Unmarshal(g["retryMaxTimes"], &out.RetryMaxTimes)
	_ = json.Unmarshal(g["attributes"], &out.Attributes)
	return out
}

func (g rawGroup) set(key string, v any) {
	b, _ := json.Marshal(v)
	g[key] = b
}

// brokerGroups returns a broker's subscription group configs.
func (c *CLI) brokerGroups(ctx context.Context, addr string) (map[string]rawGroup, error) {
	resp, err := c.callOK(ctx, addr, "subscription groups", remoting.NewRequest(rmq.CodeGetAllSubscriptionGroup, nil, nil))
	if err != nil {
		return nil, err
	}
	var body struct {
		SubscriptionGroupTable map[string]rawGroup `json:"subscriptionGroupTable"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		return nil, fmt.Errorf("%w: subscription groups of %s are not valid JSON: %w", ErrRefused, addr, err)
	}
	return body.SubscriptionGroupTable, nil
}

func checkGroupSpec(spec GroupSpec) error {
	if spec.Name == "" {
		return fmt.Errorf("%w: name the consumer group", ErrUsage)
	}
	if err := checkTopicName(spec.Name); err != nil {
		return fmt.Errorf("%w: group name %q: use letters, digits, %%, |, _ and - only", ErrUsage, spec.Name)
	}
	if spec.RetryMax != nil && (*spec.RetryMax < 0 || *spec.RetryMax > 1000) {
		return fmt.Errorf("%w: --retry-max %d: want 0..1000", ErrUsage, *spec.RetryMax)
	}
	return nil
}

// apply writes the spec's settings into g.
func (spec GroupSpec) apply(g rawGroup) {
	g.set("groupName", spec.Name)
	if spec.Orderly != nil {
		g.set("consumeMessageOrderly", *spec.Orderly)
	}
	if spec.RetryMax != nil {
		g.set("retryMaxTimes", *spec.RetryMax)
	}
	if spec.Broadcast != nil {
		g.set("consumeBroadcastEnable", *spec.Broadcast)
	}
	if spec.ConsumeEnable != nil {
		g.set("consumeEnable", *spec.ConsumeEnable)
	}
	// Attributes are sent as RocketMQ's changes: +key sets, -key removes;
	// the broker keeps the others.
	changes := map[string]string{}
	for k, v := range spec.SetAttrs {
		changes["+"+k] = v
	}
	for _, k := range spec.RemoveAttrs {
		changes["-"+k] = ""
	}
	g.set("attributes", changes)
}

func (c *CLI) putGroup(ctx context.Context, addr string, g rawGroup) error {
	body, err := json.Marshal(g)
	if err != nil {
		return err
	}
	req := remoting.NewRequest(rmq.CodeUpdateAndCreateSubscriptionGroup, nil, body)
	_, err = c.callOK(ctx, addr, "set subscription group config", req)
	return err
}

// GroupCreate creates a subscription group on every live master. A group
// that already has a config on one of them is refused (change it with
// `group update`), so create never silently resets a group's settings.
func (c *CLI) GroupCreate(ctx context.Context, spec GroupSpec) error {
	if err := checkGroupSpec(spec); err != nil {
		return err
	}
	if len(spec.RemoveAttrs) > 0 {
		return fmt.Errorf("%w: a new group has no attributes to remove", ErrUsage)
	}
	ms, err := c.masters(ctx)
	if err != nil {
		return err
	}
	for _, m := range ms {
		gs, err := c.brokerGroups(ctx, m.addr)
		if err != nil {
			return err
		}
		if _, ok := gs[spec.Name]; ok {
			return fmt.Errorf("%w: consumer group %q already exists on broker %s (its members' heartbeats create it); change it with `petrel group update %s`",
				ErrUsage, spec.Name, m.name, spec.Name)
		}
	}
	f, t := false, true
	full := spec
	full.Orderly = cmpOr(spec.Orderly, &f)
	full.Broadcast = cmpOr(spec.Broadcast, &f)
	full.ConsumeEnable = cmpOr(spec.ConsumeEnable, &t)
	retry := int32(defaultRetryMaxTimes)
	full.RetryMax = cmpOr(spec.RetryMax, &retry)
	res := GroupResult{Group: spec.Name, Action: "created", Brokers: []string{}}
	for _, m := range ms {
		g := rawGroup{}
		full.apply(g)
		if err := c.putGroup(ctx, m.addr, g); err != nil {
			return err
		}
		res.Brokers = append(res.Brokers, m.name)
	}
	return c.groupResultAfter(ctx, ms, res)
}

func cmpOr[T any](v, def *T) *T {
	if v != nil {
		return v
	}
	return def
}

// GroupUpdate changes the settings the spec names on every live master
// that has the group's config; the rest of the config stays as it is.
// Running members follow at once: 5.x clients get new settings pushed,
// 4.x members see the new retry count at their next send-back.
func (c *CLI) GroupUpdate(ctx context.Context, spec GroupSpec) error {
	if err := checkGroupSpec(spec); err != nil {
		return err
	}
	if spec.Orderly == nil && spec.RetryMax == nil && spec.Broadcast == nil && spec.ConsumeEnable == nil &&
		len(spec.SetAttrs) == 0 && len(spec.RemoveAttrs) == 0 {
		return fmt.Errorf("%w: nothing to change; give --orderly, --retry-max, --broadcast, --consume-enable, --attr or --remove-attr", ErrUsage)
	}
	ms, err := c.masters(ctx)
	if err != nil {
		return err
	}
	res := GroupResult{Group: spec.Name, Action: "updated", Brokers: []string{}}
	var on []masterBroker
	for _, m := range ms {
		gs, err := c.brokerGroups(ctx, m.addr)
		if err != nil {
			return err
		}
		g, ok := gs[spec.Name]
		if !ok {
			continue
		}
		// The rest of the stored config goes back as it is; attributes
		// go as changes, which the broker applies to the stored ones.
		cur := g.config(spec.Name).Attributes
		for _, k := range spec.RemoveAttrs {
			if _, ok := cur[k]; !ok {
				return fmt.Errorf("%w: consumer group %q has no attribute %q on broker %s", ErrUsage, spec.Name, k, m.name)
			}
		}
		spec.apply(g)
		if err := c.putGroup(ctx, m.addr, g); err != nil {
			return err
		}
		res.Brokers = append(res.Brokers, m.name)
		on = append(on, m)
	}
	if len(on) == 0 {
		return fmt.Errorf("%w: consumer group %q has no config on any broker; create it with `petrel group create %s`", ErrNotFound, spec.Name, spec.Name)
	}
	return c.groupResultAfter(ctx, on, res)
}

// groupResultAfter reads the config back from the first broker and writes
// the result.
func (c *CLI) groupResultAfter(ctx context.Context, ms []masterBroker, res GroupResult) error {
	gs, err := c.brokerGroups(ctx, ms[0].addr)
	if err != nil {
		return err
	}
	if g, ok := gs[res.Group]; ok {
		cfg := g.config(res.Group)
		res.Config = &cfg
	}
	return c.writeGroupResult(res)
}

// GroupDelete removes a subscription group's config from every live
// master, and with cleanOffset its committed offsets (and simple
// consumers' positions) too. Members still connected keep consuming with
// the default config their next heartbeat creates; stop them first. The
// group's %RETRY% and %DLQ% topics are kept (delete them with `petrel
// topic delete` once their messages are not needed).
func (c *CLI) GroupDelete(ctx context.Context, group string, cleanOffset bool) error {
	if group == "" {
		return fmt.Errorf("%w: name the consumer group", ErrUsage)
	}
	ms, err := c.masters(ctx)
	if err != nil {
		return err
	}
	known := false
	for _, m := range ms {
		gs, err := c.brokerGroups(ctx, m.addr)
		if err != nil {
			return err
		}
		_, ok := gs[group]
		known = known || ok
	}
	if !known && !cleanOffset {
		return fmt.Errorf("%w: consumer group %q has no config on any broker; see `petrel group list` (to remove only its offsets, add --clean-offset)", ErrNotFound, group)
	}
	res := GroupResult{Group: group, Action: "deleted", Brokers: []string{}, CleanOffset: cleanOffset}
	for _, m := range ms {
		req := rmq.EncodeDeleteSubscriptionGroup(rmq.DeleteSubscriptionGroupRequest{GroupName: group, CleanOffset: cleanOffset})
		if _, err := c.callOK(ctx, m.addr, "delete subscription group "+group, req); err != nil {
			return err
		}
		res.Brokers = append(res.Brokers, m.name)
	}
	return c.writeGroupResult(res)
}

func (c *CLI) writeGroupResult(res GroupResult) error {
	if c.json() {
		return c.writeJSON(res)
	}
	brokers := strings.Join(res.Brokers, ", ")
	if res.Action == "deleted" {
		what := "config"
		if res.CleanOffset {
			what = "config and offsets"
		}
		_, err := fmt.Fprintf(c.cfg.Out, "group %s deleted on %s (%s)\n", res.Group, brokers, what)
		return err
	}
	g := res.Config
	if g == nil {
		_, err := fmt.Fprintf(c.cfg.Out, "group %s %s on %s\n", res.Group, res.Action, brokers)
		return err
	}
	_, err := fmt.Fprintf(c.cfg.Out, "group %s %s on %s: consume %s, orderly %v, broadcast %v, retry max %d, attributes %s\n",
		res.Group, res.Action, brokers, onOff(g.ConsumeEnable), g.Orderly, g.Broadcast, g.RetryMaxTimes, formatAttrs(g.Attributes))
	return err
}

func onOff(b bool) string {
	if b {
		return "enabled"
	}
	return "disabled"
}

// groupConfigs returns the configs of every master by group name (the
// first master's where several have one).
func (c *CLI) groupConfigs(ctx context.Context, ms []masterBroker) (map[string]GroupConfig, error) {
	out := map[string]GroupConfig{}
	for _, m := range ms {
		gs, err := c.brokerGroups(ctx, m.addr)
		if err != nil {
			return nil, err
		}
		for _, name := range slices.Sorted(maps.Keys(gs)) {
			if _, ok := out[name]; !ok {
				out[name] = gs[name].config(name)
			}
		}
	}
	return out, nil
}
