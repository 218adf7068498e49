package brokerfront_test

import (
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

func configOf(t *testing.T, f *front) map[string]string {
	t.Helper()
	resp := f.invoke(t, rmq.CodeGetBrokerConfig, nil, nil)
	if resp.Code != 0 {
		t.Fatalf("get broker config: code %d %q", resp.Code, resp.Remark)
	}
	props, err := rmq.DecodeProperties(resp.Body)
	if err != nil {
		t.Fatalf("get broker config body %q: %v", resp.Body, err)
	}
	m := map[string]string{}
	for _, p := range props {
		m[p.Key] = p.Value
	}
	return m
}

func update(t *testing.T, f *front, kv ...string) *remoting.Command {
	t.Helper()
	var props []rmq.Property
	for i := 0; i+1 < len(kv); i += 2 {
		props = append(props, rmq.Property{Key: kv[i], Value: kv[i+1]})
	}
	return f.invoke(t, rmq.CodeUpdateBrokerConfig, nil, rmq.EncodeProperties(props))
}

// TestGetBrokerConfigAnswersRocketMQsKeys: the properties body names
// Petrel's settings with RocketMQ's keys and values, and ext version is
// a data version whose counter counts the updates.
func TestGetBrokerConfigAnswersRocketMQsKeys(t *testing.T) {
	c := daemontest.Start(t)
	f := &front{addr: c.Broker.Addr().String(), client: remoting.NewClient(remoting.ClientOptions{})}
	t.Cleanup(func() { f.client.Close() })
	got := configOf(t, f)
	_, port, _ := strings.Cut(c.Broker.Addr().String(), "127.0.0.1:")
	for k, v := range map[string]string{
		"brokerName": "broker-a", "brokerClusterName": "DefaultCluster", "brokerId": "0", "brokerRole": "ASYNC_MASTER",
		"autoCreateTopicEnable": "true", "brokerPermission": "6", "flushDiskType": "SYNC_FLUSH", "listenPort": port,
		"namesrvAddr": c.NameServerAddr(), "storePathRootDir": "/data", "maxMessageSize": "65536",
		"messageDelayLevel": "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h", "mappedFileSizeCommitLog": "1048576",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	v0 := f.invoke(t, rmq.CodeGetBrokerConfig, nil, nil).Ext("version")
	if !strings.Contains(v0, `"counter":0`) {
		t.Fatalf("version before any update %q", v0)
	}
	if resp := update(t, f, "autoCreateTopicEnable", "false"); resp.Code != 0 {
		t.Fatalf("update: %d %q", resp.Code, resp.Remark)
	}
	if v := f.invoke(t, rmq.CodeGetBrokerConfig, nil, nil).Ext("version"); !strings.Contains(v, `"counter":1`) {
		t.Fatalf("version after an update %q", v)
	}
}

// TestUpdateBrokerConfigRefusesFixedKeysByName: a key that cannot change
// at run time is refused with its name and the flag to restart with, an
// unknown key as such, and nothing of the request is applied.
func TestUpdateBrokerConfigRefusesFixedKeysByName(t *testing.T) {
	f := startFront(t)
	resp := update(t, f, "autoCreateTopicEnable", "false", "flushDiskType", "ASYNC_FLUSH", "listenPort", "1", "noSuchKey", "1")
	if resp.Code != rmq.RespInvalidParameter {
		t.Fatalf("update of fixed keys: code %d %q", resp.Code, resp.Remark)
	}
	for _, want := range []string{"nothing was changed", "cannot change flushDiskType at run time: restart the broker with --flush",
		"cannot change listenPort at run time: restart the broker with --broker-listen", "Petrel has no broker setting noSuchKey"} {
		if !strings.Contains(resp.Remark, want) {
			t.Errorf("remark %q lacks %q", resp.Remark, want)
		}
	}
	if got := configOf(t, f)["autoCreateTopicEnable"]; got != "true" {
		t.Fatalf("a refused request changed autoCreateTopicEnable to %q", got)
	}
	for _, c := range []struct{ k, v, want string }{
		{"brokerPermission", "7", "must be 6 (read and write), 4 (read only: a drain) or 2"},
		{"brokerPermission", "x", "not \"x\""},
		{"autoCreateTopicEnable", "yes", "must be true or false"},
	} {
		if resp := update(t, f, c.k, c.v); resp.Code != rmq.RespInvalidParameter || !strings.Contains(resp.Remark, c.want) {
			t.Errorf("%s=%s: code %d %q, want %q", c.k, c.v, resp.Code, resp.Remark, c.want)
		}
	}
	resp = f.invoke(t, rmq.CodeUpdateBrokerConfig, nil, []byte("=novalue\n"))
	if resp.Code != rmq.RespInvalidParameter || !strings.Contains(resp.Remark, "has no key") {
		t.Fatalf("malformed body: code %d %q", resp.Code, resp.Remark)
	}
}

// TestUpdateAutoCreateTopicEnable: off, a send to an unknown topic is
// refused TOPIC_NOT_EXIST; on, it is created.
func TestUpdateAutoCreateTopicEnable(t *testing.T) {
	f := startFront(t)
	if resp := update(t, f, "autoCreateTopicEnable", "false"); resp.Code != 0 {
		t.Fatalf("update: %d %q", resp.Code, resp.Remark)
	}
	resp := f.invoke(t, rmq.CodeSendMessage, (sendExt("Fresh", "", nil)), []byte("x"))
	if resp.Code != rmq.RespTopicNotExist {
		t.Fatalf("send with auto-creation off: code %d %q", resp.Code, resp.Remark)
	}
	if resp := update(t, f, "autoCreateTopicEnable", "TRUE"); resp.Code != 0 {
		t.Fatalf("update: %d %q", resp.Code, resp.Remark)
	}
	if resp := f.invoke(t, rmq.CodeSendMessage, (sendExt("Fresh", "", nil)), []byte("x")); resp.Code != 0 {
		t.Fatalf("send with auto-creation on: code %d %q", resp.Code, resp.Remark)
	}
}

// TestBrokerPermissionDrainsTheBrokerInItsRegistrations: brokerPermission
// 4 refuses sends and, once the update is answered, the name server
// routes the broker's topics read-only from its own registration; 6
// restores both.
func TestBrokerPermissionDrainsTheBrokerInItsRegistrations(t *testing.T) {
	c := daemontest.Start(t)
	if err := c.Broker.Core().CreateTopic(broker.TopicConfig{Name: "T", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}); err != nil {
		t.Fatal(err)
	}
	f := &front{addr: c.Broker.Addr().String(), client: remoting.NewClient(remoting.ClientOptions{})}
	t.Cleanup(func() { f.client.Close() })
	ns := &front{addr: c.NameServerAddr(), client: f.client}
	routePerm := func() int32 {
		resp := ns.invoke(t, rmq.CodeGetRouteInfoByTopic, map[string]string{"topic": "T"}, nil)
		if resp.Code == rmq.RespTopicNotExist {
			return -1 // the broker's registration of T has not come yet
		}
		rd, err := rmq.DecodeTopicRouteDataBody(resp.Body)
		if err != nil || len(rd.QueueDatas) != 1 {
			t.Fatalf("route of T: code %d %q %v", resp.Code, resp.Body, err)
		}
		return rd.QueueDatas[0].Perm
	}
	awaitPerm := func(want int32) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for routePerm() != want {
			if time.Now().After(deadline) {
				t.Fatalf("route perm %d, want %d", routePerm(), want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	awaitPerm(6)
	if resp := update(t, f, "brokerPermission", "4"); resp.Code != 0 || resp.Remark != "" {
		t.Fatalf("update: %d %q", resp.Code, resp.Remark)
	}
	if p := routePerm(); p != 4 {
		t.Fatalf("route perm %d right after the update was answered, want 4", p)
	}
	resp := f.invoke(t, rmq.CodeSendMessage, (sendExt("T", "", nil)), []byte("x"))
	if resp.Code != rmq.RespNoPermission || !strings.Contains(resp.Remark, "brokerPermission=6") {
		t.Fatalf("send to a drained broker: code %d %q", resp.Code, resp.Remark)
	}
	if resp := update(t, f, "brokerPermission", "6"); resp.Code != 0 {
		t.Fatalf("update: %d %q", resp.Code, resp.Remark)
	}
	awaitPerm(6)
	if resp := f.invoke(t, rmq.CodeSendMessage, (sendExt("T", "", nil)), []byte("x")); resp.Code != 0 {
		t.Fatalf("send after restoring: code %d %q", resp.Code, resp.Remark)
	}
}
