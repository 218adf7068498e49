package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// table collects rows and writes them aligned, two spaces between columns.
type table struct {
	head []string
	rows [][]string
}

func newTable(head ...string) *table { return &table{head: head} }

func (t *table) add(cells ...any) {
	row := make([]string, len(cells))
	for i, c := range cells {
		switch v := c.(type) {
		case string:
			row[i] = v
		case fmt.Stringer:
			row[i] = v.String()
		default:
			row[i] = fmt.Sprint(v)
		}
		if row[i] == "" {
			row[i] = "-"
		}
	}
	t.rows = append(t.rows, row)
}

func (t *table) write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(t.head, "\t"))
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// formatFloat renders a rate with two decimals.
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// clip shortens s to n runes for table cells, marking the cut, and
// flattens line breaks.
func clip(s string, n int) string {
	s = strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(s)
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// mqEntry is one entry of a map keyed by a message queue, as RocketMQ's
// fastjson writes it: {{"brokerName":..,"queueId":..,"topic":..}:value,...}.
type mqEntry struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	value      json.RawMessage
}

// decodeMQMap reads field of body, a map keyed by message queues, in
// fastjson's form (object keys) or in the array form
// [[{queue},value],...]; it calls decode for each value.
func decodeMQMap(body []byte, field string) ([]mqEntry, error) {
	key := []byte(`"` + field + `":`)
	i := bytes.Index(body, key)
	if i < 0 {
		return nil, fmt.Errorf("no %q in %.200s", field, body)
	}
	s := body[i+len(key):]
	p := &scan{b: s}
	p.ws()
	var out []mqEntry
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
			var e mqEntry
			if err := json.Unmarshal(kb, &e); err != nil {
				return nil, fmt.Errorf("queue key %s: %w", kb, err)
			}
			p.ws()
			if p.peek() != ':' {
				return nil, fmt.Errorf("want ':' after queue key at %d", p.i)
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
				return out, nil
			default:
				return nil, fmt.Errorf("want ',' or '}' at %d", p.i)
			}
		}
	case '[':
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		var pairs [][]json.RawMessage
		if err := json.Unmarshal(v, &pairs); err != nil {
			return nil, err
		}
		for _, pr := range pairs {
			if len(pr) != 2 {
				return nil, fmt.Errorf("an entry of %q has %d elements, want [queue, value]", field, len(pr))
			}
			var e mqEntry
			if err := json.Unmarshal(pr[0], &e); err != nil {
				return nil, err
			}
			e.value = pr[1]
			out = append(out, e)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%q is neither an object nor an array", field)
}

// scan finds the extent of JSON values in text that is not JSON as a
// whole.
type scan struct {
	b []byte
	i int
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
		err = fmt.Errorf("invalid JSON value %.100s", v)
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
				return nil, fmt.Errorf("unterminated string at %d", start)
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
		return nil, fmt.Errorf("truncated value at %d", start)
	}
	return p.b[start:p.i], nil
}
