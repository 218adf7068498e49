// Package client is the brokers' and operator tools' side of the
// controller's remoting api (package api): it finds the raft leader among
// the configured controller addresses and follows it.
//
// A call goes first to the leader it last reached, then to the
// configured addresses in order, following a CodeNotLeader answer's
// leader hint (api.ExtLeader) at once; it tries each address at most once
// per call (one pass), so a call without a reachable leader ends with
// ErrNoLeader instead of looping.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/petrelmq/petrel/internal/controller/api"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/remoting"
)

// Errors of the calls; test with errors.Is.
var (
	// ErrStale: a compare-and-set expectation failed; the error is a
	// *StaleError carrying the group as committed.
	ErrStale = errors.New("controller client: stale master, epoch, in-sync set version or incarnation")
	// ErrRefused: the request can never succeed as sent (unknown group or
	// replica, a target outside the in-sync set, invalid fields); the
	// error carries the controller's remark.
	ErrRefused = errors.New("controller client: refused")
	// ErrNoLeader: no configured controller answered as the leader in one
	// pass over the addresses.
	ErrNoLeader = errors.New("controller client: no controller leader reachable")
)

// StaleError is the error of a CodeStale answer: Group is the group as
// the controller has committed it (zero when the answer had no body).
type StaleError struct {
	Group  api.GroupView
	Remark string
}

func (e *StaleError) Error() string {
	if e.Remark == "" {
		return ErrStale.Error()
	}
	return ErrStale.Error() + ": " + e.Remark
}

// Is makes errors.Is(err, ErrStale) hold.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// DefaultTimeout bounds a call (all its attempts) when Options.Timeout is 0.
const DefaultTimeout = 10 * time.Second

// Options configures a Client.
type Options struct {
	// Network dials the controllers; default the real network.
	Network netx.Network
	// Timeout bounds each call, all attempts together (the call's ctx may
	// end it sooner). Default DefaultTimeout. An operator election waits
	// for the old master's lease (Lease·(1+Drift)+Margin, 3.35 s by
	// default): keep it above that.
	Timeout time.Duration
	// Logger: default discard.
	Logger *slog.Logger
	// ConfiguredOnly follows a leader hint only to a configured address:
	// a broker's links to the controllers are the operator's --controller
	// list (through a proxy or NAT the voters' own addresses may not be
	// reachable, or must not be used), so it finds the leader among those.
	// Operator tools follow every hint (one address is enough for them).
	ConfiguredOnly bool
	// Sign, if set, signs every request (remoting.ClientOptions.Sign): a
	// controller port that runs with --auth needs a super user's.
	Sign func(*remoting.Command)
}

// Client calls the controller leader. It is safe for concurrent use.
type Client struct {
	rc      *remoting.Client
	addrs   []string
	only    bool // Options.ConfiguredOnly
	timeout time.Duration
	lg      *slog.Logger

	mu     sync.Mutex
	leader string
}

// New returns a Client of the controller addresses (host:port).
func New(addrs []string, opts Options) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	lg := opts.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	var clean []string
	for _, a := range addrs {
		if a = strings.TrimSpace(a); a != "" {
			clean = append(clean, a)
		}
	}
	return &Client{
		rc:      remoting.NewClient(remoting.ClientOptions{Network: opts.Network, Logger: lg, Sign: opts.Sign}),
		addrs:   clean,
		only:    opts.ConfiguredOnly,
		timeout: opts.Timeout,
		lg:      lg.With("component", "controller-client"),
	}
}

// Close closes the connections; calls after it fail.
func (c *Client) Close() error { return c.rc.Close() }

// Leader returns the address of the leader the client last reached ("" none).
func (c *Client) Leader() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

