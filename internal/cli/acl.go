package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// AclSpec is what `acl create` and `acl update` send: one policy entry
// per resource, each with the same actions, source IPs and decision.
type AclSpec struct {
	// Subject is "User:NAME", or a bare NAME (taken as User:NAME).
	Subject string
	// Resources: "*", "Cluster", "Topic:NAME", "Topic:PREFIX*", "Topic:*",
	// "Group:..."; an element may be a comma-separated list.
	Resources []string
	// Actions: Pub, Sub, Create, Update, Delete, Get, List, All (any case);
	// an element may be a comma-separated list.
	Actions []string
	// Decision: allow or deny (any case).
	Decision string
	// SourceIPs: addresses or CIDR ranges the entries apply to (none:
	// from anywhere); an element may be a comma-separated list.
	SourceIPs []string
	// PolicyType: custom (default) or default.
	PolicyType string
	// Broker limits the request to one broker: host:port or a master's
	// broker name; "" every live master.
	Broker string
}

// AclView is one subject's ACL as one broker has it (`acl get`, `acl
// list`).
type AclView struct {
	Broker   string           `json:"broker"`
	Address  string           `json:"address"`
	Subject  string           `json:"subject"`
	Policies []rmq.PolicyInfo `json:"policies"`
}

// ParseSubject reads --subject: "User:NAME" (the prefix in any case) or a
// bare NAME, returned as "User:NAME".
func ParseSubject(s string) (string, error) {
	s = strings.TrimSpace(s)
	name := s
	if typ, rest, ok := strings.Cut(s, ":"); ok {
		if !strings.EqualFold(typ, "User") {
			return "", fmt.Errorf("%w: --subject %q: want User:NAME (or NAME)", ErrUsage, s)
		}
		name = rest
	}
	if name == "" {
		return "", fmt.Errorf("%w: --subject: name the user, as User:NAME (or NAME)", ErrUsage)
	}
	if err := checkUserName(name); err != nil {
		return "", fmt.Errorf("%w: --subject %q: the user name may not hold colons, commas or white space", ErrUsage, s)
	}
	return "User:" + name, nil
}

