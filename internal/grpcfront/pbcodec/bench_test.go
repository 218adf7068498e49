package pbcodec

import (
	"fmt"
	"testing"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// BenchmarkDecodeSendMessageRequest: gRPC-Go's proto codec against this
// one, for a request of 1 and of 16 one-KiB messages.
func BenchmarkDecodeSendMessageRequest(b *testing.B) {
	for _, n := range []int{1, 16} {
		var req v2.SendMessageRequest
		for i := range n {
			req.Messages = append(req.Messages, sendMessage(i))
		}
		data, _ := proto.Marshal(&req)
		for _, c := range []encoding.CodecV2{encoding.GetCodecV2("proto"), New()} {
			name := "proto"
			if _, ok := c.(*Codec); ok {
				name = "pbcodec"
			}
			b.Run(fmt.Sprintf("%s/msgs=%d", name, n), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					var r v2.SendMessageRequest
					if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, &r); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
