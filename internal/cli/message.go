package cli

import (
	"bytes"
	"compress/zlib"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/message"
)

// Message is a stored message as the CLI shows it (JSON output, and the
// fields of consume's --format template).
type Message struct {
	// ID is the message's unique id (UNIQ_KEY, the msgId clients see), or
	// the offset id when it has none.
	ID string `json:"id"`
	// OffsetID is the broker's id of the stored record (store host and
	// commit-log offset), accepted by `message get --id`.
	OffsetID    string `json:"offsetMsgId"`
	Topic       string `json:"topic"`
	Broker      string `json:"broker,omitempty"`
	QueueID     int32  `json:"queueId"`
	QueueOffset int64  `json:"queueOffset"`
	Tags        string `json:"tags"`
	Keys        string `json:"keys"`
	// Body is the message body as text (invalid UTF-8 is replaced).
	Body           string            `json:"body"`
	Properties     map[string]string `json:"properties"`
	BornTimestamp  int64             `json:"bornTimestamp"`
	StoreTimestamp int64             `json:"storeTimestamp"`
	BornHost       string            `json:"bornHost"`
	StoreHost      string            `json:"storeHost"`
	ReconsumeTimes int32             `json:"reconsumeTimes"`
}

// BornTime and StoreTime are the timestamps as times (for templates).
func (m Message) BornTime() time.Time  { return time.UnixMilli(m.BornTimestamp).UTC() }
func (m Message) StoreTime() time.Time { return time.UnixMilli(m.StoreTimestamp).UTC() }

// Property returns one property (for templates: {{.Property "KEY"}}).
func (m Message) Property(key string) string { return m.Properties[key] }

// sysFlagCompressed marks a zlib-compressed body.
const sysFlagCompressed = 1

// decodeRecords decodes records laid back to back.
func decodeRecords(b []byte, broker string) ([]Message, error) {
	var out []Message
	for len(b) > 0 {
		m, n, err := message.Decode(b)
		if err != nil {
			return out, fmt.Errorf("%w: a stored record does not decode: %w", ErrRefused, err)
		}
		b = b[n:]
		out = append(out, view(m, broker))
	}
	return out, nil
}

func view(m *message.Message, broker string) Message {
	body := m.Body
	if m.SysFlag&sysFlagCompressed != 0 {
		if r, err := zlib.NewReader(bytes.NewReader(body)); err == nil {
			if b, err := io.ReadAll(io.LimitReader(r, 64<<20)); err == nil {
				body = b
			}
		}
	}
	props := message.ParseProperties(m.Properties)
	v := Message{
		OffsetID: message.OffsetID(m.StoreHost, m.PhysicalOffset), Topic: m.Topic, Broker: broker,
		QueueID: m.QueueID, QueueOffset: m.QueueOffset, Tags: props[message.PropertyTags], Keys: props[message.PropertyKeys],
		Body: string(body), Properties: props, BornTimestamp: m.BornTimestamp, StoreTimestamp: m.StoreTimestamp,
		BornHost: m.BornHost.String(), StoreHost: m.StoreHost.String(), ReconsumeTimes: m.ReconsumeTimes,
	}
	v.ID = props[message.PropertyUniqKey]
	if v.ID == "" {
		v.ID = v.OffsetID
	}
	return v
}

// MessageGet writes one message, found by its offset id or, with topic,
// by its unique id.
func (c *CLI) MessageGet(ctx context.Context, id, topic string) error {
	if id == "" {
		return fmt.Errorf("%w: give the message id with --id", ErrUsage)
	}
	var found []Message
	if host, off, err := message.ParseOffsetID(id); err == nil {
		resp, err := c.call(ctx, host.String(), rmq.EncodeViewMessageRequest(rmq.ViewMessageRequest{Offset: off}))
		if err != nil {
			return err
		}
		if resp.Code == rmq.RespSuccess {
			if found, err = decodeRecords(resp.Body, ""); err != nil {
				return err
			}
		}
	}
	if len(found) == 0 && topic != "" {
		ms, err := c.queryKey(ctx, topic, id, 0, 32)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if m.ID == id || m.OffsetID == id {
				found = append(found, m)
			}
		}
	}
	if len(found) == 0 {
		hint := "check the id"
		if topic == "" {
			hint = "a unique message id (the msgId of a send) also needs --topic"
		}
		return fmt.Errorf("%w: no message with id %s; %s", ErrNotFound, id, hint)
	}
	m := found[0]
	if c.json() {
		return c.writeJSON(m)
	}
	return c.writeMessageDetail(m)
}

