package grpcfront

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/grpcfront/pbcodec"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/remoting"
)

// Config configures a Server. Zero fields take the defaults given.
type Config struct {
	// Advertise is the "host:port" put into routes as the broker's
	// endpoint. Empty: the endpoint the client's QueryRoute names (the
	// address it already dialled), else the listener's address.
	Advertise string
	// TLSCert and TLSKey are PEM files of the certificate to serve. Both
	// or neither; when neither, a self-signed certificate is used (see
	// CertDir).
	TLSCert, TLSKey string
	// GetCertificate, when set, gives the certificate of each handshake
	// instead of TLSCert/TLSKey or the self-signed one (tlsx.Server's
	// Config().GetCertificate, so that its Reload applies to the front's
	// new connections). It excludes TLSCert and Plaintext.
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// Plaintext serves gRPC without TLS. The official Go client v5.1.2
	// cannot speak plaintext; only clients that can should use it.
	Plaintext bool
	// CertDir is where the self-signed certificate is generated on first
	// start (grpc-tls.crt, grpc-tls.key) and reused afterwards. Empty: a
	// new certificate is made in memory on every start.
	CertDir string
	// ClientExpiry: a client with no Heartbeat or Telemetry traffic for
	// this long is dropped (it then gets UNRECOGNIZED_CLIENT_TYPE and
	// re-registers if it is alive). Default 60 s; the clients heartbeat
	// every 10 s. The broker expires it (the idle timeout of the client's
	// broker.RegisterConn), on the broker's clock.
	ClientExpiry time.Duration
	// Clock gives the times put into messages and the self-signed
	// certificate's validity. Default clock.Real.
	Clock clock.Clock
	// Logger receives lifecycle and degraded-state messages. Default:
	// discard.
	Logger *slog.Logger
	// Master, when set, returns the remoting address ("host:port") of the
	// master of the broker's group, "" while it is not known: while the
	// broker is a slave, receives, acks, changes of invisible time,
	// forwards to the dead-letter queue (forward.go), sends and
	// transaction ends (sendfwd.go) go there, and the master's check-backs
	// of the halves come back (checkrelay.go). Nil: a slave refuses them,
	// as its broker does, and its routes are READ only.
	Master func() string
	// MasterMoved, when set, returns a context that is done once the
	// master Master names has changed (another replica elected, or this
	// one): a forward still waiting on the old master then ends at once
	// (HA_NOT_AVAILABLE, to be retried, which now goes where the master
	// is) instead of waiting out ForwardTimeout on a master that is
	// paused or cut off. Nil: forwards wait for their timeout.
	MasterMoved func() context.Context
	// Remoting is the client of the forwarded acks, changes, forwards to
	// the dead-letter queue, sends and transaction ends; required with
	// Master. Receives, which wait on the master, go over a connection of
	// their own (on Network), so that acks never queue behind them, and so
	// does the check relay's registration (the master checks back on it).
	Remoting *remoting.Client
	// Network is what those connections are dialled on; default the real
	// network.
	Network netx.Network
	// Sign signs the requests of the connections the front makes itself
	// (the forwarded receives and the check relay's registration), as
	// remoting.ClientOptions.Sign: a master with --auth refuses them
	// unsigned. Remoting signs with its own options. Nil: unsigned.
	Sign func(*remoting.Command)
	// ForwardTimeout bounds the wait for the master's answer to a forward
	// (a receive: beyond its long-poll wait). Default
	// DefaultForwardTimeout.
	ForwardTimeout time.Duration
	// Auth, when set, authenticates every call by its signature (the
	// "authorization" and "x-mq-date-time" metadata) and authorizes it
	// by the user's policies (auth.go); refusals are answered in-band,
	// UNAUTHORIZED or FORBIDDEN. Nil: no check, and the authorization
	// metadata the clients always send is ignored.
	Auth *auth.Checker
}

// DefaultClientExpiry is Config.ClientExpiry's default.
const DefaultClientExpiry = 60 * time.Second

