package rmq

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Maps keyed by a message queue, as Java's fastjson writes them: the queue
// object itself is the key, which is not JSON:
//
//	{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:5,...}}
//
// The reset-offset body (INVOKE_BROKER_TO_RESET_OFFSET's answer and
// RESET_CONSUMER_CLIENT_OFFSET's body) is OffsetTable; consume stats and
// topic stats carry the same form with object values (AppendMQMap,
// DecodeMQMap). Decoders also read the array form [[{queue},value],...]
// that Go's encoders write for such maps.

// MessageQueue names one queue of a topic on a broker. It is also the wire
// shape of a queue in lock bodies: {"topic","brokerName","queueId"}.
type MessageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
}

// compareQueues orders queues by topic, broker name, then queue id.
func compareQueues(a, b MessageQueue) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	if c := strings.Compare(a.BrokerName, b.BrokerName); c != 0 {
		return c
	}
	return cmp.Compare(a.QueueID, b.QueueID)
}

// appendMQKey appends q as fastjson writes a map key: fields in name order.
func appendMQKey(dst []byte, q MessageQueue) []byte {
	b, _ := json.Marshal(struct { // strings and an integer cannot fail
		BrokerName string `json:"brokerName"`
		QueueID    int32  `json:"queueId"`
		Topic      string `json:"topic"`
	}{q.BrokerName, q.QueueID, q.Topic})
	return append(dst, b...)
}

// appendMQEntry appends one entry q:v of a map keyed by message queues,
// after a comma unless it is the first.
func appendMQEntry(dst []byte, first bool, q MessageQueue, v []byte) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = appendMQKey(dst, q)
	dst = append(dst, ':')
	return append(dst, v...)
}

// AppendMQMap appends m as a fastjson map keyed by message queues,
// {key:value,...}, entries ordered by queue (topic, broker, queue id). It
// fails only when a value does not marshal.
func AppendMQMap[V any](dst []byte, m map[MessageQueue]V) ([]byte, error) {
	keys := make([]MessageQueue, 0, len(m))
	for q := range m {
		keys = append(keys, q)
	}
	slices.SortFunc(keys, compareQueues)
	dst = append(dst, '{')
	for i, q := range keys {
		v, err := json.Marshal(m[q])
		if err != nil {
			return dst, fmt.Errorf("rmq: value of queue %d of %s: %w", q.QueueID, q.Topic, err)
		}
		dst = appendMQEntry(dst, i == 0, q, v)
	}
	return append(dst, '}'), nil
}

// DecodeMQMap reads the field of body that is a map keyed by message
// queues, in fastjson's form or the array form, and unmarshals each value
// into a V. A queue named twice keeps its last value. The error says what
// is wrong and where.
func DecodeMQMap[V any](body []byte, field string) (map[MessageQueue]V, error) {
	key := []byte(`"` + field + `":`)
	i := bytes.Index(body, key)
	if i < 0 {
		return nil, fmt.Errorf("rmq: no %q in %.200q", field, body)
	}
	p := &scan{b: body[i+len(key):]}
	p.ws()
	entries, err := p.queueMap()
	if err != nil {
		return nil, fmt.Errorf("rmq: %q: %w", field, err)
	}
	out := make(map[MessageQueue]V, len(entries))
	for _, e := range entries {
		var v V
		if err := json.Unmarshal(e.value, &v); err != nil {
			return nil, fmt.Errorf("rmq: value %.100s of queue %d of %s in %q: %w", e.value, e.QueueID, e.Topic, field, err)
		}
		out[e.MessageQueue] = v
	}
	return out, nil
}

// OffsetTable is the reset-offset body, ResetOffsetBody: per queue the
// offset its group starts from again.
type OffsetTable map[MessageQueue]int64

// EncodeOffsetTable returns t as {"offsetTable":{...}}, in fastjson's form
// (see above), queues in order.
func EncodeOffsetTable(t OffsetTable) []byte {
	b := append(make([]byte, 0, 16+64*len(t)), `{"offsetTable":`...)
	b, _ = AppendMQMap(b, t) // int64 values cannot fail
	return append(b, '}')
}

