package rmq_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/auth"
	"github.com/petrelmq/petrel/internal/namesrv"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

func reqString(rs []auth.Request) string {
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteString("; ")
		}
		acts := make([]string, len(r.Actions))
		for j, a := range r.Actions {
			acts[j] = string(a)
		}
		fmt.Fprintf(&b, "%s %s", r.Resource, strings.Join(acts, "|"))
	}
	return b.String()
}

func TestBrokerRequests(t *testing.T) {
	hb := rmq.EncodeHeartbeatBody(rmq.HeartbeatData{ClientID: "c1",
		ProducerDataSet: []rmq.ProducerData{{GroupName: "pg"}},
		ConsumerDataSet: []rmq.ConsumerData{{GroupName: "cg", SubscriptionDataSet: []rmq.SubscriptionData{{Topic: "T1"}, {Topic: "%RETRY%cg"}}},
			{GroupName: "cg2", SubscriptionDataSet: []rmq.SubscriptionData{{Topic: "T2"}}}}})
	lock := rmq.EncodeLockBatchRequest(rmq.LockBatchBody{ConsumerGroup: "cg", ClientID: "c",
		MQSet: []rmq.MessageQueue{{Topic: "T1", BrokerName: "b", QueueID: 0}, {Topic: "%RETRY%cg", BrokerName: "b"}}}).Body
	group := rmq.EncodeSubscriptionGroup(rmq.DefaultSubscriptionGroupConfig("ng")).Body
	batchAck := rmq.EncodeBatchAckRequest(rmq.BatchAckRequest{Acks: []rmq.BatchAck{
		{ConsumerGroup: "cg", Topic: "T1", Retry: "0", Offsets: []int64{1}},
		{ConsumerGroup: "cg", Topic: "T1", Retry: "0", QueueID: 1, Offsets: []int64{2}},
		{ConsumerGroup: "cg2", Topic: "%RETRY%cg2", Retry: "0"},
	}}).Body
	for _, tc := range []struct {
		code int32
		ext  map[string]string
		body []byte
		want string // "" with err: an error containing errWant
		err  string
	}{
		{10, map[string]string{"topic": "T"}, nil, "Topic:T Pub", ""},
		{310, map[string]string{"b": "T", "a": "pg"}, nil, "Topic:T Pub", ""},
		{320, map[string]string{"b": "T"}, nil, "Topic:T Pub", ""},
		{310, map[string]string{"b": "%RETRY%cg", "a": "CLIENT_INNER_PRODUCER"}, nil, "Group:cg Sub", ""},
		{10, map[string]string{"topic": "%RETRY%cg"}, nil, "Group:cg Sub", ""},
		{310, map[string]string{"b": "T", "topic": "U"}, nil, "", "names two topics"},
		{310, map[string]string{"b": "T", "topic": "T"}, nil, "Topic:T Pub", ""},
		{310, map[string]string{"a": "pg"}, nil, "", "SEND_MESSAGE_V2 (310) names no topic"},
		{11, map[string]string{"topic": "T", "consumerGroup": "cg"}, nil, "Topic:T Sub; Group:cg Sub", ""},
		{11, map[string]string{"topic": "%RETRY%cg", "consumerGroup": "cg"}, nil, "Group:cg Sub; Group:cg Sub", ""},
		{11, map[string]string{"topic": "T"}, nil, "", "PULL_MESSAGE (11) names no group (header field consumerGroup)"},
		{12, map[string]string{"topic": "T"}, nil, "Topic:T Sub|Get", ""},
		{14, map[string]string{"topic": "T", "consumerGroup": "cg"}, nil, "Group:cg Sub|Get; Topic:T Sub|Get", ""},
		{15, map[string]string{"topic": "T", "consumerGroup": "cg"}, nil, "Group:cg Sub|Update; Topic:T Sub|Update", ""},
		{15, map[string]string{"topic": "%RETRY%cg", "consumerGroup": "cg"}, nil, "Group:cg Sub|Update; Group:cg Sub|Update", ""},
		{17, map[string]string{"topic": "T"}, nil, "Topic:T Create", ""},
		{21, nil, nil, "Cluster Get|List", ""},
		{28, nil, nil, "Cluster Get", ""},
		{29, map[string]string{"topic": "T"}, nil, "Topic:T Sub|Get", ""},
		{30, map[string]string{"topic": "%RETRY%g"}, nil, "Group:g Sub|Get", ""},
		{31, map[string]string{"topic": "T"}, nil, "Topic:T Sub|Get", ""},
		{33, map[string]string{"topic": "T"}, nil, "Topic:T Get", ""},
		{33, nil, nil, "Cluster Get", ""},
		{34, nil, hb, "Group:cg Sub; Topic:T1 Sub; Group:cg2 Sub; Topic:T2 Sub", ""},
		{34, nil, rmq.EncodeHeartbeatBody(rmq.HeartbeatData{ProducerDataSet: []rmq.ProducerData{{GroupName: "pg"}}}), "", ""},
		{34, nil, []byte("{not json"), "", "heartbeat body is not valid JSON"},
		{35, map[string]string{"clientID": "c", "consumerGroup": "cg"}, nil, "Group:cg Sub", ""},
		{35, map[string]string{"clientID": "c", "producerGroup": "pg"}, nil, "", ""},
		{36, map[string]string{"group": "cg", "originTopic": "T"}, nil, "Group:cg Sub", ""},
		{37, map[string]string{"producerGroup": "pg", "topic": "T"}, nil, "Topic:T Pub", ""},
		{37, map[string]string{"producerGroup": "pg"}, nil, "", ""},
		{38, map[string]string{"consumerGroup": "cg"}, nil, "Group:cg Sub|Get", ""},
		{41, nil, lock, "Group:cg Sub; Topic:T1 Sub", ""},
		{42, nil, lock, "Group:cg Sub; Topic:T1 Sub", ""},
		{41, nil, []byte(`{"mqSet":[]}`), "", "lock body names no consumerGroup"},
		{42, nil, []byte(`[`), "", "unlock body is not valid JSON"},
		{200, nil, group, "Group:ng Create|Update", ""},
		{200, nil, nil, "", "SubscriptionGroupConfig"},
		{201, nil, nil, "Cluster Get|List", ""},
		{202, map[string]string{"topic": "T"}, nil, "Topic:T Get", ""},
		{203, map[string]string{"consumerGroup": "cg"}, nil, "Group:cg Get", ""},
		{207, map[string]string{"groupName": "cg"}, nil, "Group:cg Delete", ""},
		{208, map[string]string{"consumerGroup": "cg", "topic": "T"}, nil, "Group:cg Get; Topic:T Get", ""},
		{208, map[string]string{"consumerGroup": "cg"}, nil, "Group:cg Get", ""},
		{215, map[string]string{"topic": "T"}, nil, "Topic:T Delete", ""},
		{215, nil, nil, "", "DELETE_TOPIC_IN_BROKER (215) names no topic"},
		{222, map[string]string{"topic": "T", "group": "cg"}, nil, "Group:cg Update; Topic:T Update", ""},
		{200050, map[string]string{"topic": "T", "consumerGroup": "cg"}, nil, "Group:cg Sub; Topic:T Sub", ""},
		{200051, map[string]string{"topic": "T", "consumerGroup": "cg"}, nil, "Group:cg Sub; Topic:T Sub", ""},
		{200053, map[string]string{"topic": "%RETRY%cg", "consumerGroup": "cg"}, nil, "Group:cg Sub; Group:cg Sub", ""},
		{200052, map[string]string{"topic": "T", "consumerGroup": "cg"}, nil, "Group:cg Sub; Topic:T Sub", ""},
		{200054, map[string]string{"topic": "T", "consumerGroup": "cg"}, nil, "Group:cg Sub; Topic:T Sub", ""},
		{200055, map[string]string{"topic": "T", "consumerGroup": "cg"}, nil, "Group:cg Get; Topic:T Get", ""},
		{200055, map[string]string{"topic": "T"}, nil, "", "POLLING_INFO (200055) names no group"},
		{200151, nil, batchAck, "Group:cg Sub; Topic:T1 Sub; Group:cg2 Sub; Group:cg2 Sub", ""},
		{200151, nil, []byte(`{"acks":[{"c":"cg","r":"0"}]}`), "", "acks[0] names no topic"},
		{200151, nil, nil, "", ""},
		{10101, map[string]string{"group": "cg"}, nil, "Group:cg Update", ""},
		{10102, map[string]string{"msgId": "x"}, nil, "Cluster Update", ""},
		{10103, nil, nil, "Cluster Update", ""},
		{10104, map[string]string{"topic": "T", "consumerGroup": "cg"}, nil, "Group:cg Sub; Topic:T Sub", ""},
		{3001, nil, nil, "Cluster Update", ""},
		{3004, nil, nil, "Cluster Get", ""},
		{3005, nil, nil, "Cluster Get", ""},
		{3008, nil, nil, "Cluster Update", ""},
		{3010, nil, nil, "Cluster Get", ""},
		{105, map[string]string{"topic": "T"}, nil, "Topic:T Pub|Sub|Get", ""},
		{105, map[string]string{"topic": "%RETRY%cg"}, nil, "Group:cg Sub|Get", ""},
		{103, nil, nil, "Cluster Update", ""},
		{25, nil, []byte("autoCreateTopicEnable=false\n"), "Cluster Update", ""},
		{26, nil, nil, "Cluster Get", ""},
		{205, map[string]string{"brokerName": "broker-a"}, nil, "Cluster Update", ""},
		{327, map[string]string{"brokerName": "broker-a"}, nil, "Cluster Update", ""},
		{9999, nil, nil, "", "request code 9999 is not in the broker's ACL table"},
	} {
		cmd := remoting.NewWideRequest(tc.code, tc.ext, tc.body)
		got, err := rmq.BrokerRequests(tc.code, cmd, tc.body)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("code %d %v: err %v, want %q", tc.code, tc.ext, err, tc.err)
			}
		case err != nil:
			t.Errorf("code %d %v: %v", tc.code, tc.ext, err)
		case reqString(got) != tc.want:
			t.Errorf("code %d %v: %q, want %q", tc.code, tc.ext, reqString(got), tc.want)
		}
	}
}