func (c *CLI) writeMessageDetail(m Message) error {
	w := c.cfg.Out
	fmt.Fprintf(w, "ID:           %s\nOffset ID:    %s\nTopic:        %s\nQueue:        %d\nQueue offset: %d\nTags:         %s\nKeys:         %s\n",
		m.ID, m.OffsetID, m.Topic, m.QueueID, m.QueueOffset, dash(m.Tags), dash(m.Keys))
	fmt.Fprintf(w, "Born:         %s from %s\nStored:       %s on %s\nReconsumed:   %d\nProperties:\n",
		formatTime(m.BornTimestamp), m.BornHost, formatTime(m.StoreTimestamp), m.StoreHost, m.ReconsumeTimes)
	for _, k := range slices.Sorted(maps.Keys(m.Properties)) {
		fmt.Fprintf(w, "  %s=%s\n", k, m.Properties[k])
	}
	_, err := fmt.Fprintf(w, "Body (%d bytes):\n%s\n", len(m.Body), m.Body)
	return err
}

// queryKey asks every broker of topic for messages with the key stored
// since sinceMS, newest first.
func (c *CLI) queryKey(ctx context.Context, topic, key string, sinceMS int64, limit int) ([]Message, error) {
	rt, err := c.route(ctx, topic)
	if err != nil {
		return nil, err
	}
	var out []Message
	for _, b := range rt {
		resp, err := c.call(ctx, b.addr, rmq.EncodeQueryMessageRequest(rmq.QueryMessageRequest{
			Topic: topic, Key: key, MaxNum: int32(min(limit, math.MaxInt32)), BeginTimestamp: sinceMS, EndTimestamp: math.MaxInt64,
		}))
		if err != nil {
			return nil, err
		}
		switch resp.Code {
		case rmq.RespSuccess:
			ms, err := decodeRecords(resp.Body, b.name)
			if err != nil {
				return nil, err
			}
			out = append(out, ms...)
		case rmq.RespQueryNotFound:
		default:
			return nil, c.refused(b.addr, "query topic "+topic+" by key", resp)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].StoreTimestamp > out[j].StoreTimestamp })
	return out, nil
}

// MessageQuery writes the messages of topic whose key (KEYS or unique id)
// is key, stored since since (zero: any time), newest first.
func (c *CLI) MessageQuery(ctx context.Context, topic, key string, since time.Time, limit int) error {
	if topic == "" || key == "" {
		return fmt.Errorf("%w: give --topic and --key", ErrUsage)
	}
	if limit <= 0 {
		limit = 64
	}
	var sinceMS int64
	if !since.IsZero() {
		sinceMS = since.UnixMilli()
	}
	ms, err := c.queryKey(ctx, topic, key, sinceMS, limit)
	if err != nil {
		return err
	}
	if len(ms) > limit {
		ms = ms[:limit]
	}
	if c.json() {
		if ms == nil {
			ms = []Message{}
		}
		return c.writeJSON(struct {
			Messages []Message `json:"messages"`
		}{ms})
	}
	if len(ms) == 0 {
		_, err := fmt.Fprintf(c.cfg.Out, "no message of topic %s has key %s\n", topic, key)
		return err
	}
	return writeMessageTable(c.cfg.Out, ms)
}

func writeMessageTable(w io.Writer, ms []Message) error {
	t := newTable("ID", "BROKER", "QUEUE", "OFFSET", "TAGS", "KEYS", "STORED", "BODY")
	for _, m := range ms {
		t.add(m.ID, m.Broker, m.QueueID, m.QueueOffset, m.Tags, m.Keys, formatTime(m.StoreTimestamp), clip(m.Body, 40))
	}
	return t.write(w)
}

// joinKeys renders keys for the KEYS property (space-separated).
func joinKeys(keys []string) string { return strings.Join(keys, " ") }
