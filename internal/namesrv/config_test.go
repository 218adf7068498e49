package namesrv

import (
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

func namesrvConfig(t *testing.T, ns *testNS) map[string]string {
	t.Helper()
	resp := invoke(t, newClient(t), ns.addr, rmq.CodeGetNamesrvConfig, nil, nil)
	if resp.Code != 0 {
		t.Fatalf("get namesrv config: %d %q", resp.Code, resp.Remark)
	}
	props, err := rmq.DecodeProperties(resp.Body)
	if err != nil {
		t.Fatalf("body %q: %v", resp.Body, err)
	}
	m := map[string]string{}
	for _, p := range props {
		m[p.Key] = p.Value
	}
	return m
}

func updateNamesrv(t *testing.T, ns *testNS, kv ...string) (int16, string) {
	t.Helper()
	var props []rmq.Property
	for i := 0; i+1 < len(kv); i += 2 {
		props = append(props, rmq.Property{Key: kv[i], Value: kv[i+1]})
	}
	resp := invoke(t, newClient(t), ns.addr, rmq.CodeUpdateNamesrvConfig, nil, rmq.EncodeProperties(props))
	return resp.Code, resp.Remark
}

// TestGetNamesrvConfigAnswersRocketMQsKeys: 319 names the settings with
// NamesrvConfig's keys and Petrel's values.
func TestGetNamesrvConfigAnswersRocketMQsKeys(t *testing.T) {
	ns := startNS(t, clock.NewManual(t0), "")
	got := namesrvConfig(t, ns)
	for k, v := range map[string]string{"scanNotActiveBrokerInterval": "10000", "orderMessageEnable": "true",
		"returnOrderTopicConfigToBroker": "true", "enableAllTopicList": "true", "enableControllerInNamesrv": "false"} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != 5 {
		t.Errorf("config has %d keys, want 5: %v", len(got), got)
	}
}

// TestUpdateNamesrvConfigScanInterval: a new scanNotActiveBrokerInterval
// re-arms the expiry scan at once, so a silent broker goes at the first
// 1 s scan after its 120 s (the 10 s scans would keep it until 130 s).
func TestUpdateNamesrvConfigScanInterval(t *testing.T) {
	clk := clock.NewManual(t0)
	ns := startNS(t, clk, "")
	if code, remark := updateNamesrv(t, ns, "scanNotActiveBrokerInterval", "1000"); code != 0 {
		t.Fatalf("update: %d %q", code, remark)
	}
	if got := namesrvConfig(t, ns)["scanNotActiveBrokerInterval"]; got != "1000" {
		t.Fatalf("scanNotActiveBrokerInterval after update = %q", got)
	}
	cl := newClient(t)
	body := encodeRegisterBody(map[string]TopicConfig{"T": topic("T", 4, 6)}, DataVersion{Timestamp: 1, Counter: 1})
	invoke(t, cl, ns.addr, rmq.CodeRegisterBroker, registerExt("a", 0, "127.0.0.1:1"), body)
	clk.Advance(121 * time.Second)
	if resp := invoke(t, cl, ns.addr, rmq.CodeGetRouteInfoByTopic, map[string]string{"topic": "T"}, nil); resp.Code != rmq.RespTopicNotExist {
		t.Fatalf("broker silent for 121 s still routed with 1 s scans: %d", resp.Code)
	}
	_ = ns.Close()
	if n := clk.Pending(); n != 0 {
		t.Fatalf("%d timers left after Close", n)
	}
}

// TestUpdateNamesrvConfigRefusesByName: fixed settings with another value
// and unknown keys are refused by name, and then nothing changes; a fixed
// setting given its own value is accepted.
func TestUpdateNamesrvConfigRefusesByName(t *testing.T) {
	ns := startNS(t, clock.NewManual(t0), "")
	code, remark := updateNamesrv(t, ns, "scanNotActiveBrokerInterval", "2000", "enableControllerInNamesrv", "true",
		"kvConfigPath", "/tmp/x", "scanNotActiveBrokerInterval", "2000")
	if code != rmq.RespInvalidParameter {
		t.Fatalf("update with refused keys: %d %q", code, remark)
	}
	for _, want := range []string{"nothing was changed", "cannot change enableControllerInNamesrv: it is always false",
		"Petrel has no name server setting kvConfigPath"} {
		if !strings.Contains(remark, want) {
			t.Errorf("remark %q lacks %q", remark, want)
		}
	}
	if got := namesrvConfig(t, ns)["scanNotActiveBrokerInterval"]; got != "10000" {
		t.Fatalf("a refused update changed scanNotActiveBrokerInterval to %s", got)
	}
	if code, remark := updateNamesrv(t, ns, "scanNotActiveBrokerInterval", "5"); code != rmq.RespInvalidParameter || !strings.Contains(remark, "from 100 to 600000") {
		t.Fatalf("interval below the bound: %d %q", code, remark)
	}
	if code, remark := updateNamesrv(t, ns, "orderMessageEnable", "true"); code != 0 {
		t.Fatalf("a fixed setting given its own value: %d %q", code, remark)
	}
	resp := invoke(t, newClient(t), ns.addr, rmq.CodeUpdateNamesrvConfig, nil, []byte("k=\\uZZZZ\n"))
	if resp.Code != rmq.RespInvalidParameter || !strings.Contains(resp.Remark, "Properties body") {
		t.Fatalf("malformed body: %d %q", resp.Code, resp.Remark)
	}
}
