package main

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
)

// listenFlag is one listen address of a server command and the flag that
// sets it.
type listenFlag struct {
	flag string // without the dashes, e.g. "broker-listen"
	addr string // "" or "off": not listened on
}

// checkListen listens on every address once and closes them again, so that
// a server command reports every address it cannot use, each naming its
// flag, before it starts anything (the data dir is not even opened).
func checkListen(addrs ...listenFlag) error {
	var errs []error
	var lns []net.Listener
	for _, a := range addrs {
		addr := strings.TrimSpace(a.addr)
		if addr == "" || strings.EqualFold(addr, "off") {
			continue
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			errs = append(errs, listenError(a.flag, addr, err))
			continue
		}
		lns = append(lns, ln)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return errors.Join(errs...)
}

// listenError says why addr cannot be listened on and how to fix it.
func listenError(flag, addr string, err error) error {
	var reason string
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		reason = "address already in use (another process, or another of this command's listeners, has it)"
	case errors.Is(err, syscall.EACCES):
		reason = "permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE)"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		reason = "no interface of this host has that address"
	default:
		reason = err.Error()
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			reason = oe.Err.Error()
		}
	}
	return fmt.Errorf("--%s %s: %s; pick another with --%s", flag, addr, reason, flag)
}

// brokerListens are the listen addresses of a broker's flags.
func (o *options) brokerListens() []listenFlag {
	return []listenFlag{{"broker-listen", o.brokerListen}, {"http-listen", o.httpListen}, {"grpc-listen", o.grpc.listen}}
}
