package pbcodec

import (
	"testing"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// FuzzDecodeSendMessageRequest: whatever the bytes, the hand decoder
// either leaves them to protobuf or decodes exactly what proto.Unmarshal
// does; and the codec's answer (result or error) is protobuf's.
func FuzzDecodeSendMessageRequest(f *testing.F) {
	for _, r := range requests() {
		b, _ := proto.Marshal(r)
		f.Add(b)
	}
	c := New()
	f.Fuzz(func(t *testing.T, b []byte) {
		var want v2.SendMessageRequest
		werr := proto.Unmarshal(b, &want)
		var hand v2.SendMessageRequest
		if DecodeSendMessageRequest(b, &hand) {
			if werr != nil {
				t.Fatalf("decoded by hand what protobuf refuses (%v): %v", werr, &hand)
			}
			if !proto.Equal(&hand, &want) {
				t.Fatalf("decoded by hand %v\nprotobuf %v", &hand, &want)
			}
		}
		var got v2.SendMessageRequest
		gerr := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, &got)
		if (gerr == nil) != (werr == nil) || (werr == nil && !proto.Equal(&got, &want)) {
			t.Fatalf("codec: %v (%v); protobuf: %v (%v)", &got, gerr, &want, werr)
		}
	})
}