// Register registers a replica (ReplicaID 0: assign one).
func (c *Client) Register(ctx context.Context, req *api.RegisterRequest) (*api.RegisterResponse, error) {
	var resp api.RegisterResponse
	if err := c.call(ctx, api.CodeRegister, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// Heartbeat reports a replica's progress; a master gets its lease.
func (c *Client) Heartbeat(ctx context.Context, req *api.HeartbeatRequest) (*api.HeartbeatResponse, error) {
	var resp api.HeartbeatResponse
	if err := c.call(ctx, api.CodeHeartbeat, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// AlterISR changes the in-sync set (compare-and-set: a *StaleError on a
// failed expectation).
func (c *Client) AlterISR(ctx context.Context, req *api.AlterISRRequest) (*api.GroupView, error) {
	var resp api.GroupView
	if err := c.call(ctx, api.CodeAlterISR, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// Groups lists the groups (one with req.Group set) and the controllers.
func (c *Client) Groups(ctx context.Context, req *api.GroupsRequest) (*api.GroupsResponse, error) {
	if req == nil {
		req = &api.GroupsRequest{}
	}
	var resp api.GroupsResponse
	if err := c.call(ctx, api.CodeGroups, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// Elect forces an election (petrel cluster elect-master); it returns once
// the new master is committed, which waits out the old master's lease.
func (c *Client) Elect(ctx context.Context, req *api.ElectRequest) (*api.GroupView, error) {
	var resp api.GroupView
	if err := c.call(ctx, api.CodeElect, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// Transfer asks the master to hand over (petrel cluster transfer).
func (c *Client) Transfer(ctx context.Context, req *api.TransferRequest) (*api.GroupView, error) {
	var resp api.GroupView
	if err := c.call(ctx, api.CodeTransfer, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// Resign is a transferring master's hand-over: the target is elected.
func (c *Client) Resign(ctx context.Context, req *api.ResignRequest) (*api.GroupView, error) {
	var resp api.GroupView
	if err := c.call(ctx, api.CodeResign, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// order is the addresses to try: the known leader first, then the
// configured ones.
func (c *Client) order() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.addrs)+1)
	if c.leader != "" {
		out = append(out, c.leader)
	}
	return append(out, c.addrs...)
}

func (c *Client) setLeader(addr string) {
	c.mu.Lock()
	c.leader = addr
	c.mu.Unlock()
}

// forget drops addr as the known leader.
func (c *Client) forget(addr string) {
	c.mu.Lock()
	if c.leader == addr {
		c.leader = ""
	}
	c.mu.Unlock()
}

// call sends one request to the leader, following hints, and decodes the
// success body into resp.
func (c *Client) call(ctx context.Context, code int16, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("controller client: encode request: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	queue := c.order()
	tried := map[string]bool{}
	var attempts []string
	for len(queue) > 0 {
		addr := queue[0]
		queue = queue[1:]
		if tried[addr] {
			continue
		}
		tried[addr] = true
		attempts = append(attempts, addr)
		r, err := c.rc.Invoke(ctx, addr, remoting.NewRequest(code, nil, body))
		if err != nil {
			c.forget(addr)
			if ctx.Err() != nil {
				return fmt.Errorf("controller client: %s: %w", addr, ctx.Err())
			}
			c.lg.Debug("controller unreachable", "addr", addr, "err", err)
			continue
		}
		switch r.Code {
		case remoting.CodeSuccess:
			c.setLeader(addr)
			if err := json.Unmarshal(r.Body, resp); err != nil {
				return fmt.Errorf("controller client: %s answered a malformed body: %w", addr, err)
			}
			return nil
		case api.CodeNotLeader:
			c.forget(addr)
			if hint := r.Ext(api.ExtLeader); hint != "" && !tried[hint] && (!c.only || slices.Contains(c.addrs, hint)) {
				queue = append([]string{hint}, queue...)
			}
			c.lg.Debug("controller is not the leader", "addr", addr, "leader", r.Ext(api.ExtLeader))
		case api.CodeStale:
			c.setLeader(addr)
			e := &StaleError{Remark: r.Remark}
			if len(r.Body) > 0 {
				if err := json.Unmarshal(r.Body, &e.Group); err != nil {
					return fmt.Errorf("controller client: %s answered a malformed body: %w", addr, err)
				}
			}
			return e
		case api.CodeRefused:
			c.setLeader(addr)
			return fmt.Errorf("%w: %s", ErrRefused, r.Remark)
		case remoting.CodeRequestCodeNotSupported:
			c.forget(addr)
			c.lg.Debug("address serves no controller", "addr", addr)
		default:
			return fmt.Errorf("controller client: %s answered code %d: %s", addr, r.Code, r.Remark)
		}
	}
	return fmt.Errorf("%w (tried %s)", ErrNoLeader, strings.Join(attempts, ", "))
}