func TestNameServerWrite(t *testing.T) {
	writes := []int16{rmq.CodePutKVConfig, rmq.CodeDeleteKVConfig, rmq.CodeRegisterBroker, rmq.CodeUnregisterBroker, rmq.CodeDeleteTopicInNamesrv,
		rmq.CodeWipeWritePermOfBroker, rmq.CodeAddWritePermOfBroker}
	reads := []int16{rmq.CodeGetKVConfig, rmq.CodeGetRouteInfoByTopic, rmq.CodeGetBrokerClusterInfo, rmq.CodeGetAllTopicList, rmq.CodeGetKVListByNamespace, rmq.CodeQueryDataVersion}
	for _, c := range writes {
		if !rmq.NameServerWrite(int32(c)) {
			t.Errorf("code %d is a write", c)
		}
	}
	for _, c := range reads {
		if rmq.NameServerWrite(int32(c)) {
			t.Errorf("code %d is a read", c)
		}
	}
	if !rmq.NameServerWrite(12345) || rmq.Known(12345) {
		t.Error("an unknown code must count as a write and not be known")
	}
}

// Every code a broker front or a name server registers, and the user/ACL
// management codes, has an entry: a code without one would be refused to
// every normal user.
func TestEveryServedCodeIsInTheACLTable(t *testing.T) {
	codes := brokerFrontCodes(t)
	if len(codes) < 30 {
		t.Fatalf("the broker front registered only %d codes", len(codes))
	}
	codes = append(codes, nameServerCodes(t)...)
	for c := rmq.CodeAuthCreateUser; c <= rmq.CodeAuthListACL; c++ {
		codes = append(codes, int32(c))
	}
	var missing []int32
	for _, c := range codes {
		if !rmq.Known(c) {
			missing = append(missing, c)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Fatalf("codes without an ACL table entry: %v", slices.Compact(missing))
	}
}

// nameServerCodes finds the codes a name server serves by asking it every
// int16 code: the unserved ones are answered REQUEST_CODE_NOT_SUPPORTED
// with the transport's remark.
func nameServerCodes(t *testing.T) []int32 {
	t.Helper()
	ns := namesrv.New(namesrv.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ns.Serve(ln) }()
	t.Cleanup(func() {
		ns.Close()
		<-done
	})
	cl := remoting.NewClient(remoting.ClientOptions{})
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := cl.Conn(ctx, ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		served  []int32
		failed  error
		wg      sync.WaitGroup
		window  = make(chan struct{}, 128)
		unknown = func(code int16, r *remoting.Command) bool {
			return r.Code == remoting.CodeRequestCodeNotSupported && r.Remark == fmt.Sprintf("request code %d is not supported", code)
		}
	)
	for code := int16(0); ; code++ {
		window <- struct{}{}
		wg.Add(1)
		c := code
		conn.InvokeAsync(remoting.NewRequest(c, nil, nil), func(r *remoting.Command, err error) {
			defer func() { <-window; wg.Done() }()
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				failed = err
			case !unknown(c, r):
				served = append(served, int32(c))
			}
		})
		if code == 32767 {
			break
		}
	}
	wg.Wait()
	if failed != nil {
		t.Fatal(failed)
	}
	for _, c := range []int16{rmq.CodeRegisterBroker, rmq.CodeGetRouteInfoByTopic, rmq.CodePutKVConfig} {
		if !slices.Contains(served, int32(c)) {
			t.Fatalf("the probe missed code %d among the name server's %v", c, served)
		}
	}
	return served
}

// Whatever a peer sends, BrokerRequests answers requests (each with an
// action) or an error, and never panics.
func FuzzBrokerRequests(f *testing.F) {
	f.Add(uint16(0), "topic=T\nconsumerGroup=g", []byte(`{"consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T"}]}]}`))
	f.Add(uint16(5), "b=%RETRY%g", []byte(`{"consumerGroup":"g","mqSet":[{"topic":""}]}`))
	f.Add(uint16(17), "", []byte("{"))
	codes := rmq.ACLCodes()
	f.Fuzz(func(t *testing.T, pick uint16, raw string, body []byte) {
		code := codes[int(pick)%len(codes)]
		ext := map[string]string{}
		for line := range strings.SplitSeq(raw, "\n") {
			k, v, _ := strings.Cut(line, "=")
			ext[k] = v
		}
		reqs, err := rmq.BrokerRequests(code, remoting.NewWideRequest(code, ext, body), body)
		if err != nil {
			return
		}
		for _, r := range reqs {
			if len(r.Actions) == 0 {
				t.Fatalf("code %d: request %+v with no action", code, r)
			}
		}
	})
}
