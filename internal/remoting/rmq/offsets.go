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
		if i > 0 {
			dst = append(dst, ',')
		}
		v, err := json.Marshal(m[q])
		if err != nil {
			return dst, fmt.Errorf("rmq: value of queue %d of %s: %w", q.QueueID, q.Topic, err)
		}
		dst = appendMQKey(dst, q)
		dst = append(dst, ':')
		dst = append(dst, v...)
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
	p := &mqScan{b: body[i+len(key):]}
	p.ws()
	out := map[MessageQueue]V{}
	add := func(kb, vb []byte) error {
		var q MessageQueue
		if err := json.Unmarshal(kb, &q); err != nil {
			return fmt.Errorf("rmq: queue key %.100s of %q: %w", kb, field, err)
		}
		var v V
		if err := json.Unmarshal(vb, &v); err != nil {
			return fmt.Errorf("rmq: value %.100s of queue %d of %s in %q: %w", vb, q.QueueID, q.Topic, field, err)
		}
		out[q] = v
		return nil
	}
	switch p.peek() {
	case '{':
		p.i++
		for {
			p.ws()
			if p.peek() == '}' {
				return out, nil
			}
			kb, err := p.value()
			if err != nil {
				return nil, err
			}
			p.ws()
			if p.peek() != ':' {
				return nil, fmt.Errorf("rmq: want ':' after a queue key of %q at byte %d", field, p.i)
			}
			p.i++
			p.ws()
			vb, err := p.value()
			if err != nil {
				return nil, err
			}
			if err := add(kb, vb); err != nil {
				return nil, err
			}
			p.ws()
			switch p.peek() {
			case ',':
				p.i++
			case '}':
				return out, nil
			default:
				return nil, fmt.Errorf("rmq: want ',' or '}' in %q at byte %d", field, p.i)
			}
		}
	case '[':
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		var pairs [][]json.RawMessage
		if err := json.Unmarshal(v, &pairs); err != nil {
			return nil, fmt.Errorf("rmq: %q: %w", field, err)
		}
		for _, pr := range pairs {
			if len(pr) != 2 {
				return nil, fmt.Errorf("rmq: an entry of %q has %d elements, want [queue, value]", field, len(pr))
			}
			if err := add(pr[0], pr[1]); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("rmq: %q is neither an object nor an array", field)
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

// mqScan finds the extent of JSON values in text that is not JSON as a
// whole.
type mqScan struct {
	b []byte
	i int
}

func (p *mqScan) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *mqScan) ws() {
	for p.i < len(p.b) && strings.IndexByte(" \t\r\n", p.b[p.i]) >= 0 {
		p.i++
	}
}

// value returns the JSON value at i: a string, an object or array
// (balanced, strings skipped), or a literal up to the next , : } ].
func (p *mqScan) value() ([]byte, error) {
	v, err := p.extent()
	if err == nil && !json.Valid(v) {
		err = fmt.Errorf("rmq: invalid JSON value %.100q", v)
	}
	return v, err
}

func (p *mqScan) extent() ([]byte, error) {
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
				return nil, fmt.Errorf("rmq: unterminated string at byte %d", start)
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
		return nil, fmt.Errorf("rmq: truncated value at byte %d", start)
	}
	return p.b[start:p.i], nil
}
