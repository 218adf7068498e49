package brokerfront_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// pushed is a request the broker sent to a client.
type pushed struct {
	code int16
	ext  map[string]string
}

// pushClient is a remoting client on its own connection that records the
// requests the broker pushes to it.
type pushClient struct {
	addr string
	cl   *remoting.Client
	got  chan pushed
}

func newPushClient(t *testing.T, addr string) *pushClient {
	t.Helper()
	p := &pushClient{addr: addr, got: make(chan pushed, 16)}
	p.cl = remoting.NewClient(remoting.ClientOptions{Handler: func(_ context.Context, _ *remoting.Conn, req *remoting.Command) *remoting.Command {
		select {
		case p.got <- pushed{req.Code, req.ExtFields}:
		default:
			t.Errorf("push of code %d dropped: the test's buffer is full", req.Code)
		}
		return nil
	}})
	t.Cleanup(func() { p.cl.Close() })
	return p
}

func (p *pushClient) invoke(t *testing.T, code int16, ext map[string]string, body []byte) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := p.cl.Invoke(ctx, p.addr, remoting.NewRequest(code, ext, body))
	if err != nil {
		t.Fatalf("invoke code %d: %v", code, err)
	}
	if resp.Code != rmq.RespSuccess {
		t.Fatalf("code %d answered %d %q", code, resp.Code, resp.Remark)
	}
	return resp
}

// heartbeat sends a HEART_BEAT naming a producer group and/or a consumer
// group of topic T.
func (p *pushClient) heartbeat(t *testing.T, clientID, producerGroup, consumerGroup string) {
	t.Helper()
	type sub struct {
		Topic     string `json:"topic"`
		SubString string `json:"subString"`
	}
	type consumer struct {
		GroupName           string `json:"groupName"`
		ConsumeType         string `json:"consumeType"`
		MessageModel        string `json:"messageModel"`
		SubscriptionDataSet []sub  `json:"subscriptionDataSet"`
	}
	type producer struct {
		GroupName string `json:"groupName"`
	}
	body := struct {
		ClientID        string     `json:"clientID"`
		ProducerDataSet []producer `json:"producerDataSet"`
		ConsumerDataSet []consumer `json:"consumerDataSet"`
	}{ClientID: clientID, ProducerDataSet: []producer{}, ConsumerDataSet: []consumer{}}
	if producerGroup != "" {
		body.ProducerDataSet = append(body.ProducerDataSet, producer{producerGroup})
	}
	if consumerGroup != "" {
		body.ConsumerDataSet = append(body.ConsumerDataSet, consumer{consumerGroup, "CONSUME_PASSIVELY", "CLUSTERING", []sub{{"T", "*"}}})
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	p.invoke(t, rmq.CodeHeartBeat, nil, b)
}

// await returns the next push of code, failing after 10 s.
func (p *pushClient) await(t *testing.T, code int16) pushed {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-p.got:
			if got.code == code {
				return got
			}
		case <-deadline:
			t.Fatalf("no request of code %d pushed within 10s", code)
		}
	}
}

// none fails if anything was pushed to p.
func (p *pushClient) none(t *testing.T, what string) {
	t.Helper()
	select {
	case got := <-p.got:
		t.Fatalf("%s: pushed code %d %v, want nothing", what, got.code, got.ext)
	default:
	}
}

// TestPushesReachTheirOwnConnection: NOTIFY_CONSUMER_IDS_CHANGED goes to
// the group's other member when one joins, and a transaction check-back
// to the connection of the producer group, routed by the broker to this
// front's connection; the other connections get nothing.
func TestPushesReachTheirOwnConnection(t *testing.T) {
	c := daemontest.Start(t, func(cfg *daemon.BrokerConfig) {
		cfg.Broker.TransactionTimeout = 100 * time.Millisecond
		cfg.Broker.TransactionCheckInterval = 200 * time.Millisecond
	})
	addr := c.Broker.Addr().String()
	a, b, p := newPushClient(t, addr), newPushClient(t, addr), newPushClient(t, addr)
	a.heartbeat(t, "A", "", "g")
	b.heartbeat(t, "B", "", "g")
	if got := a.await(t, rmq.CodeNotifyConsumerIDsChanged); got.ext["consumerGroup"] != "g" {
		t.Fatalf("notification for group %q, want g", got.ext["consumerGroup"])
	}
	p.heartbeat(t, "P", "pg", "")
	props := message.EncodeProperties(map[string]string{message.PropertyTransactionFlag: "true",
		message.PropertyProducerGroup: "pg", message.PropertyUniqKey: "TX-FRONT"})
	b.invoke(t, rmq.CodeSendMessage, sendExt("T", props, map[string]string{"sysFlag": "4"}), []byte("half"))
	chk := p.await(t, rmq.CodeCheckTransactionState)
	if chk.ext["transactionId"] != "TX-FRONT" || chk.ext["commitLogOffset"] == "" {
		t.Fatalf("check-back ext %v, want transaction TX-FRONT with its offsets", chk.ext)
	}
	b.none(t, "the joining member and the half's sender")
	a.none(t, "the first member after its one notification")
}
