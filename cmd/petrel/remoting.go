package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/petrelmq/petrel/internal/remoting"
)

// remotingOptions are the limits of the remoting (RocketMQ 4.x) port, on
// the broker and the name server; 0 turns a limit off.
type remotingOptions struct {
	readBudget     int64
	connReadBudget int64
	frameTimeout   time.Duration
	idleTimeout    time.Duration
	maxConns       int
	maxConnsPerIP  int
	connWriteQueue int64
}

func addRemotingFlags(fl *pflag.FlagSet, o *remotingOptions) {
	fl.Int64Var(&o.readBudget, "remoting-read-budget-bytes", remoting.DefaultServerReadBudgetBytes,
		"bytes of remoting frames the server holds at once over all connections (being read, or requests being handled); a connection waits for room rather than read past it; 0 turns it off")
	fl.Int64Var(&o.connReadBudget, "remoting-conn-read-budget-bytes", remoting.DefaultConnReadBudgetBytes,
		fmt.Sprintf("the same bound for one connection (at least the %d-byte frame limit); 0 turns it off", remoting.DefaultMaxFrameBytes))
	fl.DurationVar(&o.frameTimeout, "remoting-frame-timeout", remoting.DefaultFrameReadTimeout,
		"close a remoting connection whose started frame has not fully arrived in this long; 0 turns it off")
	fl.DurationVar(&o.idleTimeout, "remoting-idle-timeout", remoting.DefaultIdleTimeout,
		"close a remoting connection that sends nothing, or reads none of its answers, for this long (RocketMQ's channel idle time; clients send a heartbeat every 30 s); 0 turns it off")
	fl.IntVar(&o.maxConns, "remoting-max-conns", remoting.DefaultMaxConns,
		"refuse remoting connections beyond this many open at once; 0 turns it off")
	fl.IntVar(&o.maxConnsPerIP, "remoting-max-conns-per-ip", remoting.DefaultMaxConnsPerIP,
		"refuse remoting connections beyond this many open from one source address; 0 turns it off")
	fl.Int64Var(&o.connWriteQueue, "remoting-conn-write-queue-bytes", remoting.DefaultConnWriteQueueBytes,
		"stop reading from a remoting connection while more than this many bytes of answers wait for it to read them (until half are written); 0 turns it off")
}

// limits turns the flags into remoting.Limits, where 0 takes the default
// and a negative value is off.
func (o *remotingOptions) limits() (remoting.Limits, error) {
	off64 := func(v int64) int64 {
		if v == 0 {
			return -1
		}
		return v
	}
	offDur := func(v time.Duration) time.Duration {
		if v == 0 {
			return -1
		}
		return v
	}
	offInt := func(v int) int {
		if v == 0 {
			return -1
		}
		return v
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"--remoting-read-budget-bytes", o.readBudget}, {"--remoting-conn-read-budget-bytes", o.connReadBudget},
		{"--remoting-frame-timeout", int64(o.frameTimeout)}, {"--remoting-idle-timeout", int64(o.idleTimeout)},
		{"--remoting-max-conns", int64(o.maxConns)}, {"--remoting-max-conns-per-ip", int64(o.maxConnsPerIP)},
		{"--remoting-conn-write-queue-bytes", o.connWriteQueue},
	} {
		if f.v < 0 {
			return remoting.Limits{}, fmt.Errorf("%s is negative; give a positive value, or 0 to turn the limit off", f.name)
		}
	}
	l := remoting.Limits{
		ServerReadBudgetBytes: off64(o.readBudget),
		ConnReadBudgetBytes:   off64(o.connReadBudget),
		FrameReadTimeout:      offDur(o.frameTimeout),
		IdleTimeout:           offDur(o.idleTimeout),
		MaxConns:              offInt(o.maxConns),
		MaxConnsPerIP:         offInt(o.maxConnsPerIP),
		ConnWriteQueueBytes:   off64(o.connWriteQueue),
	}
	if err := l.Validate(0); err != nil {
		return l, fmt.Errorf("--remoting-conn-read-budget-bytes / --remoting-read-budget-bytes: %w", err)
	}
	return l, nil
}
