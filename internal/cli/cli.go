package cli

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/auth/authwire"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/tlsx"
)

// Sentinel errors. Every error a command returns wraps one of them; the
// message says what failed and what to do.
var (
	// ErrUsage: a flag or argument is missing, malformed or contradicts
	// another.
	ErrUsage = errors.New("cli: bad usage")
	// ErrUnreachable: no name server or broker answered at an address.
	ErrUnreachable = errors.New("cli: server unreachable")
	// ErrNotFound: the topic, group or message named does not exist.
	ErrNotFound = errors.New("cli: not found")
	// ErrRefused: a server answered with an error code.
	ErrRefused = errors.New("cli: request refused")
)

// Output formats.
const (
	OutputTable = "table"
	OutputJSON  = "json"
)

// DefaultNameServer is where the name server of `petrel server` listens.
const DefaultNameServer = "127.0.0.1:9876"

// DefaultTimeout bounds each request to a server.
const DefaultTimeout = 5 * time.Second

// Config configures a CLI.
type Config struct {
	// NameServers are "host:port" addresses; default DefaultNameServer.
	NameServers []string
	// Output is OutputTable (default) or OutputJSON.
	Output string
	// Timeout bounds each request to a server; default DefaultTimeout.
	Timeout time.Duration
	// Out receives the command's output; default os.Stdout.
	Out io.Writer
	// Progress receives progress bars of bulk operations, drawn only when
	// it is a terminal; nil: none.
	Progress io.Writer
	// Now is the clock for uptimes and default time ranges; default
	// time.Now.
	Now func() time.Time
	// AccessKey and SecretKey, when set, sign every request
	// (authwire.Signer) for a server that runs with --auth; both or
	// neither (ResolveCredentials reads the flags and the environment).
	AccessKey, SecretKey string
	// TLS, when set, dials every name server and broker over TLS with it
	// (TLSConfig builds it from --tls, --tls-ca, --tls-insecure); nil
	// dials plaintext.
	TLS *tls.Config
	// Network is what the CLI dials on, under TLS when that is set;
	// default the real network (tests pass a netx.Mem host).
	Network netx.Network
}

// CLI runs the operator commands against name servers and brokers over the
// RocketMQ remoting protocol. Methods write to Config.Out; they are not
// safe for concurrent use with each other.
type CLI struct {
	cfg Config
	rc  *remoting.Client
}

