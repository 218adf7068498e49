package metrics

import (
	"errors"
	"sync/atomic"
)

// Readiness tracks the two conditions /readyz reports for a broker: its
// store has been opened and recovered, and some name server has accepted
// its registration (so clients can find it). The zero value is not ready.
// Its methods are safe for concurrent use.
type Readiness struct {
	recovered, registered atomic.Bool
}

// Errors Readiness.Err returns.
var (
	// ErrRecovering: the store is still being opened and recovered.
	ErrRecovering = errors.New("metrics: the store is still recovering")
	// ErrNotRegistered: no name server has accepted the broker yet.
	ErrNotRegistered = errors.New("metrics: no name server has accepted the broker's registration yet")
)

// SetRecovered records that the store is open and recovered.
func (r *Readiness) SetRecovered() { r.recovered.Store(true) }

// SetRegistered records that a name server accepted the registration.
func (r *Readiness) SetRegistered() { r.registered.Store(true) }

// Err is nil once both conditions hold, else ErrRecovering or
// ErrNotRegistered; it fits Options.Ready.
func (r *Readiness) Err() error {
	switch {
	case !r.recovered.Load():
		return ErrRecovering
	case !r.registered.Load():
		return ErrNotRegistered
	}
	return nil
}
