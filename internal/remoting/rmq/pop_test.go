package rmq

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting"
)

// overJSON sends c through the frame codec with a JSON header (the only
// one a wide code fits) and returns what a peer decodes.
func overJSON(t testing.TB, c *remoting.Command) *remoting.Command {
	t.Helper()
	c.SerializeType = remoting.SerializeJSON
	b, err := remoting.EncodeFrame(nil, c)
	if err != nil {
		t.Fatalf("encode frame: %v", err)
	}
	got, n, err := remoting.DecodeFrame(b, 0)
	if err != nil || n != len(b) {
		t.Fatalf("decode frame: %v (%d of %d bytes)", err, n, len(b))
	}
	return got
}

// TestPopHeadersRoundTrip: the pop requests and answers survive Encode,
// the wire and Decode, carry their codes, and use Java's field names.
func TestPopHeadersRoundTrip(t *testing.T) {
	pr := PopRequest{ConsumerGroup: "cg", Topic: "T", QueueID: -1, MaxMsgNums: 32, InvisibleTime: 60000, PollTime: 20000,
		BornTime: 1733046000000, InitMode: 1, ExpType: "TAG", Exp: "a || b", Order: true, AttemptID: "att-1"}
	c := overJSON(t, EncodePopRequest(pr))
	if c.FullCode() != 200050 {
		t.Fatalf("pop code %d", c.FullCode())
	}
	got, err := DecodePopRequest(c)
	if err != nil || !reflect.DeepEqual(got, pr) {
		t.Fatalf("pop request: %v\n got %+v\nwant %+v", err, got, pr)
	}
	// Java's field names (PopMessageRequestHeader), as a Java client sends them.
	java := remoting.NewWideRequest(200050, map[string]string{"consumerGroup": "cg", "topic": "T", "queueId": "-1", "maxMsgNums": "32",
		"invisibleTime": "60000", "pollTime": "20000", "bornTime": "1733046000000", "initMode": "1", "expType": "TAG", "exp": "a || b",
		"order": "true", "attemptId": "att-1", "brokerName": "b1", "lo": "false"}, nil)
	if got, err := DecodePopRequest(overJSON(t, java)); err != nil || !reflect.DeepEqual(got, pr) {
		t.Fatalf("Java pop request: %v %+v", err, got)
	}

	req := remoting.NewWideRequest(CodePopMessage, nil, nil)
	resp := PopResponse{PopTime: 1733046000123, InvisibleTime: 60000, ReviveQid: 0, RestNum: 7,
		StartOffsetInfo: "0 1 40", MsgOffsetInfo: "0 1 40,41", OrderCountInfo: "0 1 0"}
	rc := overJSON(t, EncodePopResponse(req, RespSuccess, "", resp))
	if gr, err := DecodePopResponse(rc); err != nil || !reflect.DeepEqual(gr, resp) || rc.Code != RespSuccess {
		t.Fatalf("pop response: %v %+v", err, gr)
	}
	// An empty answer still carries Java's required fields.
	empty := overJSON(t, EncodePopResponse(req, RespPollingTimeout, "none", PopResponse{PopTime: 5}))
	for _, k := range []string{"popTime", "invisibleTime", "reviveQid", "restNum"} {
		if empty.Ext(k) == "" {
			t.Errorf("empty pop answer lacks %s", k)
		}
	}

	ar := AckRequest{ConsumerGroup: "cg", Topic: "T", QueueID: 2, ExtraInfo: "40 1733046000123 60000 0 0 b1 2 41 HANDLE", Offset: 41}
	ac := overJSON(t, EncodeAckRequest(ar))
	if ga, err := DecodeAckRequest(ac); err != nil || !reflect.DeepEqual(ga, ar) || ac.FullCode() != 200051 {
		t.Fatalf("ack request: %v %+v code %d", err, ga, ac.FullCode())
	}
	cr := ChangeInvisibleRequest{ConsumerGroup: "cg", Topic: "T", QueueID: 2, ExtraInfo: ar.ExtraInfo, Offset: 41, InvisibleTime: 5000}
	cc := overJSON(t, EncodeChangeInvisibleRequest(cr))
	if gc, err := DecodeChangeInvisibleRequest(cc); err != nil || !reflect.DeepEqual(gc, cr) || cc.FullCode() != 200053 {
		t.Fatalf("change request: %v %+v code %d", err, gc, cc.FullCode())
	}
	ch := ChangeInvisibleResponse{PopTime: 1733046001000, InvisibleTime: 5000, ReviveQid: 0, ReceiptHandle: "H2"}
	if gh, err := DecodeChangeInvisibleResponse(overJSON(t, EncodeChangeInvisibleResponse(cc, ch))); err != nil || !reflect.DeepEqual(gh, ch) {
		t.Fatalf("change response: %v %+v", err, gh)
	}
	fr := ForwardPopToDLQRequest{ConsumerGroup: "cg", Topic: "T", ReceiptHandle: "H"}
	fc := overWire(t, EncodeForwardPopToDLQRequest(fr))
	if gf, err := DecodeForwardPopToDLQRequest(fc); err != nil || !reflect.DeepEqual(gf, fr) || fc.Code != CodePetrelForwardPopToDLQ {
		t.Fatalf("forward to DLQ: %v %+v", err, gf)
	}
}

