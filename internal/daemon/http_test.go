package daemon

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/namesrv"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/vfs"
)

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestReadyzWaitsForTheNameServer: a broker whose name server does not
// answer yet reports 503 on /readyz (its /healthz is fine), and 200 once
// the name server serves and accepts it; /metrics then has the broker's
// series and counts a send made over the remoting front.
func TestReadyzWaitsForTheNameServer(t *testing.T) {
	// A listener that accepts connections into its backlog but serves
	// nothing until the name server is started on it.
	nsLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := smallBrokerConfig()
	cfg.HTTPListen, cfg.NameServers, cfg.RegisterWait = "127.0.0.1:0", []string{nsLn.Addr().String()}, -1
	b, err := StartBroker(cfg)
	if err != nil {
		nsLn.Close()
		t.Fatal(err)
	}
	defer func() {
		if err := b.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
		if b.Close() != nil {
			t.Error("second Close returned an error")
		}
	}()
	base := "http://" + b.HTTPAddr().String()
	if code, body := httpGet(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := httpGet(t, base+"/readyz"); code != 503 || !strings.Contains(body, "name server") {
		t.Fatalf("/readyz before registration: %d %q", code, body)
	}

	ns := &NameServer{srv: namesrv.New(namesrv.Options{}), ln: nsLn, done: make(chan error, 1)}
	go func() { ns.done <- ns.srv.Serve(nsLn) }()
	defer ns.Close()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for b.Ready() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("not ready 10 s after the name server started: %v", b.Ready())
		}
		<-tick.C
	}
	if code, body := httpGet(t, base+"/readyz"); code != 200 || body != "ready\n" {
		t.Fatalf("/readyz after registration: %d %q", code, body)
	}

	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	c := &cluster{client: cl}
	if resp := c.invoke(t, b.Advertised(), sendRequest("Orders", []byte("hello"))); resp.Code != 0 {
		t.Fatalf("send: code %d %q", resp.Code, resp.Remark)
	}
	code, text := httpGet(t, base+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	// One send to Orders; the other topics' counters are there at zero.
	put := fams["petrel_put_messages_total"]
	var total float64
	for _, m := range put.GetMetric() {
		total += m.GetCounter().GetValue()
	}
	if put == nil || total != 1 {
		t.Fatalf("petrel_put_messages_total after one send: %v", put)
	}
	if h := fams["petrel_send_duration_seconds"]; h == nil || h.GetMetric()[0].GetHistogram().GetSampleCount() != 1 {
		t.Fatalf("petrel_send_duration_seconds after one send: %v", h)
	}
	if h := fams["petrel_commitlog_flush_duration_seconds"]; h == nil || h.GetMetric()[0].GetHistogram().GetSampleCount() < 1 {
		t.Fatalf("petrel_commitlog_flush_duration_seconds after one sync send: %v", h)
	}
	if conns := fams["petrel_connections"]; conns == nil || conns.GetMetric()[0].GetGauge().GetValue() < 1 {
		t.Fatalf("petrel_connections with a client connected: %v", conns)
	}
}

func TestBrokerWithoutHTTPListenHasNoListener(t *testing.T) {
	c := startCluster(t)
	if c.b.HTTPAddr() != nil || c.b.Metrics() != nil {
		t.Fatal("a broker without HTTPListen has an HTTP listener or metrics")
	}
	if err := c.b.Ready(); err != nil {
		t.Fatalf("a registered broker is not ready: %v", err)
	}
}

func TestHTTPListenFailureStopsTheStart(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	scfg := store.DefaultConfig("/data")
	scfg.FS = vfs.NewMem()
	_, err = StartBroker(BrokerConfig{Store: scfg, Broker: broker.DefaultConfig(), Listen: "127.0.0.1:0", HTTPListen: taken.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), "--http-listen") {
		t.Fatalf("StartBroker with a taken HTTP port: %v, want an error naming --http-listen", err)
	}
}
