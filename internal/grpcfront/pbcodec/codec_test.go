package pbcodec

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"testing"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// sendMessage is a message as the official clients send one.
func sendMessage(i int) *v2.Message {
	return &v2.Message{
		Topic:          &v2.Resource{ResourceNamespace: "ns", Name: "BenchTopic"},
		UserProperties: map[string]string{"k": "v", "index": fmt.Sprint(i)},
		SystemProperties: &v2.SystemProperties{
			Tag:           proto.String("TagA"),
			Keys:          []string{"key1", fmt.Sprintf("key-%d", i)},
			MessageId:     fmt.Sprintf("01F8A2B3C4D5E6F70000000000%06d", i),
			BodyDigest:    &v2.Digest{Type: v2.DigestType_CRC32, Checksum: "1a2b3c4d"},
			BodyEncoding:  v2.Encoding_IDENTITY,
			MessageType:   v2.MessageType_NORMAL,
			BornTimestamp: timestamppb.New(timestamppb.Now().AsTime()),
			BornHost:      "10.0.0.1",
			QueueId:       3,
		},
		Body: bytes.Repeat([]byte{byte('a' + i%26)}, 1024),
	}
}

// everyField is a message with every field the decoder knows set.
func everyField() *v2.Message {
	return &v2.Message{
		Topic:          &v2.Resource{ResourceNamespace: "ns", Name: "T"},
		UserProperties: map[string]string{"": "", "a": "b"},
		SystemProperties: &v2.SystemProperties{
			Tag:                                 proto.String(""),
			Keys:                                []string{"", "k"},
			MessageId:                           "id",
			BodyDigest:                          &v2.Digest{Type: v2.DigestType_MD5, Checksum: "x"},
			BodyEncoding:                        v2.Encoding_GZIP,
			MessageType:                         v2.MessageType_TRANSACTION,
			BornTimestamp:                       &timestamppb.Timestamp{Seconds: -5, Nanos: -7},
			BornHost:                            "h",
			StoreTimestamp:                      &timestamppb.Timestamp{Seconds: 1},
			StoreHost:                           "s",
			DeliveryTimestamp:                   &timestamppb.Timestamp{Nanos: 9},
			ReceiptHandle:                       proto.String("rh"),
			QueueId:                             -1,
			QueueOffset:                         proto.Int64(-2),
			InvisibleDuration:                   durationpb.New(3),
			DeliveryAttempt:                     proto.Int32(0),
			MessageGroup:                        proto.String("g"),
			TraceContext:                        proto.String("tc"),
			OrphanedTransactionRecoveryDuration: &durationpb.Duration{},
		},
		Body: []byte{},
	}
}

func requests() map[string]*v2.SendMessageRequest {
	r := map[string]*v2.SendMessageRequest{
		"empty":         {},
		"one":           {Messages: []*v2.Message{sendMessage(0)}},
		"every field":   {Messages: []*v2.Message{everyField(), sendMessage(1)}},
		"empty message": {Messages: []*v2.Message{{}, {SystemProperties: &v2.SystemProperties{}, Topic: &v2.Resource{}}}},
	}
	var sixteen v2.SendMessageRequest
	for i := range 16 {
		sixteen.Messages = append(sixteen.Messages, sendMessage(i))
	}
	r["sixteen"] = &sixteen
	return r
}

func TestDecodeMatchesProto(t *testing.T) {
	for name, req := range requests() {
		t.Run(name, func(t *testing.T) {
			b, err := proto.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			var got v2.SendMessageRequest
			if !DecodeSendMessageRequest(b, &got) {
				t.Fatal("not decoded by hand")
			}
			if !proto.Equal(&got, req) {
				t.Fatalf("decoded %v\nwant %v", &got, req)
			}
		})
	}
}

// TestDecodeBodiesApart: the bodies share one buffer, but appending to one
// cannot overwrite the next.
func TestDecodeBodiesApart(t *testing.T) {
	b, _ := proto.Marshal(requests()["sixteen"])
	var got v2.SendMessageRequest
	if !DecodeSendMessageRequest(b, &got) {
		t.Fatal("not decoded by hand")
	}
	_ = append(got.Messages[0].Body, 'X')
	if got.Messages[1].Body[0] != 'b' {
		t.Fatalf("message 1's body starts with %q after an append to message 0's; want 'b'", got.Messages[1].Body[0])
	}
	b[len(b)-1] ^= 0xff
	if got.Messages[15].Body[1023] != 'p' {
		t.Fatal("a body changed with the input buffer; it must be a copy")
	}
}

