package workload

// Message ids and bodies, as the checker reads them:
//
//	id    <runID>-<workload>-<producer>-<n>     e.g. 0badc0de-ordered-1-17
//	body  <id> <k=v> <k=v> ... xxxxxxxx         filler 'x' up to the body size
//
// The id is also the message's KEYS (so that the drain, and an operator,
// can find it) and its UNIQ_KEY (so that the broker's deduplication sees
// a resend of the same id as one message). Sum is the CRC-32 (IEEE) of the
// whole body.

import (
	"bytes"
	"hash/crc32"
	"strconv"
	"strings"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/verify/history"
)

// ID is the id of the n-th message of producer p of a workload.
func ID(runID, workload string, p, n int) string {
	return runID + "-" + workload + "-" + strconv.Itoa(p) + "-" + strconv.Itoa(n)
}

// ValidID reports whether id has the shape ID makes: four non-empty
// dash-separated parts without spaces, the last two decimal numbers.
func ValidID(id string) bool {
	if id == "" || strings.ContainsAny(id, " \t\r\n") {
		return false
	}
	parts := strings.Split(id, "-")
	if len(parts) != 4 {
		return false
	}
	for i, p := range parts {
		if p == "" {
			return false
		}
		if i >= 2 {
			for j := 0; j < len(p); j++ {
				if p[j] < '0' || p[j] > '9' {
					return false
				}
			}
		}
	}
	return true
}

// Field is one k=v pair of a body.
type Field struct{ K, V string }

// Body returns the body of message id with fields, filled with 'x' up to
// size bytes (a body longer than size is not cut).
func Body(id string, size int, fields ...Field) []byte {
	n := len(id)
	for _, f := range fields {
		n += 1 + len(f.K) + 1 + len(f.V)
	}
	b := make([]byte, 0, max(size, n+1))
	b = append(b, id...)
	for _, f := range fields {
		b = append(b, ' ')
		b = append(b, f.K...)
		b = append(b, '=')
		b = append(b, f.V...)
	}
	if len(b) < size {
		b = append(b, ' ')
		for len(b) < size {
			b = append(b, 'x')
		}
	}
	return b
}

// Sum is the checksum history lines carry for a body.
func Sum(body []byte) uint32 { return crc32.ChecksumIEEE(body) }

// Parsed is a body read back.
type Parsed struct {
	ID     string
	Fields map[string]string
}

// ParseBody reads a body back. ok is false when it does not start with a
// well-formed id, or a word after the id is neither k=v nor filler.
func ParseBody(body []byte) (p Parsed, ok bool) {
	words := bytes.Split(body, []byte{' '})
	id := string(words[0])
	if !ValidID(id) {
		return Parsed{}, false
	}
	p.ID = id
	for i, w := range words[1:] {
		k, v, found := bytes.Cut(w, []byte{'='})
		if !found {
			if i == len(words)-2 && len(bytes.Trim(w, "x")) == 0 {
				break // the filler, last
			}
			return Parsed{}, false
		}
		if len(k) == 0 {
			return Parsed{}, false
		}
		if p.Fields == nil {
			p.Fields = make(map[string]string, 4)
		}
		p.Fields[string(k)] = string(v)
	}
	return p, true
}

// Received is what a consumer or the drain knows of a message it got.
type Received struct {
	ID      string
	Sum     uint32
	Corrupt bool
	Fields  map[string]string
}

// Receive reads a received message: its body's id and fields, or, for a
// body that does not parse, Corrupt with the id from the first KEYS.
func Receive(m *message.Message) Received {
	return receive(m.Body, func() (first string) {
		message.Keys(m.Property(message.PropertyKeys), func(k string) {
			if first == "" {
				first = k
			}
		})
		return first
	})
}

// receive reads a received body; firstKey is the message's first key,
// asked only for a body that does not parse.
func receive(body []byte, firstKey func() string) Received {
	r := Received{Sum: Sum(body)}
	if p, ok := ParseBody(body); ok {
		r.ID, r.Fields = p.ID, p.Fields
		return r
	}
	r.Corrupt, r.ID = true, firstKey()
	return r
}

// op is the Deliver (with Key and Seq) or Drain line of r, received by
// process from offset of queue of topic.
func (r Received) op(f history.Func, workload, process, topic string, queue int32, offset int64) history.Op {
	op := history.New(history.Info, f)
	op.Workload, op.Process, op.ID, op.Topic = workload, process, r.ID, topic
	op.Queue, op.Offset, op.Sum, op.Corrupt = queue, offset, r.Sum, r.Corrupt
	if f == history.Deliver {
		op.Key, op.Seq = r.Fields["key"], r.Seq()
	}
	return op
}

// Seq returns the seq field as a number (0 when absent or not a number).
func (r Received) Seq() int64 {
	n, _ := strconv.ParseInt(r.Fields["seq"], 10, 64)
	return n
}

// idProperties returns the encoded properties of a message id sends:
// KEYS and UNIQ_KEY the id, plus extra (key, value pairs).
func idProperties(id string, extra ...string) string {
	m := map[string]string{message.PropertyKeys: id, message.PropertyUniqKey: id, message.PropertyWait: "true"}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return message.EncodeProperties(m)
}
