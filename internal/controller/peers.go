package controller

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// MaxVoters bounds the voters ParsePeers accepts (raft needs a majority of
// them for every commit; more than a handful only slows commits down).
const MaxVoters = 9

// ParsePeers parses --controller-peers: comma-separated id@host:port, e.g.
// "1@10.0.0.1:9878,2@10.0.0.2:9878,3@10.0.0.3:9878". Ids are ≥ 1 and
// unique, addresses unique host:port; the order is kept. Spaces around
// entries are ignored.
func ParsePeers(s string) ([]Voter, error) {
	var out []Voter
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		idText, addr, ok := strings.Cut(part, "@")
		if !ok {
			return nil, fmt.Errorf("controller peer %q: want id@host:port, e.g. 1@10.0.0.1:9878", part)
		}
		id, err := strconv.Atoi(strings.TrimSpace(idText))
		if err != nil || id < 1 {
			return nil, fmt.Errorf("controller peer %q: the id must be a whole number ≥ 1", part)
		}
		addr = strings.TrimSpace(addr)
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("controller peer %q: %q is not host:port", part, addr)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return nil, fmt.Errorf("controller peer %q: port %q is not 1-65535", part, port)
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			return nil, fmt.Errorf("controller peer %q: %s is not an address other voters can dial; give the voter's own address", part, host)
		}
		out = append(out, Voter{ID: id, Addr: addr})
		if len(out) > MaxVoters {
			return nil, fmt.Errorf("controller peers: more than %d voters", MaxVoters)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("controller peers: none given; want id@host:port,... e.g. 1@10.0.0.1:9878,2@10.0.0.2:9878,3@10.0.0.3:9878")
	}
	if err := checkVoters(out); err != nil {
		return nil, err
	}
	return out, nil
}

// FormatPeers writes voters as ParsePeers reads them.
func FormatPeers(vs []Voter) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = strconv.Itoa(v.ID) + "@" + v.Addr
	}
	return strings.Join(parts, ",")
}
