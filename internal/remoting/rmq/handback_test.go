package rmq

import (
	"slices"
	"testing"

	"github.com/petrelmq/petrel/internal/broker/staterec"
	"github.com/petrelmq/petrel/internal/remoting"
)

func TestHandBackRoundTrip(t *testing.T) {
	offs := []staterec.Offset{{Group: "g", Topic: "T", QueueID: 1, Offset: 1 << 40}, {Group: "h", Topic: "U", QueueID: 0, Offset: 0}}
	req := EncodeHandBackRequest(offs)
	if req.Code != CodePetrelHandBackOffsets {
		t.Fatalf("code %d", req.Code)
	}
	got, err := DecodeHandBackRequest(req)
	if err != nil || !slices.Equal(got, offs) {
		t.Fatalf("request %v %v", got, err)
	}
	resp := EncodeHandBackResponse(req, []int64{1 << 40, -1}, 77)
	o, end, err := DecodeHandBackResponse(resp, 2)
	if err != nil || end != 77 || !slices.Equal(o, []int64{1 << 40, -1}) {
		t.Fatalf("response %v %d %v", o, end, err)
	}
	if _, _, err := DecodeHandBackResponse(resp, 3); err == nil {
		t.Fatal("a short answer was accepted")
	}
	if _, _, err := DecodeHandBackResponse(remoting.NewResponse(req, RespSuccess, ""), 0); err == nil {
		t.Fatal("an answer without stateEnd was accepted")
	}
	if _, err := DecodeHandBackRequest(&remoting.Command{Body: []byte{0, 0, 0, 9}}); err == nil {
		t.Fatal("a truncated request was accepted")
	}
}

// FuzzDecodeHandBack: the request and answer decoders never panic, and a
// decoded request re-encodes to its body.
func FuzzDecodeHandBack(f *testing.F) {
	f.Add(staterec.AppendOffsets(nil, []staterec.Offset{{Group: "g", Topic: "T", QueueID: 1, Offset: 5}}), "5")
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, "x")
	f.Fuzz(func(t *testing.T, body []byte, end string) {
		req := &remoting.Command{Code: CodePetrelHandBackOffsets, Body: body}
		if offs, err := DecodeHandBackRequest(req); err == nil {
			if again := EncodeHandBackRequest(offs); string(again.Body) != string(body) {
				t.Fatalf("re-encoded %x, body %x", again.Body, body)
			}
		}
		resp := &remoting.Command{Body: body, ExtFields: map[string]string{"stateEnd": end}}
		if o, _, err := DecodeHandBackResponse(resp, len(body)/8); err == nil && len(o)*8 != len(body) {
			t.Fatalf("%d offsets from %d bytes", len(o), len(body))
		}
	})
}
