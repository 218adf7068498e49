package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/daemon"
)

func ctlBrokerCmd() (*cobra.Command, *options) {
	cmd, o := brokerCmdOptions()
	addControllerModeFlags(cmd.Flags(), &o.ctlMode, false)
	cmd.Flags().StringVar(&o.config, "config", "", "")
	return cmd, o
}

func applyCtl(t *testing.T, o *options) (daemon.BrokerConfig, error) {
	t.Helper()
	cfg := daemon.BrokerConfig{Broker: broker.DefaultConfig()}
	if err := o.repl.apply(&cfg); err != nil {
		t.Fatal(err)
	}
	err := o.ctlMode.apply(&cfg, &o.repl)
	return cfg, err
}

// TestControllerFlags: --controller lists the voters and puts the broker
// in controller mode with the default heartbeat; without it the broker
// keeps its flags' role.
func TestControllerFlags(t *testing.T) {
	cmd, o := ctlBrokerCmd()
	if err := cmd.Flags().Parse([]string{"--controller", "10.0.0.1:9880, 10.0.0.2:9880,10.0.0.3:9880"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := applyCtl(t, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.Controller.Addrs, ","); got != "10.0.0.1:9880,10.0.0.2:9880,10.0.0.3:9880" || cfg.Controller.HeartbeatInterval != 500*time.Millisecond {
		t.Fatalf("controller config %+v", cfg.Controller)
	}
	// --sync-replicas given is the requirement, else the group-size rule.
	cmd, o = ctlBrokerCmd()
	if err := cmd.Flags().Parse([]string{"--controller", "10.0.0.1:9880", "--sync-replicas", "2"}); err != nil {
		t.Fatal(err)
	}
	if cfg, err := applyCtl(t, o); err != nil || !cfg.Controller.SyncReplicasSet || cfg.HA.SyncReplicas != 2 {
		t.Fatalf("--sync-replicas 2: %+v %+v, %v", cfg.Controller, cfg.HA, err)
	}
	if cfg.Controller.SyncReplicasSet {
		t.Fatal("the default --sync-replicas counts as given")
	}
	cmd, o = ctlBrokerCmd()
	if err := cmd.Flags().Parse(nil); err != nil {
		t.Fatal(err)
	}
	if cfg, err := applyCtl(t, o); err != nil || cfg.Controller.Addrs != nil {
		t.Fatalf("without --controller: %+v, %v; want no controller mode", cfg.Controller, err)
	}
}

func TestControllerFlagsRefuseContradictions(t *testing.T) {
	for _, args := range [][]string{
		{"--controller", "10.0.0.1"},
		{"--controller", "10.0.0.1:9880", "--controller-heartbeat-interval", "0s"},
		{"--controller", "10.0.0.1:9880", "--broker-id", "1", "--ha-master", "10.0.0.9:10912"},
		{"--controller", "10.0.0.1:9880", "--ha-listen", ""},
	} {
		cmd, o := ctlBrokerCmd()
		if err := cmd.Flags().Parse(args); err != nil {
			t.Fatal(err)
		}
		if _, err := applyCtl(t, o); err == nil || !strings.Contains(err.Error(), "--") {
			t.Errorf("%v: err %v; want one naming the flag", args, err)
		}
	}
}

// TestControllerFlagsAreYAMLKeys: the YAML keys controller and
// controllerHeartbeatInterval (and the flag name) set them.
func TestControllerFlagsAreYAMLKeys(t *testing.T) {
	for _, key := range []string{"controllerHeartbeatInterval", "controller-heartbeat-interval"} {
		cmd, o := ctlBrokerCmd()
		path := filepath.Join(t.TempDir(), "petrel.yaml")
		if err := os.WriteFile(path, []byte("controller: 10.0.0.1:9880,10.0.0.2:9880\n"+key+": 250ms\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Flags().Parse([]string{"--config", path}); err != nil {
			t.Fatal(err)
		}
		if err := loadConfig(cmd, o); err != nil {
			t.Fatal(err)
		}
		cfg, err := applyCtl(t, o)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Controller.Addrs) != 2 || cfg.Controller.HeartbeatInterval != 250*time.Millisecond {
			t.Fatalf("%s from YAML: %+v", key, cfg.Controller)
		}
	}
}

// TestServerEmbedsAControllerAndItsBrokerIsTheMaster: petrel server runs
// a single-voter controller (raft data in <data-dir>/controller) and its
// broker in controller mode: replica 1 of its group, the master.
func TestServerEmbedsAControllerAndItsBrokerIsTheMaster(t *testing.T) {
	dir := t.TempDir()
	_, out := startTestServer(t, testOptions(dir))
	for _, want := range []string{"controller (single voter 1) listening on 127.0.0.1:", "controller mode: controllers 127.0.0.1:"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("startup output lacks %q:\n%s", want, out.String())
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "ha", "replica-id"))
	if err != nil || !strings.Contains(string(raw), `"replicaId":1`) {
		t.Fatalf("replica id file: %q, %v; want replica 1", raw, err)
	}
	if ents, err := os.ReadDir(filepath.Join(dir, "controller")); err != nil || len(ents) == 0 {
		t.Fatalf("controller data dir: %v entries, %v", len(ents), err)
	}
}

// TestServerServesTheControllerMetrics: petrel server's /metrics carries
// the embedded voter's series, and it leads.
func TestServerServesTheControllerMetrics(t *testing.T) {
	o := testOptions(t.TempDir())
	o.httpListen = "127.0.0.1:0"
	_, out := startTestServer(t, o)
	m := regexp.MustCompile(`http listening on (127\.0\.0\.1:\d+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no http listener in the startup output:\n%s", out.String())
	}
	resp, err := http.Get("http://" + m[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{"petrel_controller_leader 1", "petrel_controller_lease_grants_total"} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("/metrics lacks %q", want)
		}
	}
}
