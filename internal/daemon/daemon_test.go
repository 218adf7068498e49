package daemon

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/namesrv"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/vfs"
)

// cluster is a name server and a broker on loopback ports with an
// in-memory store.
type cluster struct {
	ns     *NameServer
	b      *Broker
	client *remoting.Client
}

// smallBrokerConfig is the broker these tests start: an in-memory store
// with 1 MiB segments and 128 KiB records, messages up to 64 KiB, broker-a
// of DefaultCluster listening on 127.0.0.1:0. It is daemontest.Config,
// which tests inside package daemon cannot import.
func smallBrokerConfig() BrokerConfig {
	scfg := store.DefaultConfig("/data")
	scfg.FS = vfs.NewMem()
	scfg.SegmentBytes = 1 << 20
	scfg.MaxMessageBytes = 128 << 10
	bcfg := broker.DefaultConfig()
	bcfg.BrokerName, bcfg.ClusterName = "broker-a", "DefaultCluster"
	bcfg.MaxMessageBytes = 64 << 10
	return BrokerConfig{Store: scfg, Broker: bcfg, Listen: "127.0.0.1:0"}
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	ns, err := StartNameServer("127.0.0.1:0", namesrv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := smallBrokerConfig()
	cfg.NameServers = []string{ns.Addr().String()}
	b, err := StartBroker(cfg)
	if err != nil {
		ns.Close()
		t.Fatal(err)
	}
	c := &cluster{ns: ns, b: b, client: remoting.NewClient(remoting.ClientOptions{})}
	t.Cleanup(func() {
		c.client.Close()
		if err := b.Close(); err != nil {
			t.Errorf("close broker: %v", err)
		}
		ns.Close()
	})
	return c
}

func (c *cluster) invoke(t *testing.T, addr string, req *remoting.Command) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.client.Invoke(ctx, addr, req)
	if err != nil {
		t.Fatalf("invoke code %d: %v", req.Code, err)
	}
	return resp
}

func sendRequest(topic string, body []byte) *remoting.Command {
	return remoting.NewRequest(10, map[string]string{
		"producerGroup": "pg", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": "0", "sysFlag": "0", "bornTimestamp": "1", "flag": "0",
		"properties": "UNIQ_KEY\x01ABC\x02KEYS\x01k1\x02", "reconsumeTimes": "0", "unitMode": "false",
		"maxReconsumeTimes": "0", "batch": "false", "bname": "broker-a",
	}, body)
}

func TestSendPullAndRouteThroughTheRemotingFront(t *testing.T) {
	c := startCluster(t)
	baddr := c.b.Advertised()
	resp := c.invoke(t, baddr, sendRequest("Orders", []byte("hello")))
	if resp.Code != 0 || resp.Ext("queueOffset") != "0" {
		t.Fatalf("send: code %d remark %q ext %v", resp.Code, resp.Remark, resp.ExtFields)
	}
	if _, _, err := message.ParseOffsetID(resp.Ext("msgId")); err != nil {
		t.Fatalf("send answer msgId %q is not an offset id: %v", resp.Ext("msgId"), err)
	}
	pull := remoting.NewRequest(11, map[string]string{
		"consumerGroup": "cg", "topic": "Orders", "queueId": "0", "queueOffset": "0", "maxMsgNums": "32",
		"sysFlag": "6", "commitOffset": "0", "suspendTimeoutMillis": "1000", "subscription": "*", "subVersion": "0", "expressionType": "TAG",
	}, nil)
	resp = c.invoke(t, baddr, pull)
	if resp.Code != 0 || resp.Ext("nextBeginOffset") != "1" {
		t.Fatalf("pull: code %d remark %q ext %v", resp.Code, resp.Remark, resp.ExtFields)
	}
	m, _, err := message.Decode(resp.Body)
	if err != nil || string(m.Body) != "hello" {
		t.Fatalf("pulled body: %v %v", m, err)
	}
	// The auto-created topic reaches the name server's routes.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := c.invoke(t, c.ns.Addr().String(), remoting.NewRequest(105, map[string]string{"topic": "Orders"}, nil))
		if r.Code == 0 {
			var route struct {
				BrokerDatas []struct {
					BrokerName string `json:"brokerName"`
				} `json:"brokerDatas"`
			}
			if err := json.Unmarshal(r.Body, &route); err != nil || len(route.BrokerDatas) != 1 || !strings.Contains(string(r.Body), baddr) {
				t.Fatalf("route %s: %v", r.Body, err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no route for the auto-created topic: code %d %q", r.Code, r.Remark)
		}
		// The registrar publishes asynchronously; ask again.
		c.invoke(t, baddr, remoting.NewRequest(30, map[string]string{"topic": "Orders", "queueId": "0"}, nil))
	}
}

func TestBadInputIsRefusedWithTheRuleAndDisturbsNoOtherConnection(t *testing.T) {
	c := startCluster(t)
	baddr := c.b.Advertised()
	cases := []struct {
		name string
		req  *remoting.Command
		code int16
		want string
	}{
		{"unknown code", remoting.NewRequest(9999, nil, nil), 3, "9999"},
		{"illegal topic characters", sendRequest("bad topic!", []byte("x")), 13, "topic"},
		{"topic over 127 characters", sendRequest(strings.Repeat("t", 128), []byte("x")), 13, "127"},
		{"body over the limit", sendRequest("Big", make([]byte, 65<<10)), 13, "65536"},
	}
	for _, tc := range cases {
		resp := c.invoke(t, baddr, tc.req)
		if resp.Code != tc.code || !strings.Contains(resp.Remark, tc.want) {
			t.Errorf("%s: code %d remark %q, want code %d naming %q", tc.name, resp.Code, resp.Remark, tc.code, tc.want)
		}
	}
	// A malformed frame on another connection closes only that connection.
	raw, err := net.Dial("tcp", baddr)
	if err != nil {
		t.Fatal(err)
	}
	raw.Write([]byte{0, 0, 0, 8, 0, 0, 0, 200, 'x', 'x', 'x', 'x'})
	buf := make([]byte, 1)
	raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := raw.Read(buf); err == nil {
		t.Fatal("malformed frame: connection still open and answering")
	}
	raw.Close()
	if resp := c.invoke(t, baddr, sendRequest("StillFine", []byte("ok"))); resp.Code != 0 {
		t.Fatalf("after bad input elsewhere, send failed: %d %q", resp.Code, resp.Remark)
	}
}
