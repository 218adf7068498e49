package controller

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/remoting"
)

// ServiceConfig configures the controller's service: timing of liveness
// and leases (replication.md §2.3, §2.6) and its dependencies.
type ServiceConfig struct {
	// Heartbeat is how often brokers heartbeat and the liveness loop ticks.
	Heartbeat time.Duration
	// SessionTimeout: a replica without a heartbeat for this long is dead;
	// a new leader waits this long before it declares anyone dead.
	SessionTimeout time.Duration
	// Lease is the master lease a granted heartbeat extends (from the
	// broker's own send time).
	Lease time.Duration
	// Drift bounds the clock-rate difference between broker and controller.
	Drift float64
	// Margin is added to the lease bound before a master is replaced.
	Margin time.Duration
	// Unclean allows elections outside the in-sync set (audited).
	Unclean bool
	// Clock: default clock.Real.
	Clock clock.Clock
	// Logger: default discard.
	Logger *slog.Logger
}

// DefaultServiceConfig returns the documented defaults.
func DefaultServiceConfig() ServiceConfig {
	return ServiceConfig{
		Heartbeat:      500 * time.Millisecond,
		SessionTimeout: 4 * time.Second,
		Lease:          3 * time.Second,
		Drift:          0.05,
		Margin:         200 * time.Millisecond,
	}
}

// Validate checks the timing rules.
func (c ServiceConfig) Validate() error {
	if c.Heartbeat <= 0 {
		return errors.New("controller: the heartbeat interval must be positive")
	}
	return fmt.Errorf("controller: not yet")
}

// Service serves the controller's remoting codes over a Log.
type Service struct {
	cfg ServiceConfig
	log Log
}

// NewService returns a Service over log; call Validate on cfg first.
func NewService(cfg ServiceConfig, log Log) *Service { return &Service{cfg: cfg, log: log} }

// Register installs the handlers of every api code on srv.
func (s *Service) Register(srv *remoting.Server) {}

// Start runs the liveness loop.
func (s *Service) Start() {}

// Close stops the liveness loop and waits for it.
func (s *Service) Close() error { return nil }
