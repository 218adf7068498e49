package loadgen

// The gRPC side of the load generator: a lean RocketMQ 5.x client over the
// generated stubs of apache.rocketmq.v2.MessagingService. It sends what
// the official Go client v5.1.2 sends — the x-mq-* headers on every call,
// QueryRoute first, Settings on a Telemetry stream (kept open for the
// run), a Heartbeat every 10 s — and nothing more: no per-call request
// id, and the date and signature (x-mq-date-time, authorization) only
// when the run has credentials (a server run with --auth), so the client
// costs as little as it can.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// gRPC client constants.
const (
	// grpcRequestTimeout is the request timeout announced in Settings
	// (the official clients' default); the server keeps a receive's
	// answer half of it before the call's deadline.
	grpcRequestTimeout = 3 * time.Second
	// grpcHeartbeat is the official clients' heartbeat interval.
	grpcHeartbeat = 10 * time.Second
	// grpcClientVersion is sent as x-mq-client-version and in the UA.
	grpcClientVersion = "petrel-bench"
)

// grpcClientSeq numbers the client ids of this process.
var grpcClientSeq atomic.Int64

// grpcClient is one bench client of the gRPC front: its connections, its
// identity and its Telemetry session.
type grpcClient struct {
	id    string
	addr  string // the endpoint dialled
	conns []*grpc.ClientConn
	stubs []v2.MessagingServiceClient
	md    metadata.MD // headers of every call

	// The session, once open.
	sessCancel context.CancelFunc
	sessDone   chan struct{}
	beatStop   chan struct{}
	beatDone   chan struct{}
}

// dialGRPC opens n connections to addr (TLS that accepts any certificate,
// or plaintext). grpc.NewClient connects lazily; the first call connects.
//
// sec.TLS replaces the accept-any TLS config; with sec's credentials every
// call carries the 5.x clients' authorization metadata.
func dialGRPC(addr string, n int, plaintext bool, sec Security) (*grpcClient, error) {
	creds := credentials.NewTLS(&tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}) // the front's certificate is self-signed
	switch {
	case plaintext:
		creds = insecure.NewCredentials()
	case sec.TLS != nil:
		creds = credentials.NewTLS(sec.TLS.Clone())
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxBodyBytes + 1<<20))}
	if sec.AccessKey != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(grpcSigner{accessKey: sec.AccessKey, secretKey: sec.SecretKey, now: time.Now}))
	}
	host, _ := os.Hostname()
	c := &grpcClient{
		id:   fmt.Sprintf("%s@%d@%d@petrel-bench", host, os.Getpid(), grpcClientSeq.Add(1)),
		addr: addr,
	}
	c.md = metadata.Pairs(
		"x-mq-client-id", c.id,
		"x-mq-language", "GO",
		"x-mq-protocol", "v2",
		"x-mq-client-version", grpcClientVersion,
	)
	for range n {
		cc, err := grpc.NewClient(addr, opts...)
		if err != nil {
			c.close()
			return nil, fmt.Errorf("set up a gRPC connection to %s: %w", addr, err)
		}
		c.conns = append(c.conns, cc)
		c.stubs = append(c.stubs, v2.NewMessagingServiceClient(cc))
	}
	return c, nil
}

// ctx returns ctx carrying the client's headers.
func (c *grpcClient) ctx(ctx context.Context) context.Context {
	return metadata.NewOutgoingContext(ctx, c.md)
}

// close ends the session and closes the connections.
func (c *grpcClient) close() {
	c.endSession()
	for _, cc := range c.conns {
		cc.Close()
	}
}

// endpoints is addr as the Endpoints of a request.
func endpointsOf(addr string) *v2.Endpoints {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	p, _ := strconv.Atoi(port)
	scheme := v2.AddressScheme_DOMAIN_NAME
	if ip := net.ParseIP(host); ip != nil {
		scheme = v2.AddressScheme_IPv4
		if ip.To4() == nil {
			scheme = v2.AddressScheme_IPv6
		}
	}
	return &v2.Endpoints{Scheme: scheme, Addresses: []*v2.Address{{Host: host, Port: int32(p)}}}
}

