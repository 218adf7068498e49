package rmq

import (
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/petrelmq/petrel/internal/broker/staterec"
	"github.com/petrelmq/petrel/internal/remoting"
)

// PETREL_HAND_BACK_OFFSETS (CodePetrelHandBackOffsets), Petrel's own: a
// slave of a replicated group hands the consumer offsets committed on it
// to its master. Request: no header fields; body the entries in the state
// stream's KindOffsets encoding (staterec.AppendOffsets). Answer: code 0,
// ext field stateEnd (the master's state-topic end once the offsets are in
// its state stream), body one i64 big-endian per entry: the master's
// offset for it after the call (-1 for an entry it refused).

// MaxHandBackEntries bounds the entries of one hand-back.
const MaxHandBackEntries = 10_000

// EncodeHandBackRequest returns a hand-back request of offs.
func EncodeHandBackRequest(offs []staterec.Offset) *remoting.Command {
	return remoting.NewRequest(CodePetrelHandBackOffsets, nil, staterec.AppendOffsets(nil, offs))
}

// DecodeHandBackRequest decodes a hand-back request's entries (at most
// MaxHandBackEntries).
func DecodeHandBackRequest(c *remoting.Command) ([]staterec.Offset, error) {
	var offs []staterec.Offset
	err := staterec.DecodeOffsets(c.Body, func(o staterec.Offset) error {
		if len(offs) == MaxHandBackEntries {
			return fmt.Errorf("more than %d entries", MaxHandBackEntries)
		}
		offs = append(offs, o)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("hand-back body is not valid: %w", err)
	}
	return offs, nil
}

// EncodeHandBackResponse answers req with the master's offsets and its
// state-topic end.
func EncodeHandBackResponse(req *remoting.Command, offsets []int64, stateEnd int64) *remoting.Command {
	resp := remoting.NewResponse(req, RespSuccess, "")
	resp.SetExt("stateEnd", strconv.FormatInt(stateEnd, 10))
	body := make([]byte, 0, 8*len(offsets))
	for _, o := range offsets {
		body = binary.BigEndian.AppendUint64(body, uint64(o))
	}
	resp.Body = body
	return resp
}

// DecodeHandBackResponse decodes a hand-back answer of want entries.
func DecodeHandBackResponse(c *remoting.Command, want int) (offsets []int64, stateEnd int64, err error) {
	f := fields{c: c}
	stateEnd = f.needI64("stateEnd")
	if err := f.result(); err != nil {
		return nil, 0, err
	}
	if len(c.Body) != 8*want {
		return nil, 0, fmt.Errorf("hand-back answer body is %d bytes, want %d for %d entries", len(c.Body), 8*want, want)
	}
	offsets = make([]int64, want)
	for i := range offsets {
		offsets[i] = int64(binary.BigEndian.Uint64(c.Body[8*i:]))
	}
	return offsets, stateEnd, nil
}
