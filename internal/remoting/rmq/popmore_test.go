package rmq

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting"
)

// TestPopMoreHeadersRoundTrip: peek, notification and polling info
// requests and answers survive Encode, the wire and Decode, carry their
// codes and read what a Java client writes.
func TestPopMoreHeadersRoundTrip(t *testing.T) {
	pk := PeekRequest{ConsumerGroup: "cg", Topic: "T", QueueID: -1, MaxMsgNums: 16}
	c := overJSON(t, EncodePeekRequest(pk))
	if got, err := DecodePeekRequest(c); err != nil || !reflect.DeepEqual(got, pk) || c.FullCode() != 200052 {
		t.Fatalf("peek: %v %+v code %d", err, got, c.FullCode())
	}
	// Java's getQueueId gives -1 for any negative queue id.
	java := remoting.NewWideRequest(200052, map[string]string{"consumerGroup": "cg", "topic": "T", "queueId": "-5", "maxMsgNums": "16", "lo": "false"}, nil)
	if got, err := DecodePeekRequest(overJSON(t, java)); err != nil || !reflect.DeepEqual(got, pk) {
		t.Fatalf("Java peek: %v %+v", err, got)
	}

	nr := NotificationRequest{ConsumerGroup: "cg", Topic: "T", QueueID: 3, PollTime: 20000, BornTime: 1733046000000, Order: true, AttemptID: "a1"}
	c = overJSON(t, EncodeNotificationRequest(nr))
	if got, err := DecodeNotificationRequest(c); err != nil || !reflect.DeepEqual(got, nr) || c.FullCode() != 200054 {
		t.Fatalf("notification: %v %+v code %d", err, got, c.FullCode())
	}
	// bornTime, order and attemptId may be left out (Java's broker fills
	// bornTime in).
	java = remoting.NewWideRequest(200054, map[string]string{"consumerGroup": "cg", "topic": "T", "queueId": "-1", "pollTime": "100"}, nil)
	if got, err := DecodeNotificationRequest(overJSON(t, java)); err != nil || got != (NotificationRequest{ConsumerGroup: "cg", Topic: "T", QueueID: -1, PollTime: 100}) {
		t.Fatalf("Java notification: %v %+v", err, got)
	}
	for _, r := range []NotificationResponse{{HasMsg: true}, {PollingFull: true}, {}} {
		rc := overJSON(t, EncodeNotificationResponse(c, r))
		if got, err := DecodeNotificationResponse(rc); err != nil || got != r || rc.Code != RespSuccess || rc.Ext("hasMsg") == "" {
			t.Fatalf("notification answer %+v: %v %+v", r, err, got)
		}
	}

	pi := PollingInfoRequest{ConsumerGroup: "cg", Topic: "T", QueueID: 0}
	c = overJSON(t, EncodePollingInfoRequest(pi))
	if got, err := DecodePollingInfoRequest(c); err != nil || got != pi || c.FullCode() != 200055 {
		t.Fatalf("polling info: %v %+v code %d", err, got, c.FullCode())
	}
	if got, err := DecodePollingInfoResponse(overJSON(t, EncodePollingInfoResponse(c, PollingInfoResponse{PollingNum: 7}))); err != nil || got.PollingNum != 7 {
		t.Fatalf("polling info answer: %v %+v", err, got)
	}
}

// TestPopMoreRequiredFields: a missing required field is named.
func TestPopMoreRequiredFields(t *testing.T) {
	for _, tc := range []struct {
		full map[string]string
		need []string
		dec  func(*remoting.Command) error
	}{
		{EncodePeekRequest(PeekRequest{ConsumerGroup: "g", Topic: "T", MaxMsgNums: 1}).ExtFields, []string{"consumerGroup", "topic", "queueId", "maxMsgNums"},
			func(c *remoting.Command) error { _, err := DecodePeekRequest(c); return err }},
		{EncodeNotificationRequest(NotificationRequest{ConsumerGroup: "g", Topic: "T"}).ExtFields, []string{"consumerGroup", "topic", "queueId", "pollTime"},
			func(c *remoting.Command) error { _, err := DecodeNotificationRequest(c); return err }},
		{EncodePollingInfoRequest(PollingInfoRequest{ConsumerGroup: "g", Topic: "T"}).ExtFields, []string{"consumerGroup", "topic", "queueId"},
			func(c *remoting.Command) error { _, err := DecodePollingInfoRequest(c); return err }},
		{map[string]string{"hasMsg": "false"}, []string{"hasMsg"},
			func(c *remoting.Command) error { _, err := DecodeNotificationResponse(c); return err }},
		{map[string]string{"pollingNum": "0"}, []string{"pollingNum"},
			func(c *remoting.Command) error { _, err := DecodePollingInfoResponse(c); return err }},
	} {
		for _, k := range tc.need {
			ext := map[string]string{}
			for k2, v := range tc.full {
				if k2 != k {
					ext[k2] = v
				}
			}
			err := tc.dec(remoting.NewWideRequest(CodeNotification, ext, nil))
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != k || !fe.Missing {
				t.Errorf("without %s: %v", k, err)
			}
		}
	}
}

