package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/controller/api"
	"github.com/petrelmq/petrel/internal/remoting"
)

// ControllerClient is a small Controller over remoting: the operator
// commands' calls (Groups, Elect, Transfer). It asks the leader it last
// heard of first, follows a CodeNotLeader answer's leader address, and
// tries the next address on a connection error, at most one pass over the
// addresses (and the leaders named on the way) per call.
type ControllerClient struct {
	addrs  []string
	rc     *remoting.Client
	leader string
}

// maxControllerBody bounds a controller answer's body (the groups of a
// large cluster fit easily).
const maxControllerBody = 16 << 20

// NewControllerClient returns a client of the controller voters at addrs
// (their --controller-listen addresses); Close releases its connections.
func NewControllerClient(addrs []string, timeout time.Duration) *ControllerClient {
	return &ControllerClient{addrs: slices.Clone(addrs), rc: remoting.NewClient(remoting.ClientOptions{DialTimeout: timeout, MaxFrameBytes: maxControllerBody + 64<<10})}
}

// Close closes the connections.
func (c *ControllerClient) Close() error { return c.rc.Close() }

// Groups implements Controller.
func (c *ControllerClient) Groups(ctx context.Context, req *api.GroupsRequest) (*api.GroupsResponse, error) {
	var out api.GroupsResponse
	return &out, c.call(ctx, api.CodeGroups, req, &out)
}

// Elect implements Controller.
func (c *ControllerClient) Elect(ctx context.Context, req *api.ElectRequest) (*api.GroupView, error) {
	var out api.GroupView
	return &out, c.call(ctx, api.CodeElect, req, &out)
}

// Transfer implements Controller.
func (c *ControllerClient) Transfer(ctx context.Context, req *api.TransferRequest) (*api.GroupView, error) {
	var out api.GroupView
	return &out, c.call(ctx, api.CodeTransfer, req, &out)
}

// call sends one request until a leader answers it.
func (c *ControllerClient) call(ctx context.Context, code int16, req, out any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("%w: encode the request: %w", ErrUsage, err)
	}
	order := slices.Clone(c.addrs)
	if c.leader != "" {
		order = append([]string{c.leader}, slices.DeleteFunc(order, func(a string) bool { return a == c.leader })...)
	}
	tried := map[string]bool{}
	var errs []string
	for len(order) > 0 {
		addr := order[0]
		order = order[1:]
		if tried[addr] {
			continue
		}
		tried[addr] = true
		resp, err := c.rc.Invoke(ctx, addr, remoting.NewRequest(code, nil, body))
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", addr, rootCause(err)))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		switch resp.Code {
		case 0:
			c.leader = addr
			if len(resp.Body) > maxControllerBody {
				return fmt.Errorf("%w: controller %s answered %d bytes, more than %d", ErrRefused, addr, len(resp.Body), maxControllerBody)
			}
			if err := json.Unmarshal(resp.Body, out); err != nil {
				return fmt.Errorf("%w: controller %s answered a body that is not the expected JSON: %w", ErrRefused, addr, err)
			}
			return nil
		case api.CodeNotLeader:
			if l := resp.Ext(api.ExtLeader); l != "" && !tried[l] {
				order = append([]string{l}, order...)
			}
			errs = append(errs, fmt.Sprintf("%s: not the leader", addr))
		case api.CodeRefused, api.CodeStale:
			return fmt.Errorf("%w: controller %s refused: %s", ErrRefused, addr, resp.Remark)
		default:
			return fmt.Errorf("%w: controller %s answered code %d: %s", ErrRefused, addr, resp.Code, resp.Remark)
		}
	}
	if err := ctx.Err(); err != nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: no controller leader answered in time (%s): %w", ErrUnreachable, strings.Join(errs, "; "), err)
	}
	return fmt.Errorf("%w: no controller leader answered (%s); check the --controller addresses and that a majority of the voters runs", ErrUnreachable, strings.Join(errs, "; "))
}
