package remoting

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
)

// DefaultMaxFrameBytes is the frame size limit used when a caller passes a
// maximum ≤ 0: a length prefix above it is refused.
const DefaultMaxFrameBytes = 16 << 20

// maxHeaderBytes is the largest header the 24-bit header length can carry.
const maxHeaderBytes = 1<<24 - 1

// EncodeFrame appends the whole frame of c (length prefix, header word,
// header in c.SerializeType, body or body parts) to dst and returns the
// extended slice. On error dst is returned unchanged and the error wraps
// ErrInvalidCommand. It does not call c.Release.
func EncodeFrame(dst []byte, c *Command) ([]byte, error) {
	bodyLen := c.BodyLen()
	out, err := appendFrameHead(dst, c, bodyLen)
	if err != nil {
		return dst, err
	}
	if len(c.BodyParts) == 0 {
		return append(out, c.Body...), nil
	}
	for _, p := range c.BodyParts {
		out = append(out, p...)
	}
	return out, nil
}

// appendFrameHead appends the length prefix, the header word and the header,
// with the prefix counting bodyLen more bytes that the caller writes next.
func appendFrameHead(dst []byte, c *Command, bodyLen int) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	var err error
	switch c.SerializeType {
	case SerializeJSON:
		dst = appendJSONHeader(dst, c)
	case SerializeRocketMQ:
		dst, err = appendBinaryHeader(dst, c)
	default:
		err = fmt.Errorf("%w: serialize type %d", ErrInvalidCommand, c.SerializeType)
	}
	if err != nil {
		return dst[:start], err
	}
	headerLen := len(dst) - start - 8
	if headerLen > maxHeaderBytes {
		return dst[:start], fmt.Errorf("%w: header of %d bytes exceeds %d", ErrInvalidCommand, headerLen, maxHeaderBytes)
	}
	total := int64(4) + int64(headerLen) + int64(bodyLen)
	if total > math.MaxInt32 {
		return dst[:start], fmt.Errorf("%w: frame of %d bytes exceeds 2 GiB", ErrInvalidCommand, total)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(total))
	binary.BigEndian.PutUint32(dst[start+4:], uint32(c.SerializeType)<<24|uint32(headerLen))
	return dst, nil
}

// checkLength validates a length prefix against the frame limit.
func checkLength(n uint32, maxFrame int) error {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrameBytes
	}
	if uint64(n) > uint64(maxFrame) {
		return fmt.Errorf("%w: length prefix %d exceeds %d", ErrFrameTooLarge, n, maxFrame)
	}
	if n < 4 {
		return fmt.Errorf("%w: length prefix %d leaves no room for the header word", ErrMalformed, n)
	}
	return nil
}

// DecodeFrame decodes the frame at the start of frame (which begins with the
// length prefix) and returns the command and the number of bytes consumed.
// It returns ErrShort while frame holds less than a whole frame, and errors
// wrapping ErrFrameTooLarge (checked as soon as the prefix is there, so a
// caller never buffers an oversized frame) or ErrMalformed. A maxFrame ≤ 0
// means DefaultMaxFrameBytes; it limits the value of the length prefix.
//
// The returned Body aliases frame (its capacity clipped to its length);
// header strings and the ext map are copies.
func DecodeFrame(frame []byte, maxFrame int) (*Command, int, error) {
	if len(frame) < 4 {
		return nil, 0, ErrShort
	}
	n := binary.BigEndian.Uint32(frame)
	if err := checkLength(n, maxFrame); err != nil {
		return nil, 0, err
	}
	if uint64(len(frame)-4) < uint64(n) {
		return nil, 0, ErrShort
	}
	c, err := decodeFrameBody(frame[4:4+int(n)], false)
	if err != nil {
		return nil, 0, err
	}
	return c, 4 + int(n), nil
}

// ReadFrame reads one frame from r. It returns io.EOF when r ends at a frame
// boundary, io.ErrUnexpectedEOF when it ends inside a frame, and codec
// errors as DecodeFrame does. The frame is read into one new buffer that the
// returned Body aliases; the buffer grows as the frame's bytes arrive, so a
// length prefix costs no memory before its bytes do.
func ReadFrame(r *bufio.Reader, maxFrame int) (*Command, error) {
	c, _, err := readFrame(r, maxFrame, false, nil)
	return c, err
}