// TestPopRequiredFields: a missing required field is named.
func TestPopRequiredFields(t *testing.T) {
	full := EncodePopRequest(PopRequest{ConsumerGroup: "cg", Topic: "T", QueueID: -1, MaxMsgNums: 1, InvisibleTime: 1, PollTime: 0, BornTime: 1}).ExtFields
	for _, k := range []string{"consumerGroup", "topic", "queueId", "maxMsgNums", "invisibleTime", "pollTime", "bornTime", "initMode"} {
		ext := map[string]string{}
		for k2, v := range full {
			if k2 != k {
				ext[k2] = v
			}
		}
		_, err := DecodePopRequest(remoting.NewWideRequest(CodePopMessage, ext, nil))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != k || !fe.Missing {
			t.Errorf("without %s: %v", k, err)
		}
	}
	_, err := DecodeAckRequest(remoting.NewWideRequest(CodeAckMessage, map[string]string{"consumerGroup": "cg", "topic": "T", "queueId": "1", "offset": "2"}, nil))
	if err == nil || !strings.Contains(err.Error(), "extraInfo") {
		t.Errorf("ack without extraInfo: %v", err)
	}
}

// TestExtraInfoForms: Java's seven- and eight-field forms and Petrel's
// nine-field one parse and print back; malformed ones are refused with a
// sentence.
func TestExtraInfoForms(t *testing.T) {
	for _, s := range []string{
		"40 1733046000123 60000 0 0 broker-a 2",                   // Java's buildExtraInfo, 7 fields
		"40 1733046000123 60000 0 0 broker-a 2 41",                // with the queue offset
		"40 1733046000123 60000 999 0 broker-a 2 41 AQAAAAIAAAAA", // Petrel's, with the handle
		"-1 0 0 0 1 b 0 0",
	} {
		e, err := ParseExtraInfo(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if e.String() != s {
			t.Errorf("%q printed back as %q", s, e.String())
		}
	}
	e, _ := ParseExtraInfo("40 1733046000123 60000 999 0 broker-a 2 41 H x y")
	if e.CkQueueOffset != 40 || e.PopTime != 1733046000123 || e.InvisibleTime != 60000 || e.ReviveQid != 999 || e.Retry != "0" ||
		e.BrokerName != "broker-a" || e.QueueID != 2 || e.QueueOffset != 41 || e.Handle != "H" {
		t.Errorf("fields %+v", e)
	}
	if e, _ := ParseExtraInfo("40 1 2 0 0 b 2"); e.QueueOffset != -1 || e.Handle != "" {
		t.Errorf("seven fields: %+v", e)
	}
	for _, s := range []string{"", "1 2 3", "x 1 2 0 0 b 2 3", "1 2 3 99999999999 0 b 2 3", "1 2 3 0 0 b 2 z", strings.Repeat("1 ", 600)} {
		_, err := ParseExtraInfo(s)
		var ee *ExtraInfoError
		if !errors.As(err, &ee) || !strings.Contains(err.Error(), "POP_CK") {
			t.Errorf("%q: %v", s, err)
		}
	}
}

// TestOffsetInfoAsJavaReadsIt: startOffsetInfo and msgOffsetInfo parse
// back by Java's "mark@queueId" keys, and the extra info a Java client
// builds from them for a message without POP_CK (processPopResponse's
// second branch) names the message's queue and offset.
func TestOffsetInfoAsJavaReadsIt(t *testing.T) {
	qs := []QueueOffsets{{Retry: "0", QueueID: 1, Start: 40, Offsets: []int64{40, 41}}, {Retry: "1", QueueID: 1, Start: 7, Offsets: []int64{7}}}
	start, msg := FormatOffsetInfo(qs)
	if start != "0 1 40;1 1 7" || msg != "0 1 40,41;1 1 7" {
		t.Fatalf("formatted %q %q", start, msg)
	}
	m, err := ParseOffsetInfo(start, msg)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m["0@1"], qs[0]) || !reflect.DeepEqual(m["1@1"], qs[1]) || len(m) != 2 {
		t.Fatalf("parsed %+v", m)
	}
	// Java: buildExtraInfo(startOffsetInfo[key], popTime, invisibleTime,
	// reviveQid, topic, brokerName, queueId, msgOffsetInfo[key][index]).
	q := m["0@1"]
	e := ExtraInfo{CkQueueOffset: q.Start, PopTime: 1000, InvisibleTime: 60000, Retry: q.Retry, BrokerName: "b", QueueID: q.QueueID, QueueOffset: q.Offsets[1]}
	if got := e.String(); got != "40 1000 60000 0 0 b 1 41" {
		t.Fatalf("Java's extra info %q", got)
	}
	ack := AckRequestFor("cg", "T", e)
	if ack.QueueID != 1 || ack.Offset != 41 || ack.ExtraInfo != e.String() {
		t.Fatalf("ack %+v", ack)
	}
	for _, bad := range [][2]string{{"0 1 40;0 1 41", ""}, {"0 1", ""}, {"", "0 1 x"}, {"0 q 1", ""}} {
		if _, err := ParseOffsetInfo(bad[0], bad[1]); err == nil {
			t.Errorf("%q %q parsed", bad[0], bad[1])
		}
	}
}

