package daemon_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"math/big"
	"path/filepath"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/auth/authwire"
	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/netx"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/tlsx"
	"github.com/petrelmq/petrel/internal/tlsx/tlsxtest"
)

// A replicated group with --auth and --tls-mode enforcing on both
// brokers: a signed 5.x receive on the slave's gRPC front is forwarded to
// the master on the front's own connection, signed as the init user, and
// gets the master's message (unsigned, the master refuses it with 16).
// The front serves the process's certificate, and a Reload (SIGHUP)
// gives its next connection the new one.
func TestSlaveGRPCReceiveForwardsSignedAndServesTheReloadedCertificate(t *testing.T) {
	dir := t.TempDir()
	files, _ := tlsxtest.Files(t, dir)
	srv, err := tlsx.NewServer(files)
	if err != nil {
		t.Fatal(err)
	}
	sec := func() daemon.Security {
		s := authSecurity()
		s.TLS, s.TLSMode = srv, tlsx.Enforcing
		return s
	}
	master, slave := startSecuredPair(t, sec, nil, func(cfg *daemon.BrokerConfig) { cfg.GRPCListen = "127.0.0.1:0" })

	cfg, err := tlsx.ClientConfig(tlsx.ClientOptions{CAFile: filepath.Join(dir, tlsxtest.CAFile)})
	if err != nil {
		t.Fatal(err)
	}
	signed := newClient(t, remoting.ClientOptions{Network: tlsx.DialNetwork(netx.TCP, cfg), Sign: authwire.Signer(initUser, initSecret)})
	sendUntil(t, signed, master.Advertised(), func() *remoting.Command { return send("Orders", "0156F7E71C361B21BC024CCDBE00000001", []byte("hello")) })

	grpcAddr := slave.GRPCAddr().String()
	servedSerial := func() *big.Int {
		t.Helper()
		conn, err := tls.Dial("tcp", grpcAddr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
		if err != nil {
			t.Fatalf("TLS handshake with the slave's gRPC front: %v", err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber
	}
	leaf := func() *big.Int {
		t.Helper()
		c, err := tls.LoadX509KeyPair(files.Cert, files.Key)
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf.SerialNumber
	}
	if got, want := servedSerial(), leaf(); got.Cmp(want) != 0 {
		t.Fatalf("the gRPC front serves serial %v, want the process certificate's %v", got, want)
	}

	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ms := v2.NewMessagingServiceClient(conn)
	receive := func() (*v2.Status, []*v2.Message) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		now := auth.GRPCDateTime(time.Now())
		ctx = metadata.AppendToOutgoingContext(ctx, "x-mq-client-id", "c1", "x-mq-date-time", now, "authorization", auth.GRPCAuthorization(initUser, initSecret, now))
		stream, err := ms.ReceiveMessage(ctx, &v2.ReceiveMessageRequest{
			Group:             &v2.Resource{Name: "g1"},
			MessageQueue:      &v2.MessageQueue{Topic: &v2.Resource{Name: "Orders"}, Id: -1},
			FilterExpression:  &v2.FilterExpression{Type: v2.FilterType_TAG, Expression: "*"},
			BatchSize:         16,
			InvisibleDuration: durationpb.New(30 * time.Second),
		})
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		var status *v2.Status
		var out []*v2.Message
		for {
			r, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return status, out
			}
			if err != nil {
				t.Fatalf("receive stream: %v", err)
			}
			if s := r.GetStatus(); s != nil && status == nil {
				status = s
			}
			if m := r.GetMessage(); m != nil {
				out = append(out, m)
			}
		}
	}
	// The slave learns the topic from its master: until then it answers
	// that the topic is not known.
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		status, got := receive()
		if status.GetCode() == v2.Code_OK {
			if len(got) != 1 || string(got[0].Body) != "hello" {
				t.Fatalf("receive through the slave: %v", got)
			}
			break
		}
		if c := status.GetCode(); c == v2.Code_FORBIDDEN || c == v2.Code_UNAUTHORIZED || time.Now().After(deadline) {
			t.Fatalf("receive through the slave: %v, want OK with the master's message", status)
		}
		<-tick.C
	}

	tlsxtest.Files(t, dir) // new certificate files over the old
	if err := srv.Reload(); err != nil {
		t.Fatal(err)
	}
	if got, want := servedSerial(), leaf(); got.Cmp(want) != 0 {
		t.Fatalf("after the reload the gRPC front serves serial %v, want the new certificate's %v", got, want)
	}
}
