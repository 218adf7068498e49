package daemon

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/namesrv"
	"github.com/petrelmq/petrel/internal/remoting"
)

// TestRemotingLimitsReachBothServers: BrokerConfig.Remoting and
// namesrv.Options.Limits reach their remoting servers (a silent
// connection is closed at the idle timeout), the broker's /metrics counts
// the hit, and limits that cannot work are refused at start.
func TestRemotingLimitsReachBothServers(t *testing.T) {
	limits := remoting.Limits{IdleTimeout: 200 * time.Millisecond}
	ns, err := StartNameServer("127.0.0.1:0", namesrv.Options{Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	cfg := smallBrokerConfig()
	cfg.HTTPListen, cfg.NameServers, cfg.Remoting = "127.0.0.1:0", []string{ns.Addr().String()}, limits
	b, err := StartBroker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, addr := range []string{ns.Addr().String(), b.Addr().String()} {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		if n, err := io.Copy(io.Discard, nc); err != nil || n != 0 {
			t.Fatalf("%s: a silent connection read %d bytes, %v; want closed by the server", addr, n, err)
		}
		nc.Close()
	}
	_, body := httpGet(t, fmt.Sprintf("http://%s/metrics", b.HTTPAddr()))
	if !strings.Contains(body, `petrel_remoting_limit_hits_total{limit="idle_timeout"} 1`) {
		t.Fatalf("/metrics does not count the idle close:\n%s", grepLines(body, "petrel_remoting"))
	}

	bad := remoting.Limits{ConnReadBudgetBytes: 1 << 20}
	if _, err := StartNameServer("127.0.0.1:0", namesrv.Options{Limits: bad}); err == nil {
		t.Fatal("name server started with a connection read budget below the frame limit")
	}
	cfg = smallBrokerConfig() // a new in-memory store
	cfg.Remoting = bad
	if _, err := StartBroker(cfg); err == nil {
		t.Fatal("broker started with a connection read budget below the frame limit")
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
