package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Ports handed out once are never handed out again by this process, so
// two clusters of one verify run (or of parallel tests) cannot collide.
var (
	portsMu   sync.Mutex
	portsUsed = map[int]bool{}
)

// lowPortsFrom is where ports picked below the kernel's ephemeral range
// start.
const lowPortsFrom = 20000

// freePort reserves a free 127.0.0.1 port: it listens on it, closes the
// listener and remembers the port. It prefers a port below the kernel's
// ephemeral range: a port from inside it can become the local port of
// some outgoing connection (the fault proxy makes many) while its process
// is down between a kill and the restart, and the restart would then find
// it in use. Without room below the range it takes what listening on :0
// gives.
func freePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	if lo := ephemeralPortsFrom(); lo-lowPortsFrom >= 1000 {
		for range 1000 {
			port := lowPortsFrom + rand.IntN(lo-lowPortsFrom)
			if portsUsed[port] || !canListen(port) {
				continue
			}
			portsUsed[port] = true
			return port, nil
		}
	}
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !portsUsed[port] {
			portsUsed[port] = true
			return port, nil
		}
	}
	return 0, errors.New("no unused 127.0.0.1 port after 100 tries")
}

func canListen(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// freeAddr is freePort as "127.0.0.1:port".
func freeAddr() (string, error) {
	p, err := freePort()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), nil
}

// freeAddrs is n free addresses for the process named name.
func freeAddrs(name string, n int) ([]string, error) {
	addrs := make([]string, n)
	for i := range addrs {
		a, err := freeAddr()
		if err != nil {
			return nil, fmt.Errorf("cluster: ports for %s: %w", name, err)
		}
		addrs[i] = a
	}
	return addrs, nil
}

// ephemeralPortsFrom is the first port of the kernel's ephemeral range
// (Linux), or 0 when it cannot be read.
func ephemeralPortsFrom() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return lo
}
