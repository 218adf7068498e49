package brokerfront

import (
	"net/netip"
	"testing"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/remoting"
)

// benchSendCommand is a typical V2 send as the server's lazy reader lists
// it: 14 fields, UNIQ_KEY and WAIT properties, 1 KiB body.
func benchSendCommand() *remoting.Command {
	c := remoting.NewRequest(codeSendMessageV2, nil, make([]byte, 1024))
	return c.AppendExt("a", "pg").AppendExt("b", "Orders").AppendExt("c", "TBW102").AppendExt("d", "4").
		AppendExt("e", "3").AppendExt("f", "0").AppendExt("g", "1700000000123").AppendExt("h", "0").
		AppendExt("i", "UNIQ_KEY\x01AC110001000078308DB10C3A5B000001\x02WAIT\x01true\x02").AppendExt("j", "0").
		AppendExt("k", "false").AppendExt("l", "16").AppendExt("m", "false").AppendExt("n", "broker-a")
}

// BenchmarkSendRequest: decoding a send into the broker's request, the
// per-send cost of the remoting hot path before the broker.
func BenchmarkSendRequest(b *testing.B) {
	c := benchSendCommand()
	born := netip.MustParseAddrPort("10.0.0.2:40000")
	b.ReportAllocs()
	for b.Loop() {
		if sr, refused := decodeSend(born, c); sr == nil || refused != nil {
			b.Fatal("refused")
		}
	}
}

// BenchmarkSendResponse: encoding a stored send's answer, the per-send
// cost of the remoting hot path after the broker.
func BenchmarkSendResponse(b *testing.B) {
	f := &Front{}
	req := benchSendCommand()
	res := broker.SendResult{MsgID: "AC11000100002A9F0000000000001000", QueueID: 3, QueueOffset: 1234567}
	b.ReportAllocs()
	for b.Loop() {
		if resp := f.sendResponse(req, res, nil); resp.Ext("queueOffset") != "1234567" {
			b.Fatal("wrong answer")
		}
	}
}
