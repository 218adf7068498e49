// Package daemontest runs an in-process name server and broker on
// loopback ports over an in-memory store, for the tests of packages that
// talk to a running Petrel (the CLI, the load generator, the commands).
package daemontest

import (
	"testing"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/namesrv"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/vfs"
)

// Cluster is a running name server and broker.
type Cluster struct {
	NameServer *daemon.NameServer
	Broker     *daemon.Broker
}

// NameServerAddr is the name server's host:port.
func (c *Cluster) NameServerAddr() string { return c.NameServer.Addr().String() }

// Config is the broker configuration Start begins with: an in-memory store
// with 1 MiB segments and 128 KiB records, messages up to 64 KiB, broker
// broker-a of DefaultCluster listening on 127.0.0.1:0, no gRPC or HTTP
// listener.
func Config() daemon.BrokerConfig {
	scfg := store.DefaultConfig("/data")
	scfg.FS = vfs.NewMem()
	scfg.SegmentBytes = 1 << 20
	scfg.MaxMessageBytes = 128 << 10
	bcfg := broker.DefaultConfig()
	bcfg.BrokerName, bcfg.ClusterName = "broker-a", "DefaultCluster"
	bcfg.MaxMessageBytes = 64 << 10
	return daemon.BrokerConfig{Store: scfg, Broker: bcfg, Listen: "127.0.0.1:0"}
}

// Start starts a name server and a broker registered with it, from Config
// changed by edit, and stops both when the test ends.
func Start(t testing.TB, edit ...func(*daemon.BrokerConfig)) *Cluster {
	t.Helper()
	return StartWith(t, daemon.Security{}, edit...)
}

// StartWith is Start with sec on both the name server and the broker
// (petrel server's arrangement: with sec.Auth the name server checks the
// broker's users). For --auth give an init user, e.g.
//
//	a := daemon.NewAuth(daemon.AuthConfig{InitUser: "admin", InitSecret: "s3cret"})
//	c := daemontest.StartWith(t, daemon.Security{Auth: a, AccessKey: "admin", SecretKey: "s3cret"})
func StartWith(t testing.TB, sec daemon.Security, edit ...func(*daemon.BrokerConfig)) *Cluster {
	t.Helper()
	ns, err := daemon.StartNameServerWith("127.0.0.1:0", namesrv.Options{}, sec)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config()
	cfg.NameServers = []string{ns.Addr().String()}
	cfg.Security = sec
	for _, e := range edit {
		e(&cfg)
	}
	b, err := daemon.StartBroker(cfg)
	if err != nil {
		ns.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
		ns.Close()
	})
	return &Cluster{NameServer: ns, Broker: b}
}
