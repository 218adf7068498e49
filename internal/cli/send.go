package cli

import (
	"bufio"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/message"
)

// cliProducerGroup is the producer group the CLI's sends carry.
const cliProducerGroup = "PETREL_CLI_PRODUCER"

// templateTopic is the broker's auto-create template (TBW102); a send to a
// new topic goes to its brokers and asks for autoCreateQueues queues, as
// the clients' defaultTopicQueueNums.
const (
	templateTopic    = "TBW102"
	autoCreateQueues = 4
)

// SendSpec is what `send` sends.
type SendSpec struct {
	Topic      string
	Tag        string
	Keys       []string
	Properties map[string]string
	// Delay delivers each message this long after it is stored; DeliverAt
	// at that time. At most one of them.
	Delay     time.Duration
	DeliverAt time.Time
	// Body is sent Count times (default 1) when Lines is nil; otherwise
	// every line of Lines is one message, up to Count when Count > 0.
	Body  []byte
	Lines io.Reader
	Count int
}

// SendResult is the answer to one message of `send`.
type SendResult struct {
	// ID is the message's unique id (UNIQ_KEY); OffsetID the broker's id
	// of the stored record; both are accepted by `message get --id`.
	ID          string `json:"msgId"`
	OffsetID    string `json:"offsetMsgId"`
	Topic       string `json:"topic"`
	Broker      string `json:"broker"`
	QueueID     int32  `json:"queueId"`
	QueueOffset int64  `json:"queueOffset"`
	// Status is SEND_OK (stored as the broker's flush policy requires) or
	// FLUSH_DISK_TIMEOUT (stored, but the disk flush did not finish in
	// time under --flush sync), or under sync replication
	// FLUSH_SLAVE_TIMEOUT (stored on the master, its slaves did not
	// confirm it in time) or SLAVE_NOT_AVAILABLE (stored on the master,
	// too few slaves in sync).
	Status string `json:"status"`
	// DeliverAt is when a delayed message becomes visible (RFC 3339); ""
	// for immediate delivery. Queue and offset of a delayed message are
	// those of the broker's timer topic.
	DeliverAt string `json:"deliverAt,omitempty"`
	// RecallHandle recalls a delayed message before it is due (`petrel
	// message cancel --handle`); "" for other messages.
	RecallHandle string `json:"recallHandle,omitempty"`
}

// newUniqID returns a fresh 32-hex-digit unique message id.
func newUniqID() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return strings.ToUpper(hex.EncodeToString(b[:]))
}

// Send sends messages and writes one result line (or JSON object) each.
func (c *CLI) Send(ctx context.Context, spec SendSpec) error {
	if spec.Topic == "" {
		return fmt.Errorf("%w: give the topic with --topic", ErrUsage)
	}
	if spec.Delay != 0 && !spec.DeliverAt.IsZero() {
		return fmt.Errorf("%w: give --delay or --deliver-at, not both", ErrUsage)
	}
	if spec.Delay < 0 {
		return fmt.Errorf("%w: --delay %v is negative", ErrUsage, spec.Delay)
	}
	for k, v := range spec.Properties {
		if !message.ValidProperty(k, v) {
			return fmt.Errorf("%w: property %q=%q: keys must be non-empty and neither may hold the bytes 0x01 or 0x02", ErrUsage, k, v)
		}
	}
	rt, err := c.route(ctx, spec.Topic)
	queues := int32(math.MaxInt32)
	if errors.Is(err, ErrNotFound) {
		// A new topic: send where the auto-create template lives, as the
		// clients do; the broker creates the topic with autoCreateQueues
		// queues (or refuses when auto-creation is off).
		if trt, terr := c.route(ctx, templateTopic); terr == nil {
			rt, err, queues = trt, nil, autoCreateQueues
		}
	}
	if err != nil {
		return err
	}
	type target struct {
		name, addr string
		queue      int32
	}
	var targets []target
	for _, b := range rt {
		if b.q.Perm&permWrite == 0 {
			continue
		}
		for q := range min(b.q.WriteQueueNums, queues) {
			targets = append(targets, target{b.name, b.addr, q})
		}
	}
	if len(targets) == 0 {
		return fmt.Errorf("%w: topic %q has no writable queue; make it writable with `petrel topic update %s --perm rw`", ErrRefused, spec.Topic, spec.Topic)
	}
	next := func() func() ([]byte, bool, error) {
		if spec.Lines == nil {
			n := max(spec.Count, 1)
			return func() ([]byte, bool, error) {
				if n == 0 {
					return nil, false, nil
				}
				n--
				return spec.Body, true, nil
			}
		}
		sc := bufio.NewScanner(spec.Lines)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		sent := 0
		return func() ([]byte, bool, error) {
			if spec.Count > 0 && sent >= spec.Count {
				return nil, false, nil
			}
			if !sc.Scan() {
				return nil, false, sc.Err()
			}
			sent++
			return sc.Bytes(), true, nil
		}
	}()
	// Results stream as they come (stdin may be endless): one line or one
	// JSON object per message, no aligned table.
	// Start at a random queue, as clients do, so that one-message runs
	// spread over the queues.
	for i := rand.IntN(len(targets)); ; i++ {
		body, ok, err := next()
		if err != nil {
			return fmt.Errorf("%w: read the message bodies: %w", ErrUsage, err)
		}
		if !ok {
			return nil
		}
		tg := targets[i%len(targets)]
		res, err := c.sendOne(ctx, spec, tg.name, tg.addr, tg.queue, body)
		if err != nil {
			return err
		}
		if c.json() {
			if err := c.writeJSONLine(res); err != nil {
				return err
			}
			continue
		}
		line := fmt.Sprintf("sent %s to %s broker %s queue %d offset %d %s (offset id %s)", res.ID, res.Topic, res.Broker, res.QueueID, res.QueueOffset, res.Status, res.OffsetID)
		if res.DeliverAt != "" {
			line += ", delivered at " + res.DeliverAt
		}
		if _, err := fmt.Fprintln(c.cfg.Out, line); err != nil {
			return err
		}
	}
}