// DecodeOffsetTable reads an offset table body in fastjson's form or the
// array form.
func DecodeOffsetTable(body []byte) (OffsetTable, error) {
	m, err := DecodeMQMap[int64](body, "offsetTable")
	return OffsetTable(m), err
}

// queueEntry is one entry of a map keyed by a message queue, its value
// not yet unmarshalled.
type queueEntry struct {
	MessageQueue
	value json.RawMessage
}

// scan finds the extent of JSON values in text that is not JSON as a
// whole.
type scan struct {
	b []byte
	i int
}

// queueMap reads a map keyed by message queues at p: fastjson's object
// form or the array form [[{queue},value],...]. The entries are in the
// order written.
func (p *scan) queueMap() ([]queueEntry, error) {
	var out []queueEntry
	switch p.peek() {
	case '{':
		p.i++
		for {
			p.ws()
			if p.peek() == '}' {
				p.i++
				return out, nil
			}
			kb, err := p.value()
			if err != nil {
				return nil, err
			}
			var e queueEntry
			if err := json.Unmarshal(kb, &e.MessageQueue); err != nil {
				return nil, fmt.Errorf("a queue key is not a MessageQueue object (at byte %d)", p.i)
			}
			p.ws()
			if p.peek() != ':' {
				return nil, fmt.Errorf("want ':' after a queue key at byte %d", p.i)
			}
			p.i++
			p.ws()
			if e.value, err = p.value(); err != nil {
				return nil, err
			}
			out = append(out, e)
			p.ws()
			switch p.peek() {
			case ',':
				p.i++
			case '}':
				p.i++
				return out, nil
			default:
				return nil, fmt.Errorf("want ',' or '}' at byte %d", p.i)
			}
		}
	case '[':
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		var pairs [][]json.RawMessage
		if err := json.Unmarshal(v, &pairs); err != nil {
			return nil, fmt.Errorf("the array form is not [[queue, value],...]")
		}
		for _, pr := range pairs {
			if len(pr) != 2 {
				return nil, fmt.Errorf("an entry has %d elements, want [queue, value]", len(pr))
			}
			var e queueEntry
			if err := json.Unmarshal(pr[0], &e.MessageQueue); err != nil {
				return nil, fmt.Errorf("a queue is not a MessageQueue object")
			}
			e.value = pr[1]
			out = append(out, e)
		}
		return out, nil
	}
	return nil, fmt.Errorf("neither an object nor an array")
}

func (p *scan) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *scan) ws() {
	for p.i < len(p.b) && strings.IndexByte(" \t\r\n", p.b[p.i]) >= 0 {
		p.i++
	}
}

// value returns the JSON value at i: a string, an object or array
// (balanced, strings skipped), or a literal up to the next , : } ].
func (p *scan) value() ([]byte, error) {
	v, err := p.extent()
	if err == nil && !json.Valid(v) {
		err = fmt.Errorf("invalid JSON value at byte %d", p.i-len(v))
	}
	return v, err
}

func (p *scan) extent() ([]byte, error) {
	start := p.i
	depth := 0
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			for p.i < len(p.b) && p.b[p.i] != '"' {
				if p.b[p.i] == '\\' {
					p.i++
				}
				p.i++
			}
			if p.i >= len(p.b) {
				return nil, fmt.Errorf("unterminated string at byte %d", start)
			}
			p.i++
			if depth == 0 {
				return p.b[start:p.i], nil
			}
			continue
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return p.b[start:p.i], nil
			}
			depth--
			if depth == 0 {
				p.i++
				return p.b[start:p.i], nil
			}
		case depth == 0 && (c == ',' || c == ':'):
			return p.b[start:p.i], nil
		}
		p.i++
	}
	if depth != 0 || p.i == start {
		return nil, fmt.Errorf("truncated value at byte %d", start)
	}
	return p.b[start:p.i], nil
}
