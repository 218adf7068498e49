// Package client is the brokers' and operator tools' side of the
// controller's remoting api: it finds the raft leader among the configured
// controller addresses and follows it.
package client

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/petrelmq/petrel/internal/controller/api"
	"github.com/petrelmq/petrel/internal/netx"
)

// Errors of the calls; test with errors.Is.
var (
	// ErrStale: a compare-and-set expectation failed; the error is a
	// *StaleError carrying the group as committed.
	ErrStale = errors.New("controller client: stale expectation")
	// ErrRefused: the request can never succeed as sent.
	ErrRefused = errors.New("controller client: refused")
	// ErrNoLeader: no controller address answered as the leader.
	ErrNoLeader = errors.New("controller client: no controller leader reachable")
)

// StaleError is the error of a CodeStale answer.
type StaleError struct{ Group api.GroupView }

func (e *StaleError) Error() string { return "controller client: stale expectation" }

// Is makes errors.Is(err, ErrStale) true.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// Options configures a Client.
type Options struct {
	Network netx.Network
	Timeout time.Duration
	Logger  *slog.Logger
}

// Client calls the controller leader.
type Client struct{}

// New returns a Client of the controller addresses.
func New(addrs []string, opts Options) *Client { return &Client{} }

// Close closes the connections.
func (c *Client) Close() error { return nil }

func (c *Client) Register(ctx context.Context, req *api.RegisterRequest) (*api.RegisterResponse, error) {
	return nil, ErrNoLeader
}
func (c *Client) Heartbeat(ctx context.Context, req *api.HeartbeatRequest) (*api.HeartbeatResponse, error) {
	return nil, ErrNoLeader
}
func (c *Client) AlterISR(ctx context.Context, req *api.AlterISRRequest) (*api.GroupView, error) {
	return nil, ErrNoLeader
}
func (c *Client) Groups(ctx context.Context, req *api.GroupsRequest) (*api.GroupsResponse, error) {
	return nil, ErrNoLeader
}
func (c *Client) Elect(ctx context.Context, req *api.ElectRequest) (*api.GroupView, error) {
	return nil, ErrNoLeader
}
func (c *Client) Transfer(ctx context.Context, req *api.TransferRequest) (*api.GroupView, error) {
	return nil, ErrNoLeader
}
func (c *Client) Resign(ctx context.Context, req *api.ResignRequest) (*api.GroupView, error) {
	return nil, ErrNoLeader
}