func (c *CLI) sendOne(ctx context.Context, spec SendSpec, broker, addr string, queue int32, body []byte) (SendResult, error) {
	props := maps.Clone(spec.Properties)
	if props == nil {
		props = map[string]string{}
	}
	id := newUniqID()
	props[message.PropertyUniqKey] = id
	props[message.PropertyWait] = "true"
	if spec.Tag != "" {
		props[message.PropertyTags] = spec.Tag
	}
	if len(spec.Keys) > 0 {
		props[message.PropertyKeys] = joinKeys(spec.Keys)
	}
	now := c.cfg.Now()
	var deliverAt time.Time
	switch {
	case spec.Delay > 0:
		props["TIMER_DELAY_MS"] = strconv.FormatInt(spec.Delay.Milliseconds(), 10)
		deliverAt = now.Add(spec.Delay)
	case !spec.DeliverAt.IsZero():
		props[message.PropertyTimerDeliverMS] = strconv.FormatInt(spec.DeliverAt.UnixMilli(), 10)
		deliverAt = spec.DeliverAt
	}
	req := rmq.EncodeSendHeader(rmq.SendHeader{
		ProducerGroup: cliProducerGroup, Topic: spec.Topic, DefaultTopic: templateTopic, DefaultTopicQueueNums: autoCreateQueues,
		QueueID: queue, BornTimestamp: now.UnixMilli(), Properties: message.EncodeProperties(props),
		MaxReconsumeTimes: 16, BrokerName: broker,
	})
	req.Body = body
	resp, err := c.call(ctx, addr, req)
	if err != nil {
		return SendResult{}, err
	}
	res := SendResult{ID: id, Topic: spec.Topic, Broker: broker, Status: "SEND_OK"}
	switch resp.Code {
	case rmq.RespSuccess:
	case rmq.RespFlushDiskTimeout:
		res.Status = "FLUSH_DISK_TIMEOUT"
	case rmq.RespFlushSlaveTimeout:
		res.Status = "FLUSH_SLAVE_TIMEOUT"
	case rmq.RespSlaveNotAvailable:
		res.Status = "SLAVE_NOT_AVAILABLE"
	case rmq.RespTopicNotExist:
		return SendResult{}, fmt.Errorf("%w: topic %q does not exist on broker %s and it does not create topics on first send (--auto-create-topics=false); create it with `petrel topic create %s`", ErrNotFound, spec.Topic, broker, spec.Topic)
	default:
		return SendResult{}, c.refused(addr, "send to "+spec.Topic, resp)
	}
	r, err := rmq.DecodeSendResponse(resp)
	if err != nil {
		return SendResult{}, fmt.Errorf("%w: send answer from %s: %w", ErrRefused, addr, err)
	}
	res.OffsetID, res.QueueID, res.QueueOffset, res.RecallHandle = r.MsgID, r.QueueID, r.QueueOffset, r.RecallHandle
	if !deliverAt.IsZero() && deliverAt.After(now) {
		res.DeliverAt = deliverAt.UTC().Format(time.RFC3339Nano)
	}
	return res, nil
}