func FuzzDecodePopHeaders(f *testing.F) {
	f.Add(byte(0), extBytes(EncodePopRequest(PopRequest{ConsumerGroup: "cg", Topic: "T", QueueID: -1, MaxMsgNums: 32, InvisibleTime: 60000, PollTime: 20000, BornTime: 1, InitMode: 0, ExpType: "TAG", Exp: "*", Order: true}).ExtFields))
	f.Add(byte(2), extBytes(EncodeAckRequest(AckRequest{ConsumerGroup: "cg", Topic: "T", QueueID: 1, ExtraInfo: "1 2 3 0 0 b 1 5 H", Offset: 5}).ExtFields))
	pops := []headerCodec{
		codecOf(0, DecodePopRequest, EncodePopRequest, "consumerGroup", "topic", "queueId", "maxMsgNums", "invisibleTime", "pollTime", "bornTime", "initMode"),
		codecOf(RespSuccess, DecodePopResponse, func(r PopResponse) *remoting.Command {
			return EncodePopResponse(remoting.NewWideRequest(CodePopMessage, nil, nil), RespSuccess, "", r)
		}, "popTime", "invisibleTime", "reviveQid", "restNum"),
		codecOf(0, DecodeAckRequest, EncodeAckRequest, "consumerGroup", "topic", "queueId", "extraInfo", "offset"),
		codecOf(0, DecodeChangeInvisibleRequest, EncodeChangeInvisibleRequest, "consumerGroup", "topic", "queueId", "extraInfo", "offset", "invisibleTime"),
		codecOf(RespSuccess, DecodeChangeInvisibleResponse, func(r ChangeInvisibleResponse) *remoting.Command {
			return EncodeChangeInvisibleResponse(remoting.NewWideRequest(CodeChangeInvisibleTime, nil, nil), r)
		}, "popTime", "invisibleTime", "reviveQid"),
		codecOf(CodePetrelForwardPopToDLQ, DecodeForwardPopToDLQRequest, EncodeForwardPopToDLQRequest, "consumerGroup", "topic", "receiptHandle"),
	}
	f.Fuzz(func(t *testing.T, which byte, data []byte) {
		checkHeader(t, pops[int(which)%len(pops)], extFrom(data))
	})
}

// FuzzParseExtraInfo: an extra info parses or is refused with an
// *ExtraInfoError; one that parses prints back to a string that parses to
// the same fields.
func FuzzParseExtraInfo(f *testing.F) {
	f.Add("40 1733046000123 60000 0 0 broker-a 2 41 AQAAAAIAAAAA")
	f.Add("40 1 2 0 0 b 2")
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseExtraInfo(s)
		if err != nil {
			var ee *ExtraInfoError
			if !errors.As(err, &ee) {
				t.Fatalf("%q: error %v is not an ExtraInfoError", s, err)
			}
			return
		}
		if strings.Contains(e.Retry+e.BrokerName+e.Handle, " ") {
			t.Fatalf("%q: a field holds a space: %+v", s, e)
		}
		again, err := ParseExtraInfo(e.String())
		if err != nil {
			if len(e.String()) > maxExtraInfoLen {
				return
			}
			t.Fatalf("%q printed as %q, which does not parse: %v", s, e.String(), err)
		}
		if again.Handle == "" && e.Handle == "" && again.QueueOffset != e.QueueOffset {
			t.Fatalf("%q: queue offset %d then %d", s, e.QueueOffset, again.QueueOffset)
		}
		if again.Handle != e.Handle || again.CkQueueOffset != e.CkQueueOffset || again.QueueID != e.QueueID || again.BrokerName != e.BrokerName {
			t.Fatalf("%q: %+v then %+v", s, e, again)
		}
	})
}

// FuzzParseOffsetInfo: a pop answer's offset lists parse or are refused
// with an *ExtraInfoError, never allocating beyond their bound.
func FuzzParseOffsetInfo(f *testing.F) {
	f.Add("0 1 40;1 1 7", "0 1 40,41;1 1 7")
	f.Add("", "0 0 1")
	f.Fuzz(func(t *testing.T, start, msg string) {
		m, err := ParseOffsetInfo(start, msg)
		if err != nil {
			var ee *ExtraInfoError
			if !errors.As(err, &ee) {
				t.Fatalf("error %v is not an ExtraInfoError", err)
			}
			return
		}
		if len(m) > 2*maxOffsetInfoQueues {
			t.Fatalf("%d queues", len(m))
		}
	})
}