// TestDecodeFallsBack: what the hand decoder leaves to protobuf, the codec
// decodes as protobuf does, errors included.
func TestDecodeFallsBack(t *testing.T) {
	one, _ := proto.Marshal(requests()["one"])
	msg, _ := proto.Marshal(sendMessage(0))
	sp, _ := proto.Marshal(sendMessage(0).SystemProperties)
	wrap := func(num protowire.Number, inner []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), inner)
	}
	cases := map[string][]byte{
		"unknown top-level field": protowire.AppendVarint(protowire.AppendTag(append([]byte{}, one...), 9, protowire.VarintType), 1),
		"unknown message field":   wrap(1, protowire.AppendVarint(protowire.AppendTag(append([]byte{}, msg...), 7, protowire.VarintType), 1)),
		"system properties twice": wrap(1, append(append([]byte{}, msg...), wrap(3, sp)...)),
		"tag as a varint":         wrap(1, wrap(3, protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 5))),
		"queue id as bytes":       wrap(1, wrap(3, wrap(13, []byte{1}))),
		"topic not UTF-8":         wrap(1, wrap(1, wrap(2, []byte{0xff}))),
		"property not UTF-8":      wrap(1, wrap(2, wrap(2, []byte{0xc0}))),
		"truncated":               one[:len(one)-3],
		"fixed32 field":           protowire.AppendFixed32(protowire.AppendTag(nil, 1, protowire.Fixed32Type), 1),
	}
	c := New()
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			var hand v2.SendMessageRequest
			if DecodeSendMessageRequest(b, &hand) {
				t.Fatal("decoded by hand; protobuf must decide this input")
			}
			var want, got v2.SendMessageRequest
			werr := proto.Unmarshal(b, &want)
			gerr := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &got)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("codec error %v, protobuf's %v", gerr, werr)
			}
			if werr == nil && !proto.Equal(&got, &want) {
				t.Fatalf("codec decoded %v\nprotobuf %v", &got, &want)
			}
		})
	}
}

// TestDecodeGolden: a request laid out as the official Go client v5 lays
// out a send (the fields it sets, in field order), its bytes checked by
// hand: 0a68 message, 0a08 topic, 120c a user property, 1a47 system
// properties (0a tag, 12 keys, 1a message id, 28 encoding, 30 type, 3a born
// timestamp, 42 born host), 2205 body.
func TestDecodeGolden(t *testing.T) {
	b, err := hex.DecodeString(goldenRequest)
	if err != nil {
		t.Fatal(err)
	}
	var r v2.SendMessageRequest
	if !DecodeSendMessageRequest(b, &r) {
		t.Fatal("not decoded by hand")
	}
	if len(r.Messages) != 1 {
		t.Fatalf("%d messages; want 1", len(r.Messages))
	}
	m := r.Messages[0]
	sp := m.SystemProperties
	got := fmt.Sprintf("%s/%s props=%v tag=%q keys=%q id=%s type=%v enc=%v born=%d.%09d host=%s body=%q",
		m.Topic.ResourceNamespace, m.Topic.Name, m.UserProperties, sp.GetTag(), sp.Keys, sp.MessageId, sp.MessageType,
		sp.BodyEncoding, sp.BornTimestamp.GetSeconds(), sp.BornTimestamp.GetNanos(), sp.BornHost, m.Body)
	want := `/TopicA props=map[color:red] tag="TagA" keys=["k1" "k2"] id=0A0B0C0D0E0F000000000000000A type=NORMAL enc=IDENTITY born=1764590400.123000000 host=10.1.2.3 body="hello"`
	if got != want {
		t.Fatalf("decoded\n%s\nwant\n%s", got, want)
	}
	var viaProto v2.SendMessageRequest
	if err := proto.Unmarshal(b, &viaProto); err != nil || !proto.Equal(&viaProto, &r) {
		t.Fatalf("protobuf decodes it as %v (%v)", &viaProto, err)
	}
}

// goldenRequest: see TestDecodeGolden.
const goldenRequest = "0a68" + "0a081206546f70696341" + "120c0a05636f6c6f721203726564" +
	"1a47" + "0a0454616741" + "12026b31" + "12026b32" + "1a1c30413042304330443045304630303030303030303030303030303041" +
	"2801" + "3001" + "3a0b08c086b6c90610c0a9d33a" + "420831302e312e322e33" +
	"220568656c6c6f"

// TestCodecOtherMessages: other messages go through protobuf both ways,
// and so do answers.
func TestCodecOtherMessages(t *testing.T) {
	c := New()
	in := &v2.AckMessageRequest{Group: &v2.Resource{Name: "G"}, Entries: []*v2.AckMessageEntry{{MessageId: "m", ReceiptHandle: "h"}}}
	data, err := c.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out v2.AckMessageRequest
	if err := c.Unmarshal(data, &out); err != nil || !proto.Equal(in, &out) {
		t.Fatalf("round trip gave %v (%v); want %v", &out, err, in)
	}
	resp := &v2.SendMessageResponse{Status: &v2.Status{Code: v2.Code_OK, Message: "OK"}, Entries: []*v2.SendResultEntry{{MessageId: "m", Offset: 7}}}
	got, err := c.Marshal(resp)
	want, _ := proto.Marshal(resp)
	if err != nil || !bytes.Equal(got.Materialize(), want) {
		t.Fatalf("answer encoded as %x (%v); protobuf %x", got.Materialize(), err, want)
	}
	if c.Name() != "proto" {
		t.Fatalf("name %q; want proto", c.Name())
	}
}
