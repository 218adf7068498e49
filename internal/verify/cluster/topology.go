package cluster

import (
	"fmt"
	"strconv"
	"strings"
)

// Topology is the set of processes a run starts.
type Topology struct {
	// Name is the topology's canonical name: "single", "group:N" or
	// "groups=G,replicas=R,namesrv=K" (",controllers=N" when it has
	// controllers).
	Name string
	// NameServers is how many name servers the cluster has. With
	// Combined, the only one runs inside the broker's process.
	NameServers int
	// Groups are the broker groups (a master and its slaves each).
	Groups []Group
	// Combined runs the name server and the only broker in one `petrel
	// server` process (topology "single").
	Combined bool
	// Controllers is how many of the name servers embed a controller
	// voter (`petrel namesrv --controller-id ...`); 0: none. With
	// controllers every broker runs with --controller: the controller
	// owns the roles and assigns the replica ids, so a group's members
	// are all started the same way (RoleReplica) and which one is the
	// master is asked of the controller (Cluster.Master).
	Controllers int
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
	// RoleReplica is a `petrel broker --controller ...`: master or slave
	// as the controller decides.
	RoleReplica = "replica"
)

// Bounds of a parsed topology: enough for any test on one machine, and
// group names stay single letters (broker-a .. broker-z).
const (
	maxGroups      = 26
	maxReplicas    = 9
	maxNameServers = 9
	maxControllers = 9
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
//	...,controllers=N               the first N name servers embed a
//	                                controller voter; the brokers run
//	                                with --controller (N ≤ namesrv)
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
		return Topology{}, fmt.Errorf("cluster: unknown topology %q (known: single, groups=G,replicas=R,namesrv=K[,controllers=N], group:N)", s)
	}
}

// parseKeys parses "groups=G,replicas=R,namesrv=K,controllers=N" (keys
// in any order, each at most once, each defaulting to 1 but controllers
// to 0). replicas may also be one count per group joined by "+"
// ("replicas=3+2": broker-a of 3 replicas, broker-b of 2), which sets the
// number of groups (groups, if given, must agree).
func parseKeys(s string) (Topology, error) {
	vals := map[string]int{"groups": 1, "replicas": 1, "namesrv": 1, "controllers": 0}
	limits := map[string]int{"groups": maxGroups, "replicas": maxReplicas, "namesrv": maxNameServers, "controllers": maxControllers}
	seen := map[string]bool{}
	var perGroup []int // replicas=a+b+...
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok {
			return Topology{}, fmt.Errorf("cluster: topology %q: %q is not key=value (keys: groups, replicas, namesrv, controllers)", s, part)
		}
		limit, known := limits[k]
		if !known {
			return Topology{}, fmt.Errorf("cluster: topology %q: unknown key %q (keys: groups, replicas, namesrv, controllers)", s, k)
		}
		if seen[k] {
			return Topology{}, fmt.Errorf("cluster: topology %q: key %s given twice", s, k)
		}
		seen[k] = true
		if k == "replicas" && strings.Contains(v, "+") {
			for _, c := range strings.Split(v, "+") {
				n, err := strconv.Atoi(strings.TrimSpace(c))
				if err != nil || n < 1 || n > limit {
					return Topology{}, fmt.Errorf("cluster: topology %q: replicas=%s: want whole numbers from 1 to %d joined by +, one per group", s, v, limit)
				}
				perGroup = append(perGroup, n)
			}
			if len(perGroup) > maxGroups {
				return Topology{}, fmt.Errorf("cluster: topology %q: replicas=%s names %d groups, at most %d", s, v, len(perGroup), maxGroups)
			}
			continue
		}
		min := 1
		if k == "controllers" {
			min = 0
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < min || n > limit {
			return Topology{}, fmt.Errorf("cluster: topology %q: %s=%s: want a whole number from %d to %d", s, k, v, min, limit)
		}
		vals[k] = n
	}
	t := Replicated(vals["groups"], vals["replicas"], vals["namesrv"])
	if perGroup != nil {
		if seen["groups"] && vals["groups"] != len(perGroup) {
			return Topology{}, fmt.Errorf("cluster: topology %q: groups=%d but replicas names %d groups", s, vals["groups"], len(perGroup))
		}
		t.Groups = nil
		for i, n := range perGroup {
			t.Groups = append(t.Groups, Group{Name: GroupName(i), Replicas: n})
		}
		t.Name = fmt.Sprintf("groups=%d,replicas=%s,namesrv=%d", len(perGroup), joinInts(perGroup, "+"), t.NameServers)
	}
	if n := vals["controllers"]; n > 0 {
		if n > t.NameServers {
			return Topology{}, fmt.Errorf("cluster: topology %q: controllers=%d: the controllers are embedded in the name servers, so at most namesrv=%d (raise namesrv)", s, n, t.NameServers)
		}
		t = t.WithControllers(n)
	}
	return t, nil
}

func joinInts(ns []int, sep string) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, sep)
}

// WithControllers is t with its first n name servers embedding a
// controller voter (n ≤ t.NameServers) and every broker in controller
// mode.
func (t Topology) WithControllers(n int) Topology {
	t.Controllers = n
	t.Name = fmt.Sprintf("%s,controllers=%d", strings.Split(t.Name, ",controllers=")[0], n)
	return t
}

// Validate reports whether Start can run t.
func (t Topology) Validate() error {
	if t.Combined {
		if t.Controllers > 0 {
			return fmt.Errorf("cluster: topology %q: a combined topology (petrel server) embeds its own single voter; controllers=N needs groups=...,namesrv=K", t.Name)
		}
		if t.NameServers == 1 && len(t.Groups) == 1 && t.Groups[0].Replicas == 1 && t.Groups[0].Name != "" {
			return nil
		}
		return fmt.Errorf("cluster: topology %q: a combined topology is one petrel server (1 name server, 1 group of 1 replica); it has %d name servers and %d groups", t.Name, t.NameServers, len(t.Groups))
	}
	if t.NameServers < 1 {
		return fmt.Errorf("cluster: topology %q has no name server", t.Name)
	}
	if t.Controllers < 0 || t.Controllers > t.NameServers {
		return fmt.Errorf("cluster: topology %q: %d controllers, but they are embedded in the %d name servers", t.Name, t.Controllers, t.NameServers)
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