// javaBatchAck is what rocketmq-remoting 5.3.1 (fastjson 1.2.83) writes
// for a BatchAckMessageRequestBody of broker "broker-a" with one BatchAck
// (group cg, topic T, retry "0", startOffset 40, queueId 1,
// reviveQueueId 0, popTime 1733046000123, invisibleTime 60000, bits 0, 1,
// 9 and 17 set): BatchAckMessageRequestBody.encode() run on the JVM.
const javaBatchAck = `{"acks":[{"b":"AwIC","c":"cg","it":60000,"pt":1733046000123,"q":1,"r":"0","rq":0,"so":40,"t":"T"}],"brokerName":"broker-a"}`

// TestBatchAckAsJavaWritesIt: the body Java writes decodes to its
// offsets (startOffset + each set bit), Petrel writes the same bytes, the
// long field names (fastjson's alternateNames) and an unpadded bit set
// are read too, and an empty body has no acks.
func TestBatchAckAsJavaWritesIt(t *testing.T) {
	want := BatchAckRequest{BrokerName: "broker-a", Acks: []BatchAck{{ConsumerGroup: "cg", Topic: "T", Retry: "0", StartOffset: 40, QueueID: 1,
		PopTime: 1733046000123, InvisibleTime: 60000, Offsets: []int64{40, 41, 49, 57}}}}
	got, err := DecodeBatchAckRequest([]byte(javaBatchAck))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Java's body: %v\n got %+v\nwant %+v", err, got, want)
	}
	c := overJSON(t, EncodeBatchAckRequest(want))
	if c.FullCode() != 200151 || string(c.Body) != javaBatchAck {
		t.Fatalf("Petrel writes code %d body\n%s\nJava wrote\n%s", c.FullCode(), c.Body, javaBatchAck)
	}
	long := `{"acks":[{"consumerGroup":"cg","topic":"T","retry":"1","startOffset":5,"queueId":2,"reviveQueueId":999,"popTime":7,"invisibleTime":8,"bitSet":"AQ=="},` +
		`{"c":"g","t":"U","r":"2","b":"AwI"}]}`
	got, err = DecodeBatchAckRequest([]byte(long))
	if err != nil {
		t.Fatal(err)
	}
	if a := got.Acks[0]; a.Retry != "1" || a.StartOffset != 5 || a.QueueID != 2 || a.ReviveQueueID != 999 || a.PopTime != 7 || a.InvisibleTime != 8 || !reflect.DeepEqual(a.Offsets, []int64{5}) {
		t.Fatalf("long names: %+v", a)
	}
	if a := got.Acks[1]; a.ConsumerGroup != "g" || !reflect.DeepEqual(a.Offsets, []int64{0, 1, 9}) {
		t.Fatalf("unpadded bit set: %+v", a)
	}
	for _, body := range []string{"", `{}`, `{"acks":[]}`, `{"acks":null}`} {
		if got, err := DecodeBatchAckRequest([]byte(body)); err != nil || len(got.Acks) != 0 {
			t.Errorf("%q: %v %+v", body, err, got)
		}
	}
	if got, _ := DecodeBatchAckRequest([]byte(`{"acks":[{"c":"g","t":"T","r":"0","so":3}]}`)); len(got.Acks) != 1 || len(got.Acks[0].Offsets) != 0 {
		t.Errorf("an ack without a bit set: %+v", got)
	}
}

