// Package controller is Petrel's failover controller: a raft-replicated
// state machine (package fsm) of every broker group's master, epoch and
// in-sync set, served to brokers and operator tools over remoting
// (package api's codes), with liveness and master leases kept off the raft
// path.
package controller

import (
	"context"
	"errors"

	"github.com/petrelmq/petrel/internal/controller/fsm"
)

// ErrNotLeader: the command was not applied because this voter does not
// lead; Log.Leader names the leader when one is known.
var ErrNotLeader = errors.New("controller: not the leader")

// Log is the replicated log the Service applies commands through: the
// real one is hashicorp/raft (NewRaft), the simulation and unit tests use
// a linearizable in-memory fake (NewFakeLog).
type Log interface {
	// Apply commits cmd and applies it on this voter's state; only the
	// leader may apply (ErrNotLeader otherwise). The fsm's refusals
	// (fsm.ErrStale, ...) come back as the error with a zero Result.
	Apply(ctx context.Context, cmd fsm.Command) (fsm.Result, error)
	// Read calls f with this voter's applied state; f must not keep it or
	// change it.
	Read(f func(*fsm.State))
	// IsLeader reports whether this voter leads now.
	IsLeader() bool
	// Leader is the leader's voter id and controller address ("" unknown).
	Leader() (id int, addr string)
	// LeaderCh receives true when this voter becomes leader and false when
	// it stops (buffered; a slow reader may miss intermediate values but
	// always sees the latest).
	LeaderCh() <-chan bool
	// VerifyLeader confirms with a quorum that this voter still leads.
	VerifyLeader(ctx context.Context) error
	// Barrier returns once every command committed before it is applied
	// here (a new leader calls it before it reads its state).
	Barrier(ctx context.Context) error
	// Voters lists the configured voters (id, controller address).
	Voters() []Voter
	Close() error
}

// Voter is one controller voter.
type Voter struct {
	ID   int
	Addr string
}