// New checks cfg and returns a CLI; Close releases its connections.
func New(cfg Config) (*CLI, error) {
	if len(cfg.NameServers) == 0 {
		cfg.NameServers = []string{DefaultNameServer}
	}
	for _, a := range cfg.NameServers {
		if !strings.Contains(a, ":") {
			return nil, fmt.Errorf("%w: name server %q is not host:port (e.g. %s)", ErrUsage, a, DefaultNameServer)
		}
	}
	switch cfg.Output {
	case "":
		cfg.Output = OutputTable
	case OutputTable, OutputJSON:
	default:
		return nil, fmt.Errorf("%w: output format %q: want table or json", ErrUsage, cfg.Output)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Out == nil {
		cfg.Out = os.Stdout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if (cfg.AccessKey == "") != (cfg.SecretKey == "") {
		return nil, fmt.Errorf("%w: give both an access key and a secret key (--access-key and --secret-key, or %s and %s), or neither", ErrUsage, AccessKeyEnv, SecretKeyEnv)
	}
	return &CLI{cfg: cfg, rc: remoting.NewClient(cfg.ClientOptions())}, nil
}

// ClientOptions are the remoting client options of cfg: its dial timeout,
// network (TLS when cfg.TLS is set) and request signer (when credentials
// are set). Other clients of an operator command (the controller's) use
// them too, so they sign and dial as the CLI does.
func (cfg Config) ClientOptions() remoting.ClientOptions {
	o := remoting.ClientOptions{DialTimeout: cfg.Timeout, Network: netx.Or(cfg.Network)}
	if cfg.TLS != nil {
		o.Network = tlsx.DialNetwork(o.Network, cfg.TLS)
	}
	if cfg.AccessKey != "" {
		o.Sign = authwire.Signer(cfg.AccessKey, cfg.SecretKey)
	}
	return o
}

// ParseNameServers splits a semicolon- or comma-separated address list.
func ParseNameServers(s string) []string {
	var out []string
	for _, a := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' }) {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// Close closes the CLI's connections.
func (c *CLI) Close() error { return c.rc.Close() }

func (c *CLI) json() bool { return c.cfg.Output == OutputJSON }

// writeJSON writes v as indented JSON.
func (c *CLI) writeJSON(v any) error {
	enc := json.NewEncoder(c.cfg.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeJSONLine writes v as one line of JSON (streaming commands).
func (c *CLI) writeJSONLine(v any) error { return json.NewEncoder(c.cfg.Out).Encode(v) }

// Response codes the CLI tells apart.
const ()

// Request codes.
const (
	codeSendMessageV2 int16 = 310
)

// call sends req to a broker and returns the answer, whatever its code.
func (c *CLI) call(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	resp, err := c.rc.Invoke(ctx, addr, req)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w: broker %s did not answer within %v (request code %d); check that it is running or raise --timeout: %w", ErrUnreachable, addr, c.cfg.Timeout, req.Code, err)
		}
		if h := c.transportHint(err); h != "" {
			return nil, fmt.Errorf("%w: broker %s: %w; %s", ErrUnreachable, addr, err, h)
		}
		return nil, fmt.Errorf("%w: cannot reach broker %s: %w; check that it is running and that the name server lists its current address", ErrUnreachable, addr, err)
	}
	return resp, nil
}

// callOK is call that turns a non-zero code into an ErrRefused error.
func (c *CLI) callOK(ctx context.Context, addr, what string, req *remoting.Command) (*remoting.Command, error) {
	resp, err := c.call(ctx, addr, req)
	if err != nil {
		return nil, err
	}
	if resp.Code != rmq.RespSuccess {
		return nil, c.refused(addr, what, resp)
	}
	return resp, nil
}

// askNameServers sends a request to the name servers in turn and returns
// the first answer. All unreachable gives an ErrUnreachable error that
// names them and says how to start one.
func (c *CLI) askNameServers(ctx context.Context, mk func() *remoting.Command) (*remoting.Command, string, error) {
	var errs []string
	hint := ""
	for _, ns := range c.cfg.NameServers {
		cctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		resp, err := c.rc.Invoke(cctx, ns, mk())
		cancel()
		if err == nil {
			return resp, ns, nil
		}
		errs = append(errs, fmt.Sprintf("%s (%v)", ns, rootCause(err)))
		if hint == "" {
			hint = c.transportHint(err)
		}
	}
	if hint != "" {
		return nil, "", fmt.Errorf("%w: the name server at %s did not answer; %s", ErrUnreachable, strings.Join(errs, ", "), hint)
	}
	return nil, "", fmt.Errorf("%w: cannot reach the name server at %s; start Petrel with `petrel server`, or point --namesrv (or PETREL_NAMESRV) at a running name server",
		ErrUnreachable, strings.Join(errs, ", "))
}

// rootCause is the innermost error, for short messages.
func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// master returns the address of a broker's master (id 0), or "".
func master(b rmq.BrokerData) string { return b.BrokerAddrs[rmq.MasterID] }

func (c *CLI) clusterInfo(ctx context.Context) (*rmq.ClusterInfo, error) {
	resp, ns, err := c.askNameServers(ctx, rmq.EncodeClusterInfoRequest)
	if err != nil {
		return nil, err
	}
	if resp.Code != rmq.RespSuccess {
		return nil, c.refused(ns, "cluster info", resp)
	}
	ci, err := rmq.DecodeClusterInfoBody(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: cluster info from %s is not valid JSON: %w", ErrRefused, ns, err)
	}
	return &ci, nil
}

// masterBroker is a broker name and its master's address.
type masterBroker struct {
	name, addr string
}

// masters returns the live masters, sorted by broker name. None is an
// ErrNotFound error.
func (c *CLI) masters(ctx context.Context) ([]masterBroker, error) {
	ci, err := c.clusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	var out []masterBroker
	for name, b := range ci.BrokerAddrTable {
		if a := master(b); a != "" {
			out = append(out, masterBroker{name, a})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: the name servers %s know no live master broker; start one (petrel server, or petrel broker --namesrv ...)", ErrNotFound, strings.Join(c.cfg.NameServers, ","))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// routeQueues is a route resolved to master addresses, sorted by broker.
type routeBroker struct {
	name, addr string
	q          rmq.QueueData
}

// route returns the brokers serving topic; an unknown topic is an
// ErrNotFound error that says how to find or create topics.
func (c *CLI) route(ctx context.Context, topic string) ([]routeBroker, error) {
	resp, ns, err := c.askNameServers(ctx, func() *remoting.Command {
		return rmq.EncodeRouteRequest(rmq.RouteRequest{Topic: topic})
	})
	if err != nil {
		return nil, err
	}
	switch resp.Code {
	case rmq.RespSuccess:
	case rmq.RespTopicNotExist:
		return nil, fmt.Errorf("%w: topic %q does not exist; list topics with `petrel topic list` or create it with `petrel topic create %s`", ErrNotFound, topic, topic)
	default:
		return nil, c.refused(ns, "route of topic "+topic, resp)
	}
	rt, err := rmq.DecodeTopicRouteDataBody(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: route of %q from %s is not valid JSON: %w", ErrRefused, topic, ns, err)
	}
	addrs := map[string]string{}
	for _, bd := range rt.BrokerDatas {
		addrs[bd.BrokerName] = master(bd)
	}
	var out []routeBroker
	for _, q := range rt.QueueDatas {
		if a := addrs[q.BrokerName]; a != "" {
			out = append(out, routeBroker{name: q.BrokerName, addr: a, q: q})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: topic %q has no live master broker; start its broker and retry", ErrNotFound, topic)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// formatTime renders a store time (ms) for tables; "-" for 0.
func formatTime(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z")
}

// jsonTime renders a store time (ms) for JSON; "" for 0.
func jsonTime(ms int64) string {
	if ms <= 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

// ParseTime reads a time flag: RFC 3339 ("2026-11-29T12:00:00Z"), a
// date and time without zone (UTC), or a duration ago ("10m" = ten minutes
// before now).
func ParseTime(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%w: time %q: want RFC 3339 (2026-11-29T12:00:00Z), a UTC date and time (2026-11-29 12:00:00) or a duration ago (10m)", ErrUsage, s)
}

// ClientOptions are the remoting client options the CLI dials and signs
// with (Config.ClientOptions), for the other clients of a command.
func (c *CLI) ClientOptions() remoting.ClientOptions { return c.cfg.ClientOptions() }