// grpcRoute asks addr for the route of topic and returns the queues and
// the endpoint they name, checked with checkAddr. A route query never
// creates a topic (as RocketMQ's proxy); with unknownOK an unknown topic
// gives no queues and addr itself (a producer's first send creates the
// topic where the broker auto-creates topics).
func (c *grpcClient) route(ctx context.Context, topic string, allowRemote, unknownOK bool) ([]*v2.MessageQueue, string, error) {
	cctx, cancel := context.WithTimeout(c.ctx(ctx), defaultControlTimeout)
	defer cancel()
	resp, err := c.stubs[0].QueryRoute(cctx, &v2.QueryRouteRequest{Topic: &v2.Resource{Name: topic}, Endpoints: endpointsOf(c.addr)})
	if err != nil {
		return nil, "", fmt.Errorf("ask %s for the route of topic %q: %w", c.addr, topic, err)
	}
	if code := resp.GetStatus().GetCode(); code != v2.Code_OK {
		if code == v2.Code_TOPIC_NOT_FOUND && unknownOK {
			return nil, c.addr, nil
		}
		if code == v2.Code_TOPIC_NOT_FOUND {
			return nil, "", fmt.Errorf("%w: topic %q: %s", ErrNoRoute, topic, resp.GetStatus().GetMessage())
		}
		return nil, "", fmt.Errorf("route of topic %q from %s: %v: %s", topic, c.addr, code, resp.GetStatus().GetMessage())
	}
	qs := resp.GetMessageQueues()
	if len(qs) == 0 {
		return nil, "", fmt.Errorf("%w: the route of topic %q from %s lists no queue", ErrNoRoute, topic, c.addr)
	}
	a := qs[0].GetBroker().GetEndpoints().GetAddresses()
	if len(a) == 0 {
		return qs, c.addr, nil
	}
	ep := net.JoinHostPort(a[0].GetHost(), strconv.Itoa(int(a[0].GetPort())))
	if err := checkAddr(ep, allowRemote); err != nil {
		return nil, "", err
	}
	return qs, ep, nil
}

// userAgent is the UA of the bench's Settings.
func userAgent() *v2.UA {
	host, _ := os.Hostname()
	return &v2.UA{Language: v2.Language_GOLANG, Version: grpcClientVersion, Platform: runtime.GOOS + "/" + runtime.GOARCH, Hostname: host}
}

// openSession sends st on a Telemetry stream and waits for the server's
// Settings, as the official client does before it sends or receives;
// the stream then stays open and a Heartbeat goes out every 10 s until
// close. A failed heartbeat is reported to onErr.
func (c *grpcClient) openSession(ctx context.Context, st *v2.Settings, beat *v2.HeartbeatRequest, onErr func(string)) error {
	sctx, cancel := context.WithCancel(c.ctx(context.WithoutCancel(ctx)))
	stream, err := c.stubs[0].Telemetry(sctx)
	if err != nil {
		cancel()
		return fmt.Errorf("open a Telemetry stream to %s: %w", c.addr, err)
	}
	if err := stream.Send(&v2.TelemetryCommand{Command: &v2.TelemetryCommand_Settings{Settings: st}}); err != nil {
		cancel()
		return fmt.Errorf("send Settings to %s: %w", c.addr, err)
	}
	first := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		answered := false
		for {
			cmd, err := stream.Recv()
			if err != nil {
				if !answered {
					first <- err
				}
				return
			}
			if _, ok := cmd.GetCommand().(*v2.TelemetryCommand_Settings); ok && !answered {
				answered = true
				if code := cmd.GetStatus().GetCode(); code != v2.Code_OK {
					first <- fmt.Errorf("%v: %s", code, cmd.GetStatus().GetMessage())
				} else {
					first <- nil
				}
			}
			// Anything else (the server pushes check-backs only for
			// transactional messages) needs no answer here.
		}
	}()
	t := time.NewTimer(defaultControlTimeout)
	defer t.Stop()
	select {
	case err = <-first:
	case <-t.C:
		err = fmt.Errorf("no answer within %v", defaultControlTimeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		cancel()
		<-done
		if errors.Is(err, io.EOF) {
			err = errors.New("the server closed the stream")
		}
		return fmt.Errorf("Settings handshake with %s: %w", c.addr, err)
	}
	c.sessCancel, c.sessDone = cancel, done
	c.beatStop, c.beatDone = make(chan struct{}), make(chan struct{})
	go c.heartbeats(beat, onErr)
	return nil
}