// Errors of New and Serve.
var (
	// ErrConfig: a Config field is invalid; the message names it.
	ErrConfig = errors.New("grpcfront: invalid configuration")
	// ErrServed: Serve was called twice.
	ErrServed = errors.New("grpcfront: Serve was called twice")
)

// popAPI is the broker's pop-consumption API the receive, ack and
// invisible-time handlers call; *broker.Broker implements it. Unit tests
// substitute a fake.
type popAPI interface {
	Pop(ctx context.Context, req *broker.PopRequest) ([]broker.PoppedMessage, error)
	AckBatch(reqs []broker.AckRequest) []error
	ChangeInvisible(group, topic, handle string, d time.Duration) (string, error)
	ForwardPopToDLQ(group, topic, handle string) error
}

// Server is the RocketMQ 5.x gRPC MessagingService over a broker. It keeps
// no message state of its own: only the client sessions (settings,
// Telemetry streams, liveness). All methods are safe for concurrent use.
type Server struct {
	v2.UnimplementedMessagingServiceServer

	b   *broker.Broker
	pop popAPI
	fwd *forwarder // nil without Config.Master
	cfg Config
	clk clock.Clock
	log *slog.Logger
	gs  *grpc.Server

	// stop is cancelled by Shutdown: parked receives return, Telemetry
	// streams end.
	stop       context.Context
	cancelStop context.CancelFunc

	mu       sync.Mutex
	listener net.Addr
	served   bool

	sessions sessions
	renew    renewer // push consumers' auto-renewed messages
}

// New returns a server for b. It prepares the TLS certificate (loading
// TLSCert/TLSKey, or loading or generating the self-signed one in CertDir)
// and registers its group-change hook with b (each client session
// registers its connection with b when it first sends Settings). Errors wrap
// ErrConfig or say which certificate file failed.
func New(b *broker.Broker, cfg Config) (*Server, error) {
	if cfg.ClientExpiry == 0 {
		cfg.ClientExpiry = DefaultClientExpiry
	}
	if cfg.ClientExpiry < time.Second {
		return nil, fmt.Errorf("%w: ClientExpiry %v is below the minimum 1s", ErrConfig, cfg.ClientExpiry)
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return nil, fmt.Errorf("%w: give both a TLS certificate and its key (--grpc-tls-cert and --grpc-tls-key), or neither for a self-signed one", ErrConfig)
	}
	if cfg.Plaintext && cfg.TLSCert != "" {
		return nil, fmt.Errorf("%w: plaintext was asked for together with a TLS certificate; choose one", ErrConfig)
	}
	if cfg.GetCertificate != nil && (cfg.TLSCert != "" || cfg.Plaintext) {
		return nil, fmt.Errorf("%w: a certificate source (GetCertificate) was given together with a certificate file or plaintext; choose one", ErrConfig)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real
	}
	if cfg.Master != nil && cfg.Remoting == nil {
		return nil, fmt.Errorf("%w: forwarding to the master needs a remoting client (Remoting)", ErrConfig)
	}
	if cfg.ForwardTimeout == 0 {
		cfg.ForwardTimeout = DefaultForwardTimeout
	}
	if cfg.ForwardTimeout < 0 {
		return nil, fmt.Errorf("%w: ForwardTimeout %v is negative", ErrConfig, cfg.ForwardTimeout)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{b: b, pop: b, cfg: cfg, clk: cfg.Clock, log: cfg.Logger.With("component", "grpcfront")}
	s.renew.s = s
	s.stop, s.cancelStop = context.WithCancel(context.Background())
	if cfg.Master != nil {
		s.fwd = &forwarder{b: b, master: cfg.Master, moved: cfg.MasterMoved, cl: cfg.Remoting, timeout: cfg.ForwardTimeout, stop: s.stop, log: s.log,
			polls: remoting.NewClient(remoting.ClientOptions{Network: cfg.Network, Logger: cfg.Logger, Sign: cfg.Sign}), maxPolls: maxForwardedPolls}
		s.pop = &routedPop{b: b, fwd: s.fwd}
		s.fwd.relay = newCheckRelay(s, cfg)
	}

	opts := []grpc.ServerOption{
		// A body at the broker's limit plus its properties must fit.
		grpc.MaxRecvMsgSize(max(16<<20, b.Config().MaxMessageBytes+1<<20)),
		// Calls run on a pool of long-lived goroutines (gRPC starts one
		// more when all are busy) instead of a new goroutine per call,
		// whose stack then grows: 12% of a one-message send's CPU went to
		// newstack/copystack. Calls wait (for an fsync, a long poll), so
		// the pool is sized for the calls in flight, not for the cores.
		grpc.NumStreamWorkers(streamWorkers),
		// Protobuf, with SendMessage's request and answer decoded and
		// encoded by hand (byte-compatible; see package pbcodec).
		grpc.ForceServerCodecV2(pbcodec.New()),
	}
	switch {
	case cfg.GetCertificate != nil:
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{
			GetCertificate: cfg.GetCertificate,
			MinVersion:     tls.VersionTLS12,
		})))
	case !cfg.Plaintext:
		cert, err := loadOrCreateCert(cfg.TLSCert, cfg.TLSKey, cfg.CertDir, s.clk.Now())
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{
			Certificates: []tls.Certificate{cert},
			MinVersion:   tls.VersionTLS12,
		})))
	}
	if cfg.Auth != nil {
		opts = append(opts, grpc.UnaryInterceptor(s.authUnary))
	}
	s.gs = grpc.NewServer(opts...)
	s.gs.RegisterService(&serviceDesc, s) // the generated service and RecallMessage (recall.go)
	s.sessions.init(s)
	b.OnGroupChanged(s.pushGroupSettings)
	return s, nil
}

