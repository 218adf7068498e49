package cluster

import (
	"fmt"
	"strconv"
	"strings"
)

// Topology is the set of processes a run starts.
type Topology struct {
	// Name is the topology's canonical name: "single", "group:N" or
	// "groups=G,replicas=R,namesrv=K".
	Name string
	// NameServers is how many name servers the cluster has. With
	// Combined, the only one runs inside the broker's process.
	NameServers int
	// Groups are the broker groups (a master and its slaves each).
	Groups []Group
	// Combined runs the name server and the only broker in one `petrel
	// server` process (topology "single").
	Combined bool
}

// Group is a broker group: Replicas processes sharing one broker name (a
// master and Replicas-1 slaves).
type Group struct {
	Name     string
	Replicas int
}

// Roles of a Process.
const (
	// RoleServer is a `petrel server`: a name server and a broker.
	RoleServer = "server"
	// RoleNamesrv is a `petrel namesrv`.
	RoleNamesrv = "namesrv"
	// RoleMaster is a `petrel broker --broker-id 0`, its group's master.
	RoleMaster = "master"
	// RoleSlave is a `petrel broker --broker-id N` with N ≥ 1.
	RoleSlave = "slave"
)

// Bounds of a parsed topology: enough for any test on one machine, and
// group names stay single letters (broker-a .. broker-z).
const (
	maxGroups      = 26
	maxReplicas    = 9
	maxNameServers = 9
)

// Single is one `petrel server` holding broker group broker-a.
func Single() Topology {
	return Topology{Name: "single", NameServers: 1, Groups: []Group{{Name: "broker-a", Replicas: 1}}, Combined: true}
}

// Replicated is groups broker groups (broker-a, broker-b, ...) of
// replicas processes each (broker id 0 the master, 1..replicas-1 slaves),
// registering with nameServers separate `petrel namesrv` processes.
func Replicated(groups, replicas, nameServers int) Topology {
	t := Topology{
		Name:        fmt.Sprintf("groups=%d,replicas=%d,namesrv=%d", groups, replicas, nameServers),
		NameServers: nameServers,
	}
	for g := range groups {
		t.Groups = append(t.Groups, Group{Name: GroupName(g), Replicas: replicas})
	}
	return t
}

// GroupName is the broker name of the i-th group (from 0): broker-a,
// broker-b, ...
func GroupName(i int) string { return "broker-" + string(rune('a'+i)) }

// ParseTopology parses a --topology value:
//
//	single                          one `petrel server` (also "")
//	groups=G,replicas=R,namesrv=K   K name servers and G groups of R
//	                                brokers each (a master, R-1 slaves);
//	                                every key optional, default 1
//	group:N                         groups=1,replicas=N,namesrv=1
func ParseTopology(s string) (Topology, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "" || s == "single":
		return Single(), nil
	case strings.HasPrefix(s, "group:"):
		n, err := strconv.Atoi(strings.TrimPrefix(s, "group:"))
		if err != nil || n < 2 || n > maxReplicas {
			return Topology{}, fmt.Errorf("cluster: topology %q: want group:N with a whole number N of replicas, 2 ≤ N ≤ %d", s, maxReplicas)
		}
		t := Replicated(1, n, 1)
		t.Name = s
		return t, nil
	case strings.Contains(s, "="):
		return parseKeys(s)
	default:
		return Topology{}, fmt.Errorf("cluster: unknown topology %q (known: single, groups=G,replicas=R,namesrv=K, group:N)", s)
	}
}

// parseKeys parses "groups=G,replicas=R,namesrv=K" (keys in any order,
// each at most once, each defaulting to 1).
func parseKeys(s string) (Topology, error) {
	vals := map[string]int{"groups": 1, "replicas": 1, "namesrv": 1}
	limits := map[string]int{"groups": maxGroups, "replicas": maxReplicas, "namesrv": maxNameServers}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok {
			return Topology{}, fmt.Errorf("cluster: topology %q: %q is not key=value (keys: groups, replicas, namesrv)", s, part)
		}
		limit, known := limits[k]
		if !known {
			return Topology{}, fmt.Errorf("cluster: topology %q: unknown key %q (keys: groups, replicas, namesrv)", s, k)
		}
		if seen[k] {
			return Topology{}, fmt.Errorf("cluster: topology %q: key %s given twice", s, k)
		}
		seen[k] = true
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > limit {
			return Topology{}, fmt.Errorf("cluster: topology %q: %s=%s: want a whole number from 1 to %d", s, k, v, limit)
		}
		vals[k] = n
	}
	return Replicated(vals["groups"], vals["replicas"], vals["namesrv"]), nil
}

// Validate reports whether Start can run t.
func (t Topology) Validate() error {
	if t.Combined {
		if t.NameServers == 1 && len(t.Groups) == 1 && t.Groups[0].Replicas == 1 && t.Groups[0].Name != "" {
			return nil
		}
		return fmt.Errorf("cluster: topology %q: a combined topology is one petrel server (1 name server, 1 group of 1 replica); it has %d name servers and %d groups", t.Name, t.NameServers, len(t.Groups))
	}
	if t.NameServers < 1 {
		return fmt.Errorf("cluster: topology %q has no name server", t.Name)
	}
	if len(t.Groups) == 0 {
		return fmt.Errorf("cluster: topology %q has no broker group", t.Name)
	}
	seen := map[string]bool{}
	for _, g := range t.Groups {
		if g.Name == "" || seen[g.Name] {
			return fmt.Errorf("cluster: topology %q: group names must be distinct and not empty (%q)", t.Name, g.Name)
		}
		seen[g.Name] = true
		if g.Replicas < 1 {
			return fmt.Errorf("cluster: topology %q: group %s has %d replicas; want at least 1 (its master)", t.Name, g.Name, g.Replicas)
		}
	}
	return nil
}

// Slaves reports whether some group of t has a slave.
func (t Topology) Slaves() bool {
	for _, g := range t.Groups {
		if g.Replicas > 1 {
			return true
		}
	}
	return false
}

// String is the topology's name.
func (t Topology) String() string { return t.Name }
