package cluster

import (
	"fmt"
	"strconv"
	"strings"
)

// Topology is the set of processes a run starts.
type Topology struct {
	// Name is what ParseTopology was given ("single").
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
)

// Single is one `petrel server` holding broker group broker-a.
func Single() Topology {
	return Topology{Name: "single", NameServers: 1, Groups: []Group{{Name: "broker-a", Replicas: 1}}, Combined: true}
}

// ParseTopology parses a --topology value. Only "single" (also "") can be
// started today; "group:N" (a broker group of N replicas) is recognised and
// refused until replication exists.
func ParseTopology(s string) (Topology, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "" || s == "single":
		return Single(), nil
	case strings.HasPrefix(s, "group:"):
		n, err := strconv.Atoi(strings.TrimPrefix(s, "group:"))
		if err != nil || n < 2 {
			return Topology{}, fmt.Errorf("cluster: topology %q: want group:N with a whole number N ≥ 2 of replicas", s)
		}
		return Topology{}, fmt.Errorf("cluster: topology %s needs replication, which is not built yet; use single", s)
	default:
		return Topology{}, fmt.Errorf("cluster: unknown topology %q (known: single)", s)
	}
}

// Validate reports whether Start can run t.
func (t Topology) Validate() error {
	if t.Combined && t.NameServers == 1 && len(t.Groups) == 1 && t.Groups[0].Replicas == 1 && t.Groups[0].Name != "" {
		return nil
	}
	return fmt.Errorf("cluster: topology %q (%d name servers, %d groups, combined %v) cannot be started: only single (one petrel server) is built; replicas come with replication", t.Name, t.NameServers, len(t.Groups), t.Combined)
}

// String is the topology's name.
func (t Topology) String() string { return t.Name }