// Serve accepts connections on ln until Shutdown; it returns nil after
// Shutdown (at once, closing ln, when Shutdown came first) and ErrServed
// when called twice.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.served {
		s.mu.Unlock()
		return ErrServed
	}
	if s.stop.Err() != nil {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.served = true
	s.listener = ln.Addr()
	s.mu.Unlock()
	s.log.Info("gRPC front serving", "addr", ln.Addr().String(), "tls", !s.cfg.Plaintext, "auth", s.cfg.Auth != nil)
	err := s.gs.Serve(ln)
	if errors.Is(err, grpc.ErrServerStopped) || s.stop.Err() != nil {
		return nil
	}
	return err
}

// Shutdown stops gracefully: parked receives are answered, Telemetry
// streams end, every client is dropped from the broker's client table, and
// in-flight calls finish; when ctx ends first, the remaining connections
// are closed at once and ctx's error is returned. Idempotent.
func (s *Server) Shutdown(ctx context.Context) error {
	s.cancelStop()
	if s.fwd != nil {
		s.fwd.polls.Close() // forwarded receives end
		s.fwd.relay.close()
	}
	s.sessions.close()
	s.renew.stopTimer()
	done := make(chan struct{})
	go func() {
		s.gs.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.gs.Stop()
		<-done
		return ctx.Err()
	}
}

// listenAddr is the address Serve listens on, or nil before Serve.
func (s *Server) listenAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listener
}

// streamWorkers is the size of the pool of goroutines that run calls
// (grpc.NumStreamWorkers): idle ones cost a few KiB of stack each.
const streamWorkers = 256

// Headers the clients send with every call.
const (
	headerClientID  = "x-mq-client-id"
	headerNamespace = "x-mq-namespace"
)

// header returns the first value of a request header (the client repeats
// headers on retries). ValueFromIncomingContext reads the one key;
// FromIncomingContext would copy every header of the call first (3.6% of
// a one-message send's CPU).
func header(ctx context.Context, key string) string {
	if v := metadata.ValueFromIncomingContext(ctx, key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func okStatus() *v2.Status { return &v2.Status{Code: v2.Code_OK, Message: "OK"} }

func status(code v2.Code, format string, args ...any) *v2.Status {
	return &v2.Status{Code: code, Message: fmt.Sprintf(format, args...)}
}
