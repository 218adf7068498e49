package pbcodec

import (
	"bytes"
	"testing"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/protobuf/proto"
)

// FuzzRecallMessage holds the hand-written RecallMessage codec to
// protobuf's: fields 1 and 2 of RecallMessageRequest are those of the
// generated EndTransactionRequest (Resource topic, string message_id), and
// of RecallMessageResponse those of SendResultEntry (Status status,
// string message_id). What protobuf decodes, ours decodes to the same;
// what ours refuses, protobuf refuses; what decodes re-encodes to bytes
// that decode to the same and encode again byte for byte. The one
// difference allowed: ours skips fields above 2 that protobuf would read
// (and may refuse).
func FuzzRecallMessage(f *testing.F) {
	req, _ := (&RecallMessageRequest{Topic: &v2.Resource{ResourceNamespace: "ns", Name: "T"}, RecallHandle: "djEgVCBicm9rZXItYSAxIElE"}).Marshal()
	resp, _ := (&RecallMessageResponse{Status: &v2.Status{Code: v2.Code_OK, Message: "OK"}, MessageId: "ID"}).Marshal()
	f.Add(req)
	f.Add(resp)
	f.Fuzz(func(t *testing.T, b []byte) {
		var r RecallMessageRequest
		var want v2.EndTransactionRequest
		errOurs, errProto := r.Unmarshal(b), proto.Unmarshal(b, &want)
		switch {
		case errProto == nil && errOurs != nil:
			t.Fatalf("request: protobuf decodes %x, ours: %v", b, errOurs)
		case errProto == nil && (!proto.Equal(r.Topic, want.Topic) || r.RecallHandle != want.MessageId):
			t.Fatalf("request %x: ours %+v, protobuf %v", b, r, &want)
		}
		if errOurs == nil {
			roundTrip(t, &r, &RecallMessageRequest{}, func(a, b *RecallMessageRequest) bool {
				return proto.Equal(a.Topic, b.Topic) && (a.Topic == nil) == (b.Topic == nil) && a.RecallHandle == b.RecallHandle
			})
		}
		var a RecallMessageResponse
		var wantA v2.SendResultEntry
		errOurs, errProto = a.Unmarshal(b), proto.Unmarshal(b, &wantA)
		switch {
		case errProto == nil && errOurs != nil:
			t.Fatalf("response: protobuf decodes %x, ours: %v", b, errOurs)
		case errProto == nil && (!proto.Equal(a.Status, wantA.Status) || a.MessageId != wantA.MessageId):
			t.Fatalf("response %x: ours %+v, protobuf %v", b, a, &wantA)
		}
		if errOurs == nil {
			roundTrip(t, &a, &RecallMessageResponse{}, func(x, y *RecallMessageResponse) bool {
				return proto.Equal(x.Status, y.Status) && (x.Status == nil) == (y.Status == nil) && x.MessageId == y.MessageId
			})
		}
	})
}

type recallMsg interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

func roundTrip[T recallMsg](t *testing.T, m, again T, equal func(a, b T) bool) {
	t.Helper()
	b1, err := m.Marshal()
	if err != nil {
		t.Fatalf("marshal %+v: %v", m, err)
	}
	if err := again.Unmarshal(b1); err != nil {
		t.Fatalf("%x re-encoded does not decode: %v", b1, err)
	}
	if !equal(m, again) {
		t.Fatalf("round trip: %+v became %+v", m, again)
	}
	b2, _ := again.Marshal()
	if !bytes.Equal(b1, b2) {
		t.Fatalf("encoding is not stable: %x then %x", b1, b2)
	}
}

// TestRecallHandleField: the recall handle rides in SendResultEntry as
// field 5 (an unknown field to the generated code), survives protobuf's
// encoding, is replaced by a second set and removed by an empty one,
// and leaves other unknown fields alone.
func TestRecallHandleField(t *testing.T) {
	e := &v2.SendResultEntry{MessageId: "ID", Offset: 3}
	e.ProtoReflect().SetUnknown([]byte{0x30, 0x01}) // field 6 varint 1
	SetRecallHandle(e, "first")
	SetRecallHandle(e, "second")
	b, err := proto.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var got v2.SendResultEntry
	if err := proto.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if h := RecallHandle(&got); h != "second" || got.MessageId != "ID" || got.Offset != 3 {
		t.Fatalf("decoded entry: handle %q, %v", h, &got)
	}
	SetRecallHandle(&got, "")
	if h, u := RecallHandle(&got), got.ProtoReflect().GetUnknown(); h != "" || !bytes.Equal(u, []byte{0x30, 0x01}) {
		t.Fatalf("after clearing: handle %q, unknown %x", h, u)
	}
}
