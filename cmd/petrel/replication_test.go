package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/daemon"
)

// parseRepl parses args as the flags of cmd and applies the replication
// options to a fresh broker config.
func parseRepl(t *testing.T, cmd *cobra.Command, o *options, args ...string) (daemon.BrokerConfig, error) {
	t.Helper()
	if err := cmd.Flags().Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	cfg := daemon.BrokerConfig{Broker: broker.DefaultConfig()}
	cfg.Broker.BrokerName = "broker-a"
	err := o.repl.apply(&cfg)
	return cfg, err
}

func brokerCmdOptions() (*cobra.Command, *options) {
	o := &options{}
	cmd := &cobra.Command{Use: "broker"}
	addBrokerFlags(cmd.Flags(), o)
	addReplicationFlags(cmd.Flags(), &o.repl, false)
	return cmd, o
}

func serverCmdOptions() (*cobra.Command, *options) {
	o := &options{}
	cmd := &cobra.Command{Use: "server"}
	addBrokerFlags(cmd.Flags(), o)
	addReplicationFlags(cmd.Flags(), &o.repl, true)
	return cmd, o
}

// TestReplicationFlagDefaults: petrel broker is a sync master on :10912
// waiting for 1 slave within 3 s; petrel server replicates to nobody.
func TestReplicationFlagDefaults(t *testing.T) {
	cmd, o := brokerCmdOptions()
	cfg, err := parseRepl(t, cmd, o)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Broker.Role != broker.RoleMaster || cfg.Broker.BrokerID != 0 || cfg.Broker.ReplicationAsync ||
		cfg.Broker.ReplicationTimeout != 3*time.Second || cfg.HA.Listen != ":10912" || cfg.HA.SyncReplicas != 1 || cfg.HA.Master != "" {
		t.Fatalf("petrel broker defaults: %+v %+v", cfg.HA, cfg.Broker)
	}
	if cfg.Broker.SlaveReadEnable || cfg.Broker.AccessMessageInMemoryMaxRatio != 40 {
		t.Fatalf("slave-read defaults: enable %v ratio %d, want false 40 (RocketMQ's)", cfg.Broker.SlaveReadEnable, cfg.Broker.AccessMessageInMemoryMaxRatio)
	}
	cmd, o = serverCmdOptions()
	cfg, err = parseRepl(t, cmd, o)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Broker.Role != broker.RoleMaster || cfg.HA.Listen != "" || cfg.HA.SyncReplicas != 0 {
		t.Fatalf("petrel server defaults: %+v role %v", cfg.HA, cfg.Broker.Role)
	}
}

func TestReplicationFlagsOfASlaveAndAnAsyncMaster(t *testing.T) {
	cmd, o := brokerCmdOptions()
	cfg, err := parseRepl(t, cmd, o, "--broker-id", "2", "--ha-master", "10.0.0.1:10912", "--replication-timeout", "1500ms")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Broker.Role != broker.RoleSlave || cfg.Broker.BrokerID != 2 || cfg.HA.Master != "10.0.0.1:10912" || cfg.HA.SyncReplicas != 0 ||
		cfg.Broker.ReplicationTimeout != 1500*time.Millisecond {
		t.Fatalf("slave: %+v role %v id %d", cfg.HA, cfg.Broker.Role, cfg.Broker.BrokerID)
	}
	cmd, o = brokerCmdOptions()
	cfg, err = parseRepl(t, cmd, o, "--replication", "async", "--sync-replicas", "2", "--ha-listen", "127.0.0.1:20912")
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Broker.ReplicationAsync || cfg.HA.SyncReplicas != 2 || cfg.HA.Listen != "127.0.0.1:20912" {
		t.Fatalf("async master: %+v async %v", cfg.HA, cfg.Broker.ReplicationAsync)
	}
}

// TestReplicationFlagsRefuseContradictions: each bad combination is
// refused with a message naming the flag and what to do.
func TestReplicationFlagsRefuseContradictions(t *testing.T) {
	for _, tc := range []struct {
		server bool
		args   []string
		want   string
	}{
		{false, []string{"--ha-master", "10.0.0.1:10912"}, "--ha-master is for a slave"},
		{false, []string{"--broker-id", "1", "--sync-replicas", "1"}, "--sync-replicas is for the master"},
		{false, []string{"--broker-id", "-1"}, "--broker-id -1"},
		{false, []string{"--replication", "sometimes"}, "--replication \"sometimes\""},
		{false, []string{"--sync-replicas", "-2"}, "--sync-replicas -2"},
		{false, []string{"--replication-timeout", "0s"}, "--replication-timeout"},
		{false, []string{"--broker-id", "1", "--ha-master", "nohostport"}, "--ha-master \"nohostport\""},
		{false, []string{"--ha-listen", "10912"}, "--ha-listen \"10912\""},
		{true, []string{"--broker-id", "1"}, "petrel server runs a master"},
		{false, []string{"--access-message-in-memory-max-ratio", "0"}, "--access-message-in-memory-max-ratio 0"},
		{false, []string{"--access-message-in-memory-max-ratio", "101"}, "1..100"},
	} {
		cmd, o := brokerCmdOptions()
		if tc.server {
			cmd, o = serverCmdOptions()
		}
		_, err := parseRepl(t, cmd, o, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

// TestReplicationFlagsAreYAMLKeys: the config file takes the same names.
func TestReplicationFlagsAreYAMLKeys(t *testing.T) {
	cmd, o := brokerCmdOptions()
	cmd.Flags().StringVar(&o.config, "config", "", "")
	path := t.TempDir() + "/petrel.yaml"
	if err := os.WriteFile(path, []byte("broker-id: 1\nha-master: 10.0.0.9:10912\nreplication: async\nreplication-timeout: 5s\nslave-read-enable: true\naccess-message-in-memory-max-ratio: 30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Flags().Parse([]string{"--config", path}); err != nil {
		t.Fatal(err)
	}
	if err := loadConfig(cmd, o); err != nil {
		t.Fatal(err)
	}
	cfg := daemon.BrokerConfig{Broker: broker.DefaultConfig()}
	if err := o.repl.apply(&cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Broker.Role != broker.RoleSlave || cfg.HA.Master != "10.0.0.9:10912" || !cfg.Broker.ReplicationAsync || cfg.Broker.ReplicationTimeout != 5*time.Second ||
		!cfg.Broker.SlaveReadEnable || cfg.Broker.AccessMessageInMemoryMaxRatio != 30 {
		t.Fatalf("from YAML: %+v %+v", cfg.HA, cfg.Broker)
	}
}

func TestHAAdvertise(t *testing.T) {
	for _, tc := range []struct{ adv, listen, want string }{
		{"10.0.0.5:10911", ":10912", "10.0.0.5:10912"},
		{"10.0.0.5:10911", "0.0.0.0:10912", "10.0.0.5:10912"},
		{"10.0.0.5:10911", "10.0.0.6:10999", "10.0.0.6:10999"},
		{"10.0.0.5:10911", "", ""},
	} {
		if got := daemon.HAAdvertise(tc.adv, tc.listen); got != tc.want {
			t.Errorf("HAAdvertise(%q, %q) = %q, want %q", tc.adv, tc.listen, got, tc.want)
		}
	}
}
