package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/petrelmq/petrel/internal/remoting"
)

// TestRemotingLimitFlags: the server, broker and namesrv commands take the
// remoting limits as flags and as keys of --config; the defaults are
// remoting's, 0 turns a limit off, a negative value or a budget below the
// frame limit is refused naming the flag.
func TestRemotingLimitFlags(t *testing.T) {
	for name, cmd := range map[string]*cobra.Command{"server": newServerCmd(), "broker": newBrokerCmd(), "namesrv": newNamesrvCmd()} {
		for _, f := range []string{"remoting-read-budget-bytes", "remoting-conn-read-budget-bytes", "remoting-frame-timeout",
			"remoting-idle-timeout", "remoting-max-conns", "remoting-max-conns-per-ip", "remoting-conn-write-queue-bytes"} {
			if cmd.Flags().Lookup(f) == nil {
				t.Fatalf("petrel %s has no --%s", name, f)
			}
		}
	}

	o := &options{}
	cmd := &cobra.Command{Use: "broker"}
	addCommonFlags(cmd.Flags(), o)
	addRemotingFlags(cmd.Flags(), &o.remoting)
	cfgFile := filepath.Join(t.TempDir(), "petrel.yaml")
	if err := os.WriteFile(cfgFile, []byte("remoting-max-conns-per-ip: 50\nremoting-idle-timeout: 30s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Flags().Parse([]string{"--config", cfgFile, "--remoting-frame-timeout", "0", "--remoting-idle-timeout", "45s"}); err != nil {
		t.Fatal(err)
	}
	if err := loadConfig(cmd, o); err != nil {
		t.Fatal(err)
	}
	got, err := o.remoting.limits()
	if err != nil {
		t.Fatal(err)
	}
	want := remoting.Limits{
		ServerReadBudgetBytes: remoting.DefaultServerReadBudgetBytes, ConnReadBudgetBytes: remoting.DefaultConnReadBudgetBytes,
		FrameReadTimeout: -1, IdleTimeout: 45 * time.Second, MaxConns: remoting.DefaultMaxConns, MaxConnsPerIP: 50,
		ConnWriteQueueBytes: remoting.DefaultConnWriteQueueBytes,
	}
	if got != want {
		t.Fatalf("limits\n got %+v\nwant %+v", got, want)
	}

	for _, c := range []struct {
		o    remotingOptions
		flag string
	}{
		{remotingOptions{maxConns: -1}, "--remoting-max-conns"},
		{remotingOptions{connReadBudget: 1 << 20}, "--remoting-conn-read-budget-bytes"},
	} {
		if _, err := c.o.limits(); err == nil || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("%+v: err %v, want one naming %s", c.o, err, c.flag)
		}
	}
}