// TestBatchAckRefusals: malformed and oversized bodies are refused with a
// *BodyError that says what is wrong.
func TestBatchAckRefusals(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{`, "BatchAckMessageRequestBody"},
		{`{"acks":[{"t":"T","r":"0"}]}`, "acks[0] names no consumer group"},
		{`{"acks":[{"c":"g","r":"0"}]}`, "acks[0] names no topic"},
		{`{"acks":[{"c":"g","t":"T"}]}`, `retry (r) ""`},
		{`{"acks":[{"c":"g","t":"T","r":"3"}]}`, `retry (r) "3"`},
		{`{"acks":[{"c":"g","t":"T","r":"0","b":"***"}]}`, "not base64"},
		{`{"acks":[{"c":"g","t":"T","r":"0","so":-1}]}`, "negative"},
		{`{"acks":[{"c":"g","t":"T","r":"0","q":4294967296}]}`, "q"},
		{`{"acks":[{"c":"g","t":"T","r":"0","so":9223372036854775800,"b":"AQ=="}]}`, "too large"},
		{`{"acks":[{"c":"g","t":"T","r":"0","b":"` + strings.Repeat("A", 20000) + `"}]}`, "spanning more than"},
		{`{"acks":[` + strings.Repeat(`{"c":"g","t":"T","r":"0"},`, MaxBatchAcks) + `{"c":"g","t":"T","r":"0"}]}`, "more than the limit of 1024"},
		{`{"acks":[` + strings.Repeat(`{"c":"g","t":"T","r":"0","b":"`+strings.Repeat("/", 1400)+`"},`, 6) + `{"c":"g","t":"T","r":"0"}]}`, "more than 8192 offsets"},
		{strings.Repeat(" ", MaxBatchAckBodyBytes+1), "bytes, more than the limit"},
	} {
		_, err := DecodeBatchAckRequest([]byte(tc.body))
		var be *BodyError
		if !errors.As(err, &be) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.60s: %v, want %q", tc.body, err, tc.want)
		}
	}
}

func FuzzDecodePopMoreHeaders(f *testing.F) {
	f.Add(byte(0), extBytes(EncodePeekRequest(PeekRequest{ConsumerGroup: "cg", Topic: "T", QueueID: -1, MaxMsgNums: 32}).ExtFields))
	f.Add(byte(1), extBytes(EncodeNotificationRequest(NotificationRequest{ConsumerGroup: "cg", Topic: "T", QueueID: -1, PollTime: 20000, BornTime: 1, Order: true, AttemptID: "a"}).ExtFields))
	codecs := []headerCodec{
		codecOf(0, DecodePeekRequest, EncodePeekRequest, "consumerGroup", "topic", "queueId", "maxMsgNums"),
		codecOf(0, DecodeNotificationRequest, EncodeNotificationRequest, "consumerGroup", "topic", "queueId", "pollTime", "bornTime"),
		codecOf(0, DecodePollingInfoRequest, EncodePollingInfoRequest, "consumerGroup", "topic", "queueId"),
		codecOf(RespSuccess, DecodeNotificationResponse, func(r NotificationResponse) *remoting.Command {
			return EncodeNotificationResponse(remoting.NewWideRequest(CodeNotification, nil, nil), r)
		}, "hasMsg"),
		codecOf(RespSuccess, DecodePollingInfoResponse, func(r PollingInfoResponse) *remoting.Command {
			return EncodePollingInfoResponse(remoting.NewWideRequest(CodePollingInfo, nil, nil), r)
		}, "pollingNum"),
	}
	f.Fuzz(func(t *testing.T, which byte, data []byte) {
		checkHeader(t, codecs[int(which)%len(codecs)], extFrom(data))
	})
}

// FuzzDecodeBatchAck: a body decodes or is refused with a *BodyError,
// within its bounds; one that decodes is written back to a body that
// decodes to the same acks.
func FuzzDecodeBatchAck(f *testing.F) {
	f.Add([]byte(javaBatchAck))
	f.Add([]byte(`{"acks":[{"consumerGroup":"cg","topic":"T","retry":"1","startOffset":5,"bitSet":"AQ"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeBatchAckRequest(body)
		if err != nil {
			var be *BodyError
			if !errors.As(err, &be) {
				t.Fatalf("error %v is not a BodyError", err)
			}
			return
		}
		n := 0
		for _, a := range r.Acks {
			n += len(a.Offsets)
			for i, o := range a.Offsets {
				if o < a.StartOffset || o-a.StartOffset >= MaxBatchAckSpan || (i > 0 && o <= a.Offsets[i-1]) {
					t.Fatalf("ack %+v: offsets out of order or span", a)
				}
			}
		}
		if len(r.Acks) > MaxBatchAcks || n > MaxBatchAckOffsets {
			t.Fatalf("%d acks, %d offsets", len(r.Acks), n)
		}
		again, err := DecodeBatchAckRequest(EncodeBatchAckRequest(r).Body)
		if len(r.Acks) == 0 {
			if err != nil || len(again.Acks) != 0 {
				t.Fatalf("no acks written back: %v %+v", err, again)
			}
			return
		}
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("round trip: %v\n %+v\n %+v", err, r, again)
		}
	})
}