// minFrameChunk is the first buffer of a frame whose bytes are not all
// buffered yet; it doubles as they arrive.
const minFrameChunk = 4 << 10

// frameBudget is what readFrame reserves a frame's memory from: a server
// connection's read budgets. reserve may wait; it fails when the
// connection closes or the wait times out.
type frameBudget interface {
	reserve(n int) error
	unreserve(n int)
}

// readFrame is ReadFrame; with lazy, JSON ext fields stay listed (see
// Command.ext) instead of filling ExtFields. With fb, the frame's buffer is
// reserved from it as it grows; held is what stays reserved for the
// returned command (0 on error).
func readFrame(r *bufio.Reader, maxFrame int, lazy bool, fb frameBudget) (c *Command, held int, err error) {
	prefix, err := r.Peek(4)
	if err != nil {
		if err == io.EOF && len(prefix) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, 0, err
	}
	n := binary.BigEndian.Uint32(prefix)
	if err := checkLength(n, maxFrame); err != nil {
		return nil, 0, err
	}
	_, _ = r.Discard(4)
	size := int(n)
	if b := r.Buffered(); b < size {
		if b == 0 {
			// Allocate nothing until the rest of the frame starts.
			if _, err := r.Peek(1); err != nil {
				return nil, 0, unexpectedEOF(err)
			}
			b = r.Buffered()
		}
		size = min(size, max(b, minFrameChunk))
	}
	if fb != nil {
		if err := fb.reserve(size); err != nil {
			return nil, 0, err
		}
	}
	buf := make([]byte, size)
	got := 0
	for {
		m, err := io.ReadFull(r, buf[got:])
		got += m
		if err != nil {
			if fb != nil {
				fb.unreserve(len(buf))
			}
			return nil, 0, unexpectedEOF(err)
		}
		if got == int(n) {
			break
		}
		next := min(int(n), 2*len(buf))
		if fb != nil {
			if err := fb.reserve(next - len(buf)); err != nil {
				fb.unreserve(len(buf))
				return nil, 0, err
			}
		}
		grown := make([]byte, next)
		copy(grown, buf)
		buf = grown
	}
	c, err = decodeFrameBody(buf, lazy)
	if err != nil {
		if fb != nil {
			fb.unreserve(len(buf))
		}
		return nil, 0, err
	}
	return c, len(buf), nil
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// decodeFrameBody decodes what follows the length prefix: header word,
// header, body.
func decodeFrameBody(b []byte, lazy bool) (*Command, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("%w: %d bytes leave no room for the header word", ErrMalformed, len(b))
	}
	word := binary.BigEndian.Uint32(b)
	headerLen := int(word & maxHeaderBytes)
	if headerLen > len(b)-4 {
		return nil, fmt.Errorf("%w: header length %d exceeds the %d bytes of the frame", ErrMalformed, headerLen, len(b)-4)
	}
	c := &Command{}
	if err := decodeHeaderLazy(byte(word>>24), b[4:4+headerLen], c, lazy); err != nil {
		return nil, err
	}
	if body := b[4+headerLen:]; len(body) > 0 {
		c.Body = body[:len(body):len(body)]
	}
	return c, nil
}

// decodeHeader decodes a header of the given serialisation type into c.
func decodeHeader(serializeType byte, h []byte, c *Command) error {
	return decodeHeaderLazy(serializeType, h, c, false)
}

// decodeHeaderLazy is decodeHeader; with lazy, JSON ext fields stay listed
// for Ext instead of filling ExtFields.
func decodeHeaderLazy(serializeType byte, h []byte, c *Command, lazy bool) error {
	c.SerializeType = serializeType
	switch serializeType {
	case SerializeJSON:
		if err := decodeJSONHeader(h, c); err != nil {
			return err
		}
		if !lazy {
			c.materialize()
		}
		return nil
	case SerializeRocketMQ:
		return decodeBinaryHeader(h, c, lazy)
	default:
		return fmt.Errorf("%w: unknown serialize type %d", ErrMalformed, serializeType)
	}
}

// appendHeader appends c's header in c.SerializeType.
func appendHeader(dst []byte, c *Command) ([]byte, error) {
	switch c.SerializeType {
	case SerializeJSON:
		return appendJSONHeader(dst, c), nil
	case SerializeRocketMQ:
		return appendBinaryHeader(dst, c)
	default:
		return dst, fmt.Errorf("%w: serialize type %d", ErrInvalidCommand, c.SerializeType)
	}
}