// heartbeats sends beat every grpcHeartbeat until beatStop closes.
func (c *grpcClient) heartbeats(beat *v2.HeartbeatRequest, onErr func(string)) {
	defer close(c.beatDone)
	t := time.NewTicker(grpcHeartbeat)
	defer t.Stop()
	for {
		select {
		case <-c.beatStop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(c.ctx(context.Background()), defaultControlTimeout)
		resp, err := c.stubs[0].Heartbeat(ctx, beat)
		cancel()
		switch {
		case err != nil:
			onErr(fmt.Sprintf("heartbeat to %s: %v", c.addr, err))
		case resp.GetStatus().GetCode() != v2.Code_OK:
			onErr(fmt.Sprintf("heartbeat to %s: %v: %s", c.addr, resp.GetStatus().GetCode(), resp.GetStatus().GetMessage()))
		}
	}
}

// endSession stops the heartbeats and closes the Telemetry stream (the
// server then forgets the client). Idempotent.
func (c *grpcClient) endSession() {
	if c.sessCancel == nil {
		return
	}
	close(c.beatStop)
	<-c.beatDone
	c.sessCancel()
	<-c.sessDone
	c.sessCancel = nil
}

// statusText formats a gRPC front status for an error message.
func statusText(st *v2.Status) string {
	return fmt.Sprintf("%v: %s", st.GetCode(), st.GetMessage())
}

// errRecorder keeps a run's failure count and first failure; fail
// returns true when MaxErrors is reached.
type errRecorder struct {
	max   int64
	n     atomic.Int64
	mu    sync.Mutex
	first string
}

func (e *errRecorder) fail(msg string) bool {
	e.mu.Lock()
	if e.first == "" {
		e.first = msg
	}
	e.mu.Unlock()
	return e.n.Add(1) >= e.max
}

func (e *errRecorder) firstErr() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.first
}

// latencyWorker is one worker's latencies: the worker records, progress
// and the end merge.
type latencyWorker struct {
	mu   sync.Mutex
	hist *Histogram
}

func (w *latencyWorker) record(d time.Duration) {
	w.mu.Lock()
	w.hist.Record(d)
	w.mu.Unlock()
}

// mergeLatencies merges every worker's latencies into h and returns it.
func mergeLatencies(h *Histogram, ws []*latencyWorker) *Histogram {
	for _, w := range ws {
		w.mu.Lock()
		h.Merge(w.hist)
		w.mu.Unlock()
	}
	return h
}

// connectGRPC dials the front at addr, asks it for topic's route and
// returns a client with conns connections to the endpoint the route names
// (normally addr itself), its queues, and the endpoint. With unknownOK an
// unknown topic is no error (see route). Close the client.
func connectGRPC(ctx context.Context, addr, topic string, conns int, plaintext bool, sec Security, allowRemote, unknownOK bool) (*grpcClient, []*v2.MessageQueue, string, error) {
	if err := checkAddr(addr, allowRemote); err != nil {
		return nil, nil, "", err
	}
	ctl, err := dialGRPC(addr, 1, plaintext, sec)
	if err != nil {
		return nil, nil, "", err
	}
	queues, ep, err := ctl.route(ctx, topic, allowRemote, unknownOK)
	if err != nil {
		ctl.close()
		return nil, nil, "", err
	}
	if ep == addr && conns <= 1 {
		return ctl, queues, ep, nil
	}
	ctl.close()
	cl, err := dialGRPC(ep, max(conns, 1), plaintext, sec)
	if err != nil {
		return nil, nil, "", err
	}
	return cl, queues, ep, nil
}
