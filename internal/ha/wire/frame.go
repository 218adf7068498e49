package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
)

// FrameHeader is the size of a frame's header: payload length and CRC.
const FrameHeader = 8

var (
	// ErrFrameTooLarge is wrapped by ReadFrame when a frame announces a
	// payload above MaxFrame, and by the writers asked to send one.
	ErrFrameTooLarge = errors.New("wire: frame too large")
	// ErrChecksum is wrapped by ReadFrame when a payload's CRC does not
	// match: the stream is damaged and the connection must be dropped.
	ErrChecksum = errors.New("wire: frame checksum mismatch")
	// ErrEmptyFrame is wrapped by ReadFrame for a frame of length 0, which
	// no message encodes to.
	ErrEmptyFrame = errors.New("wire: empty frame")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// readChunk is how much ReadFrame allocates at first for a payload that does
// not fit the buffer it was given; it then grows with what arrived.
const readChunk = 64 << 10

// WriteFrame writes payload as one frame, in one Write.
func WriteFrame(w io.Writer, payload []byte) error {
	return WriteFrameParts(w, payload, nil)
}

// WriteFrameParts writes one frame whose payload is head followed by tail,
// without copying tail: the frame header and head go in one buffer and tail
// is handed to the writer as it is (a writev on a *net.TCPConn, two Writes
// otherwise). The master uses it to send a FetchResp header
// (AppendFetchRespHeader) and the log bytes it read. A short write is an
// error (io.ErrShortWrite); the stream is then broken and must be closed.
// A writer goroutine that sends many frames uses a FrameWriter instead,
// which allocates nothing per frame.
func WriteFrameParts(w io.Writer, head, tail []byte) error {
	return NewFrameWriter(w).WriteFrame(head, tail)
}

func fullWrite(w io.Writer, b []byte) error {
	n, err := w.Write(b)
	if err == nil && n != len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return fmt.Errorf("wire: write frame of %d bytes: %w", len(b)-FrameHeader, err)
	}
	return nil
}

// ReadFrame reads one frame from r and returns its payload, checked against
// its CRC. The payload is read into buf when it fits (cap(buf)), else into
// a new slice that grows as the bytes arrive, so pass the returned slice as
// the next call's buf to reuse it; the payload is only valid until then.
//
// A length above MaxFrame is refused (ErrFrameTooLarge) before anything is
// allocated. r ending cleanly before a frame gives io.EOF; ending inside a
// frame, io.ErrUnexpectedEOF (wrapped).
func ReadFrame(r io.Reader, buf []byte) ([]byte, error) {
	// The header is read into buf when it fits, so that a reused buffer
	// makes the call allocate nothing; the payload overwrites it.
	var hb []byte
	if cap(buf) >= FrameHeader {
		hb = buf[:FrameHeader]
	} else {
		hb = make([]byte, FrameHeader)
	}
	if n, err := io.ReadFull(r, hb); err != nil {
		if err == io.EOF && n == 0 {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("wire: read frame header: %w", err)
	}
	n := binary.BigEndian.Uint32(hb[0:4])
	want := binary.BigEndian.Uint32(hb[4:8])
	if n > MaxFrame {
		return nil, fmt.Errorf("%w: frame length %d, at most %d", ErrFrameTooLarge, n, MaxFrame)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: frame length 0", ErrEmptyFrame)
	}
	p, err := readPayload(r, buf, int(n))
	if err != nil {
		return nil, fmt.Errorf("wire: read frame payload of %d bytes: %w", n, err)
	}
	if got := crc32.Checksum(p, castagnoli); got != want {
		return nil, fmt.Errorf("%w: payload of %d bytes has CRC %08x, frame says %08x", ErrChecksum, n, got, want)
	}
	return p, nil
}

// readPayload reads n bytes into buf, growing it (at most doubling what has
// arrived) when it is too small.
func readPayload(r io.Reader, buf []byte, n int) ([]byte, error) {
	if cap(buf) >= n {
		p := buf[:n]
		_, err := io.ReadFull(r, p)
		return p, eofIsUnexpected(err)
	}
	p := buf[:0]
	for len(p) < n {
		k := min(n-len(p), max(len(p), readChunk))
		if cap(p)-len(p) < k {
			q := make([]byte, len(p), len(p)+k)
			copy(q, p)
			p = q
		}
		start := len(p)
		p = p[:start+k]
		if _, err := io.ReadFull(r, p[start:]); err != nil {
			return nil, eofIsUnexpected(err)
		}
	}
	return p, nil
}

func eofIsUnexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// FrameWriter writes frames to one writer, reusing its buffers, so that a
// frame costs no allocation once its buffer has grown to the largest head
// written. It is WriteFrameParts for a connection's writer goroutine; it is
// not safe for concurrent use.
type FrameWriter struct {
	w    io.Writer
	buf  []byte // frame header + head
	vec  [2][]byte
	bufs net.Buffers
}

// NewFrameWriter returns a FrameWriter that writes to w.
func NewFrameWriter(w io.Writer) *FrameWriter { return &FrameWriter{w: w} }

// WriteFrame writes one frame whose payload is head followed by tail, as
// WriteFrameParts does.
func (fw *FrameWriter) WriteFrame(head, tail []byte) error {
	n := uint64(len(head)) + uint64(len(tail))
	if n > MaxFrame {
		return fmt.Errorf("%w: payload of %d bytes, at most %d", ErrFrameTooLarge, n, MaxFrame)
	}
	if n == 0 {
		return ErrEmptyFrame
	}
	crc := crc32.Update(crc32.Checksum(head, castagnoli), castagnoli, tail)
	fw.buf = append(fw.buf[:0], 0, 0, 0, 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(fw.buf[0:4], uint32(n))
	binary.BigEndian.PutUint32(fw.buf[4:8], crc)
	fw.buf = append(fw.buf, head...)
	if len(tail) == 0 {
		return fullWrite(fw.w, fw.buf)
	}
	fw.vec = [2][]byte{fw.buf, tail}
	fw.bufs = fw.vec[:]
	written, err := fw.bufs.WriteTo(fw.w)
	fw.vec = [2][]byte{} // drop the reference to tail
	if err == nil && written != int64(len(fw.buf)+len(tail)) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return fmt.Errorf("wire: write frame of %d bytes: %w", n, err)
	}
	return nil
}
