package cli

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

func TestParseSettings(t *testing.T) {
	got, err := ParseSettings([]string{"autoCreateTopicEnable=false", "brokerPermission = 4", "messageDelayLevel=1s 5s"})
	if err != nil || len(got) != 3 || got[1] != (rmq.Property{Key: "brokerPermission", Value: " 4"}) || got[2].Value != "1s 5s" {
		t.Fatalf("parse: %q %v", got, err)
	}
	for _, bad := range [][]string{nil, {"noequals"}, {"=v"}, {"a=1", "a=2"}} {
		if _, err := ParseSettings(bad); !errors.Is(err, ErrUsage) {
			t.Errorf("%q: %v, want a usage error", bad, err)
		}
	}
}

// TestBrokerConfigGetAndSet: get prints RocketMQ's keys per broker; set
// applies a run-time setting and names a refused key with its flag.
func TestBrokerConfigGetAndSet(t *testing.T) {
	c := startCluster(t)
	out := c.must(OutputTable, func(cl *CLI) error { return cl.BrokerConfigGet(context.Background(), "") })
	for _, want := range []string{"BROKER", "KEY", "VALUE", "broker-a", "autoCreateTopicEnable", "flushDiskType", "SYNC_FLUSH"} {
		if !strings.Contains(out, want) {
			t.Errorf("config get lacks %q:\n%s", want, out)
		}
	}
	out = c.must(OutputTable, func(cl *CLI) error {
		return cl.BrokerConfigSet(context.Background(), "broker-a", []string{"autoCreateTopicEnable=false"})
	})
	if out != "autoCreateTopicEnable=false set on broker-a\n" {
		t.Fatalf("config set printed %q", out)
	}
	out = c.must(OutputJSON, func(cl *CLI) error { return cl.BrokerConfigGet(context.Background(), c.b.Addr().String()) })
	var got struct {
		Brokers []BrokerConfig `json:"brokers"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Brokers) != 1 || got.Brokers[0].Config["autoCreateTopicEnable"] != "false" {
		t.Fatalf("config get -o json after set: %v\n%s", err, out)
	}
	_, err := c.run(OutputTable, func(cl *CLI) error {
		return cl.BrokerConfigSet(context.Background(), "", []string{"flushDiskType=ASYNC_FLUSH"})
	})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "cannot change flushDiskType at run time: restart the broker with --flush") {
		t.Fatalf("set of a fixed key: %v", err)
	}
	_, err = c.run(OutputTable, func(cl *CLI) error { return cl.BrokerConfigGet(context.Background(), "broker-z") })
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `no live master named "broker-z"`) {
		t.Fatalf("get of an unknown broker: %v", err)
	}
}

// TestBrokerDrainAndUndrain: drain routes the broker's queues read-only
// on every name server and reports their topic counts; undrain routes
// them writable again and restores a lowered brokerPermission; an
// unknown broker name is not drained; an unreachable name server fails
// the command after the others were asked.
func TestBrokerDrainAndUndrain(t *testing.T) {
	c := startCluster(t)
	c.must(OutputTable, func(cl *CLI) error {
		return cl.TopicCreate(context.Background(), TopicSpec{Name: "Orders", ReadQueues: 2, WriteQueues: 2})
	})
	routePerm := func() int32 {
		t.Helper()
		var perm int32
		c.must(OutputTable, func(cl *CLI) error {
			rb, err := cl.route(context.Background(), "Orders")
			if err == nil {
				perm = rb[0].q.Perm
			}
			return err
		})
		return perm
	}
	out := c.must(OutputTable, func(cl *CLI) error { return cl.BrokerDrain(context.Background(), "broker-a") })
	if !strings.Contains(out, c.ns.Addr().String()) || !strings.Contains(out, "broker broker-a drained") {
		t.Fatalf("drain printed:\n%s", out)
	}
	if p := routePerm(); p != 4 {
		t.Fatalf("perm after drain %d, want 4", p)
	}
	_, err := c.run(OutputTable, func(cl *CLI) error { return cl.BrokerDrain(context.Background(), "broker-z") })
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "broker-a") {
		t.Fatalf("drain of an unknown broker: %v", err)
	}

	c.must(OutputTable, func(cl *CLI) error {
		return cl.BrokerConfigSet(context.Background(), "", []string{"brokerPermission=4"})
	})
	out = c.must(OutputJSON, func(cl *CLI) error { return cl.BrokerUndrain(context.Background(), "broker-a") })
	var res DrainResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Action != "undrained" || len(res.NameServers) != 1 || res.NameServers[0].Topics < 1 || !res.PermissionRestored {
		t.Fatalf("undrain -o json: %v\n%s", err, out)
	}
	if p := routePerm(); p != 6 {
		t.Fatalf("perm after undrain %d, want 6", p)
	}
	if got := c.b.Core().Permission(); got != 6 {
		t.Fatalf("brokerPermission after undrain %d, want 6", got)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	cl, err := New(Config{NameServers: []string{c.ns.Addr().String(), dead}, Out: &strings.Builder{}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	err = cl.BrokerDrain(context.Background(), "broker-a")
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), dead) || !strings.Contains(err.Error(), "on 1 of 2 name servers only") {
		t.Fatalf("drain with a dead name server: %v", err)
	}
	if p := routePerm(); p != 4 {
		t.Fatalf("the live name server was not drained: perm %d", p)
	}
}
