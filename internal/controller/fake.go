package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/petrelmq/petrel/internal/controller/fsm"
)

// ErrLogClosed is returned by a FakeLog's calls after Close.
var ErrLogClosed = errors.New("controller: log closed")

// FakeLog is a linearizable in-memory Log: one fsm.State, every Apply
// applied synchronously under a mutex (after a round trip through the
// fsm's command codec, as the raft log does). Tests and the simulation
// drive leadership by hand with SetLeader and SetLeaderAddr, and inject
// failures with FailNext and FailNextVerify. A new FakeLog leads (a
// one-voter log) and its LeaderCh holds true.
type FakeLog struct {
	mu         sync.Mutex
	voter      Voter
	voters     []Voter
	state      *fsm.State
	leading    bool
	leaderAddr string // the leader's address while this log does not lead
	failApply  error
	failVerify error
	failBarr   error
	closed     bool
	applied    int
	verifies   int
	barriers   int
	ch         chan bool
}

// NewFakeLog returns a leading FakeLog of one voter.
func NewFakeLog(voter Voter) *FakeLog {
	f := &FakeLog{voter: voter, voters: []Voter{voter}, state: fsm.NewState(), leading: true, ch: make(chan bool, 1)}
	f.ch <- true
	return f
}

// SetLeader makes this voter lead or stop leading; LeaderCh receives the
// change (only a change: setting the current value sends nothing).
func (f *FakeLog) SetLeader(leading bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.leading == leading {
		return
	}
	f.leading = leading
	f.notify(leading)
}

// notify puts v in the channel, replacing an unread value (the reader
// always sees the latest). Called with f.mu held.
func (f *FakeLog) notify(v bool) {
	select {
	case <-f.ch:
	default:
	}
	f.ch <- v
}

// SetLeaderAddr sets the address Leader reports while this voter does not
// lead ("" when no leader is known); the id is that of the voter in
// Voters with this address, else 0.
func (f *FakeLog) SetLeaderAddr(addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leaderAddr = addr
}

// SetVoters replaces the list Voters returns (this voter is not added).
func (f *FakeLog) SetVoters(voters []Voter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.voters = append([]Voter(nil), voters...)
}

// FailNext makes the next Apply fail with err (and apply nothing).
func (f *FakeLog) FailNext(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failApply = err
}

// FailNextVerify makes the next VerifyLeader fail with err.
func (f *FakeLog) FailNextVerify(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failVerify = err
}

// FailNextBarrier makes the next Barrier fail with err.
func (f *FakeLog) FailNextBarrier(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failBarr = err
}

// Stats reports how many commands were applied and how many VerifyLeader
// and Barrier calls were made.
func (f *FakeLog) Stats() (applied, verifies, barriers int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied, f.verifies, f.barriers
}

// Apply implements Log.
func (f *FakeLog) Apply(ctx context.Context, cmd fsm.Command) (fsm.Result, error) {
	if err := ctx.Err(); err != nil {
		return fsm.Result{}, err
	}
	b, err := fsm.EncodeCommand(cmd)
	if err != nil {
		return fsm.Result{}, fmt.Errorf("controller: encode command: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return fsm.Result{}, ErrLogClosed
	}
	if !f.leading {
		return fsm.Result{}, ErrNotLeader
	}
	if err := f.failApply; err != nil {
		f.failApply = nil
		return fsm.Result{}, err
	}
	c, err := fsm.DecodeCommand(b)
	if err != nil {
		return fsm.Result{}, fmt.Errorf("controller: decode command: %w", err)
	}
	f.applied++
	res, err := f.state.Apply(c)
	if err != nil {
		return fsm.Result{}, err
	}
	return res, nil
}

// Read implements Log.
func (f *FakeLog) Read(fn func(*fsm.State)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f.state)
}

// IsLeader implements Log.
func (f *FakeLog) IsLeader() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leading && !f.closed
}

// Leader implements Log.
func (f *FakeLog) Leader() (int, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.leading {
		return f.voter.ID, f.voter.Addr
	}
	if f.leaderAddr == "" {
		return 0, ""
	}
	for _, v := range f.voters {
		if v.Addr == f.leaderAddr {
			return v.ID, v.Addr
		}
	}
	return 0, f.leaderAddr
}

// LeaderCh implements Log.
func (f *FakeLog) LeaderCh() <-chan bool { return f.ch }

// VerifyLeader implements Log.
func (f *FakeLog) VerifyLeader(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.verifies++
	if f.closed {
		return ErrLogClosed
	}
	if err := f.failVerify; err != nil {
		f.failVerify = nil
		return err
	}
	if !f.leading {
		return ErrNotLeader
	}
	return nil
}

// Barrier implements Log.
func (f *FakeLog) Barrier(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.barriers++
	if f.closed {
		return ErrLogClosed
	}
	if err := f.failBarr; err != nil {
		f.failBarr = nil
		return err
	}
	if !f.leading {
		return ErrNotLeader
	}
	return nil
}

// Voters implements Log.
func (f *FakeLog) Voters() []Voter {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Voter(nil), f.voters...)
}

// Close implements Log.
func (f *FakeLog) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}
