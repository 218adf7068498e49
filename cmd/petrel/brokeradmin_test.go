package main

import (
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/remoting/brokerfront"
)

// TestBrokerAdminCommandsEndToEnd: `petrel broker config get|set`,
// `drain` and `undrain` against a running broker and name server, and
// `petrel broker` still runs only a broker when given no subcommand.
func TestBrokerAdminCommandsEndToEnd(t *testing.T) {
	d := daemontest.Start(t)
	t.Setenv(namesrvEnv, d.NameServerAddr())

	out, err := execute(t, "", "broker", "config", "get", "--broker", "broker-a")
	if err != nil || !strings.Contains(out, "brokerClusterName") || !strings.Contains(out, "DefaultCluster") {
		t.Fatalf("config get: %v\n%s", err, out)
	}
	out, err = execute(t, "", "broker", "config", "set", "autoCreateTopicEnable=false")
	if err != nil || !strings.Contains(out, "autoCreateTopicEnable=false set on broker-a") {
		t.Fatalf("config set: %v\n%s", err, out)
	}
	if d.Broker.Core().AutoCreateTopics() {
		t.Fatal("config set did not reach the broker")
	}
	_, err = execute(t, "", "broker", "config", "set", "flushDiskType=ASYNC_FLUSH")
	if err == nil || !strings.Contains(err.Error(), "cannot change flushDiskType at run time: restart the broker with --flush") {
		t.Fatalf("config set of a fixed key: %v", err)
	}
	if _, err = execute(t, "", "broker", "config", "set", "novalue"); err == nil || !strings.Contains(err.Error(), "not KEY=VALUE") {
		t.Fatalf("config set without '=': %v", err)
	}
	out, err = execute(t, "", "broker", "drain", "broker-a")
	if err != nil || !strings.Contains(out, "broker broker-a drained") || !strings.Contains(out, d.NameServerAddr()) {
		t.Fatalf("drain: %v\n%s", err, out)
	}
	out, err = execute(t, "", "broker", "undrain", "broker-a", "-o", "json")
	if err != nil || !strings.Contains(out, `"action": "undrained"`) {
		t.Fatalf("undrain: %v\n%s", err, out)
	}
	if _, err = execute(t, "", "broker", "drain"); err == nil || !strings.Contains(err.Error(), "missing BROKER_NAME") {
		t.Fatalf("drain without a name: %v", err)
	}
	if _, err = execute(t, "", "broker", "drian"); err == nil {
		t.Fatal("an unknown broker subcommand was taken")
	}
}

// TestBrokerConfigRefusalsNameFlagsThatExist: every flag a refused
// UPDATE_BROKER_CONFIG key points at is a flag of `petrel broker`.
func TestBrokerConfigRefusalsNameFlagsThatExist(t *testing.T) {
	fl := newBrokerCmd().Flags()
	for key, flags := range brokerfront.RestartFlags() {
		for _, f := range strings.Split(flags, " and ") {
			if fl.Lookup(strings.TrimPrefix(f, "--")) == nil {
				t.Errorf("the refusal of %s names %s, which petrel broker does not have", key, f)
			}
		}
	}
}
