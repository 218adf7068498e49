package daemon_test

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/auth/authwire"
	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/ha/wire"
	"github.com/petrelmq/petrel/internal/remoting"
)

// With --auth the replication port serves only a slave that opens with
// the init user's credentials: a slave broker with --auth-init-user
// replicates (a sync send is acknowledged once it holds the record),
// while a raw peer that sends a Fetch without credentials is answered
// Unauthorized, gets none of the log, and is counted in
// petrel_auth_refusals_total{protocol="ha"}.
func TestReplicationPortRequiresCredentialsWithAuth(t *testing.T) {
	master, slave := startSecuredPair(t, authSecurity, func(cfg *daemon.BrokerConfig) {
		syncReplication(cfg)
		cfg.HTTPListen = "127.0.0.1:0"
	}, nil)

	signed := newClient(t, remoting.ClientOptions{Sign: authwire.Signer(initUser, initSecret)})
	sendUntil(t, signed, master.Advertised(), func() *remoting.Command { return send("Orders", "FIRST", []byte("hello")) })
	if w := slave.Store().Written(); w == 0 || w != master.Store().Written() {
		t.Fatalf("after a sync send the slave's log ends at %d, the master's at %d", w, master.Store().Written())
	}

	haAddr := master.HAAddr()
	if haAddr == "" {
		t.Fatal("the master reports no replication address")
	}
	nc, err := net.DialTimeout("tcp", haAddr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := wire.WriteFrame(nc, wire.AppendFetch(nil, wire.Fetch{Group: "broker-a", ReplicaID: 9, MaxBytes: 1 << 20})); err != nil {
		t.Fatal(err)
	}
	p, err := wire.ReadFrame(nc, nil)
	if err != nil {
		t.Fatalf("no answer to an unauthenticated fetch: %v", err)
	}
	r, err := wire.DecodeFetchResp(p)
	if err != nil {
		t.Fatal(err)
	}
	if r.Err != wire.Unauthorized || len(r.Data) != 0 || !strings.Contains(r.Message, "requires authentication (--auth) and the slave sent no credentials") {
		t.Fatalf("unauthenticated fetch answered %v with %d bytes: %q", r.Err, len(r.Data), r.Message)
	}
	if _, err := wire.ReadFrame(nc, nil); err == nil {
		t.Fatal("the master kept the unauthenticated connection open")
	}

	url := "http://" + master.HTTPAddr().String() + "/metrics"
	resp, body := get(t, http.DefaultClient, url, initUser, initSecret)
	if want := `petrel_auth_refusals_total{protocol="ha",reason="unsigned"} 1`; resp.StatusCode != 200 || !strings.Contains(body, want) {
		t.Fatalf("/metrics (%d) lacks %s:\n%s", resp.StatusCode, want, grep(body, "petrel_auth_refusals_total"))
	}
}
