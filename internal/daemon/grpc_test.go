package daemon

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/grpcfront"
	"github.com/petrelmq/petrel/internal/store"
)

// TestBrokerServesGRPCOverTLS: with GRPCListen set the broker serves the
// 5.x front over TLS with a certificate generated into the data dir, and
// routes name the advertised host with the gRPC port.
func TestBrokerServesGRPCOverTLS(t *testing.T) {
	dir := t.TempDir()
	scfg := store.DefaultConfig(dir)
	scfg.SegmentBytes = 1 << 20
	scfg.MaxMessageBytes = 128 << 10
	bcfg := broker.DefaultConfig()
	bcfg.MaxMessageBytes = 64 << 10
	b, err := StartBroker(BrokerConfig{Store: scfg, Broker: bcfg, Listen: "127.0.0.1:0", Advertise: "127.0.0.1",
		GRPCListen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			b.Close()
		}
	})
	if _, err := os.Stat(filepath.Join(dir, grpcfront.CertFileName)); err != nil {
		t.Fatalf("no certificate in the data dir: %v", err)
	}
	addr := b.GRPCAddr().String()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := v2.NewMessagingServiceClient(conn)
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "x-mq-client-id", "c1"), 10*time.Second)
	defer cancel()
	// The send creates T1 (auto-create); a route query never does.
	resp, err := c.SendMessage(ctx, &v2.SendMessageRequest{Messages: []*v2.Message{{Topic: &v2.Resource{Name: "T1"}, Body: []byte("hi"),
		SystemProperties: &v2.SystemProperties{MessageId: "ID-1", MessageType: v2.MessageType_NORMAL}}}})
	if err != nil || resp.Status.GetCode() != v2.Code_OK {
		t.Fatalf("send: %v %v", resp, err)
	}
	route, err := c.QueryRoute(ctx, &v2.QueryRouteRequest{Topic: &v2.Resource{Name: "T1"}})
	if err != nil || route.Status.GetCode() != v2.Code_OK || len(route.MessageQueues) == 0 {
		t.Fatalf("route: %v %v", route, err)
	}
	_, port, _ := net.SplitHostPort(addr)
	a := route.MessageQueues[0].Broker.Endpoints.Addresses[0]
	if a.Host != "127.0.0.1" || strconv.Itoa(int(a.Port)) != port {
		t.Fatalf("route endpoint %v, want 127.0.0.1:%s", a, port)
	}
	closed = true
	if err := b.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Fatal("the gRPC listener still accepts after Close")
	}
}