// splitList flattens repeated flags whose values may be comma lists.
func splitList(in []string) []string {
	var out []string
	for _, v := range in {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// ParseResource reads one --resource: "*", "Cluster" or "Cluster:NAME",
// "Topic:NAME", "Topic:PREFIX*", "Topic:*", the same for "Group:", with
// the type in any case; it returns the type spelled as RocketMQ does.
func ParseResource(s string) (string, error) {
	if s == "*" {
		return s, nil
	}
	typ, name, hasName := strings.Cut(s, ":")
	var canon string
	for _, t := range []string{"Cluster", "Topic", "Group"} {
		if strings.EqualFold(typ, t) {
			canon = t
		}
	}
	switch {
	case canon == "":
		return "", fmt.Errorf("%w: --resource %q: want *, Cluster, Topic:NAME, Topic:PREFIX*, Topic:*, Group:NAME, Group:PREFIX* or Group:*", ErrUsage, s)
	case canon == "Cluster" && !hasName:
		return canon, nil
	case name == "":
		return "", fmt.Errorf("%w: --resource %q: name the %s after the colon (or * for every one)", ErrUsage, s, strings.ToLower(canon))
	case strings.ContainsAny(name, " \t\r\n,"):
		return "", fmt.Errorf("%w: --resource %q: a name may not hold commas or white space", ErrUsage, s)
	case strings.Contains(strings.TrimSuffix(name, "*"), "*"):
		return "", fmt.Errorf("%w: --resource %q: * may only end a name (a prefix) or stand alone", ErrUsage, s)
	}
	return canon + ":" + name, nil
}

// ParseActions reads --action values (comma lists, any case) and returns
// them as RocketMQ spells them, without repeats.
func ParseActions(in []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, a := range splitList(in) {
		act, err := auth.ParseAction(a)
		if err != nil {
			return nil, fmt.Errorf("%w: --action %q: want Pub, Sub, Create, Update, Delete, Get, List or All", ErrUsage, a)
		}
		canon := string(act)
		if !seen[canon] {
			seen[canon] = true
			out = append(out, canon)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: give the actions with --action, e.g. --action Pub,Sub", ErrUsage)
	}
	return out, nil
}

func parseDecision(s string) (string, error) {
	switch strings.ToLower(s) {
	case "allow":
		return "Allow", nil
	case "deny":
		return "Deny", nil
	case "":
		return "", fmt.Errorf("%w: give --decision allow or --decision deny", ErrUsage)
	}
	return "", fmt.Errorf("%w: --decision %q: want allow or deny", ErrUsage, s)
}

// parsePolicyType reads --policy-type; def is the value of "".
func parsePolicyType(s, def string) (string, error) {
	switch strings.ToLower(s) {
	case "":
		return def, nil
	case "custom":
		return "Custom", nil
	case "default":
		return "Default", nil
	}
	return "", fmt.Errorf("%w: --policy-type %q: want custom or default", ErrUsage, s)
}

// parseSourceIPs checks --source-ip values as the broker reads them and
// returns them as given.
func parseSourceIPs(in []string) ([]string, error) {
	out := splitList(in)
	for _, s := range out {
		if _, err := auth.ParseSourceIP(s); err != nil {
			return nil, fmt.Errorf("%w: --source-ip %q: want an IP address (10.0.0.5) or a CIDR range (10.0.0.0/24)", ErrUsage, s)
		}
	}
	return out, nil
}

// aclBody checks spec and builds the AclInfo of a create or update.
func aclBody(spec AclSpec) (rmq.AclInfo, error) {
	subject, err := ParseSubject(spec.Subject)
	if err != nil {
		return rmq.AclInfo{}, err
	}
	var resources []string
	for _, r := range splitList(spec.Resources) {
		canon, err := ParseResource(r)
		if err != nil {
			return rmq.AclInfo{}, err
		}
		resources = append(resources, canon)
	}
	if len(resources) == 0 {
		return rmq.AclInfo{}, fmt.Errorf("%w: give the resources with --resource, e.g. --resource Topic:orders", ErrUsage)
	}
	actions, err := ParseActions(spec.Actions)
	if err != nil {
		return rmq.AclInfo{}, err
	}
	decision, err := parseDecision(spec.Decision)
	if err != nil {
		return rmq.AclInfo{}, err
	}
	ips, err := parseSourceIPs(spec.SourceIPs)
	if err != nil {
		return rmq.AclInfo{}, err
	}
	pt, err := parsePolicyType(spec.PolicyType, "Custom")
	if err != nil {
		return rmq.AclInfo{}, err
	}
	p := rmq.PolicyInfo{PolicyType: pt}
	for _, r := range resources {
		p.Entries = append(p.Entries, rmq.PolicyEntryInfo{Resource: r, Actions: actions, SourceIps: ips, Decision: decision})
	}
	return rmq.AclInfo{Subject: subject, Policies: []rmq.PolicyInfo{p}}, nil
}

// AclCreate adds spec's entries to the subject's ACL on every live master
// (or spec.Broker).
func (c *CLI) AclCreate(ctx context.Context, spec AclSpec) error {
	return c.aclWrite(ctx, spec, rmq.EncodeCreateACL, "created")
}

// AclUpdate replaces the subject's entries of the same policy type and
// resources on every live master (or spec.Broker).
func (c *CLI) AclUpdate(ctx context.Context, spec AclSpec) error {
	return c.aclWrite(ctx, spec, rmq.EncodeUpdateACL, "updated")
}

func (c *CLI) aclWrite(ctx context.Context, spec AclSpec, encode func(rmq.AclInfo) *remoting.Command, action string) error {
	info, err := aclBody(spec)
	if err != nil {
		return err
	}
	res := AuthResult{Subject: info.Subject, Action: action}
	werr := c.authWrite(ctx, spec.Broker, &res, func() *remoting.Command { return encode(info) },
		action[:len(action)-1]+" the ACL of "+info.Subject)
	if err := c.writeAuthResult(res, "ACL of "+info.Subject); err != nil {
		return err
	}
	return werr
}

// AclDelete deletes the subject's entries for each of resources (none:
// its whole ACL) of policyType ("": not sent, which RocketMQ reads as
// custom) on every live master (or broker).
func (c *CLI) AclDelete(ctx context.Context, subject string, resources []string, policyType, broker string) error {
	subject, err := ParseSubject(subject)
	if err != nil {
		return err
	}
	pt, err := parsePolicyType(policyType, "")
	if err != nil {
		return err
	}
	rs := []string{""}
	if list := splitList(resources); len(list) > 0 {
		rs = rs[:0]
		for _, r := range list {
			canon, err := ParseResource(r)
			if err != nil {
				return err
			}
			rs = append(rs, canon)
		}
	}
	res := AuthResult{Subject: subject, Action: "deleted"}
	var werr error
	for _, r := range rs {
		h := rmq.DeleteAclRequest{Subject: subject, PolicyType: pt, Resource: r}
		what := "delete the ACL of " + subject
		if r != "" {
			what = "delete " + r + " from the ACL of " + subject
		}
		one := AuthResult{}
		if err := c.authWrite(ctx, broker, &one, func() *remoting.Command { return rmq.EncodeDeleteACL(h) }, what); err != nil {
			werr = err
		}
		res.Failed = append(res.Failed, one.Failed...)
		for _, b := range one.Brokers {
			if !containsString(res.Brokers, b) {
				res.Brokers = append(res.Brokers, b)
			}
		}
	}
	if res.Brokers == nil {
		res.Brokers = []string{}
	}
	if err := c.writeAuthResult(res, "ACL of "+subject); err != nil {
		return err
	}
	return werr
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// AclGet prints the subject's ACL as every live master (or broker) has
// it; none having one is an ErrNotFound error.
func (c *CLI) AclGet(ctx context.Context, subject, broker string) error {
	subject, err := ParseSubject(subject)
	if err != nil {
		return err
	}
	ms, err := c.authTargets(ctx, broker)
	if err != nil {
		return err
	}
	var out []AclView
	for _, m := range ms {
		resp, err := c.callOK(ctx, m.addr, "get the ACL of "+subject, rmq.EncodeGetACL(subject))
		if err != nil {
			return err
		}
		if emptyBody(resp.Body) {
			continue // RocketMQ answers a subject without ACL with SUCCESS and no body
		}
		a, err := rmq.DecodeAclInfo(resp.Body)
		if err != nil {
			return fmt.Errorf("%w: the ACL of %s from %s is not valid JSON: %w", ErrRefused, subject, m.addr, err)
		}
		out = append(out, aclView(m, a))
	}
	if len(out) == 0 {
		return fmt.Errorf("%w: no broker has an ACL for %s; create one with `petrel acl create --subject %s --resource Topic:NAME --action Pub --decision allow`", ErrNotFound, subject, subject)
	}
	return c.writeAcls(out)
}

// AclList prints the ACLs of every live master (or broker) whose subject
// contains subjectFilter and that have a resource containing
// resourceFilter ("" all).
func (c *CLI) AclList(ctx context.Context, subjectFilter, resourceFilter, broker string) error {
	ms, err := c.authTargets(ctx, broker)
	if err != nil {
		return err
	}
	out := []AclView{}
	for _, m := range ms {
		resp, err := c.callOK(ctx, m.addr, "list ACLs", rmq.EncodeListACLs(rmq.ListAclsRequest{SubjectFilter: subjectFilter, ResourceFilter: resourceFilter}))
		if err != nil {
			return err
		}
		as, err := rmq.DecodeAclInfos(resp.Body)
		if err != nil {
			return fmt.Errorf("%w: the ACLs of %s are not valid JSON: %w", ErrRefused, m.addr, err)
		}
		for _, a := range as {
			out = append(out, aclView(m, a))
		}
	}
	return c.writeAcls(out)
}

func emptyBody(b []byte) bool {
	s := strings.TrimSpace(string(b))
	return s == "" || s == "null"
}

func aclView(m masterBroker, a rmq.AclInfo) AclView {
	v := AclView{Broker: m.name, Address: m.addr, Subject: a.Subject, Policies: a.Policies}
	if v.Policies == nil {
		v.Policies = []rmq.PolicyInfo{}
	}
	return v
}

func (c *CLI) writeAcls(as []AclView) error {
	sort.SliceStable(as, func(i, j int) bool {
		if as[i].Subject != as[j].Subject {
			return as[i].Subject < as[j].Subject
		}
		return as[i].Broker < as[j].Broker
	})
	if c.json() {
		return c.writeJSON(struct {
			Acls []AclView `json:"acls"`
		}{as})
	}
	t := newTable("SUBJECT", "POLICY", "RESOURCE", "ACTIONS", "SOURCE IPS", "DECISION", "BROKER")
	for _, a := range as {
		for _, p := range a.Policies {
			for _, e := range p.Entries {
				t.add(a.Subject, p.PolicyType, e.Resource, strings.Join(e.Actions, ","), strings.Join(e.SourceIps, ","), e.Decision, a.Broker)
			}
		}
	}
	return t.write(c.cfg.Out)
}
