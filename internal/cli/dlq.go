package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/schollz/progressbar/v3"

	"github.com/petrelmq/petrel/internal/message"
)

// dlqTopic is the dead-letter topic of a consumer group.
func dlqTopic(group string) string { return "%DLQ%" + group }

// DLQMessage is one dead-letter message of `dlq list`.
type DLQMessage struct {
	Message
	// OriginalTopic is the topic the message failed in (where resend puts
	// it back).
	OriginalTopic string `json:"originalTopic"`
}

// readTopic reads every message of a topic from each queue's min to max
// offset, at most limit, without committing. An unknown topic gives nil.
func (c *CLI) readTopic(ctx context.Context, topic string, limit int) ([]Message, error) {
	rt, err := c.route(ctx, topic)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Message
	for _, b := range rt {
		for q := range b.q.ReadQueueNums {
			ref := queueRef{b.name, b.addr, q}
			off, err := c.offsetCall(ctx, ref, rmq.EncodeGetMinOffsetRequest(ref.offsetRequest(topic)))
			if err != nil {
				return nil, err
			}
			end, err := c.offsetCall(ctx, ref, rmq.EncodeGetMaxOffsetRequest(ref.offsetRequest(topic)))
			if err != nil {
				return nil, err
			}
			for off < end && len(out) < limit {
				resp, err := c.call(ctx, b.addr, rmq.EncodePullRequest(rmq.PullRequest{
					ConsumerGroup: cliReaderGroup, Topic: topic, QueueID: q, QueueOffset: off, MaxMsgNums: pullBatch,
					SysFlag: rmq.PullFlagSubscription, Subscription: "*", ExpressionType: "TAG",
				}))
				if err != nil {
					return nil, err
				}
				var next int64
				switch resp.Code {
				case rmq.RespSuccess, rmq.RespPullNotFound, rmq.RespPullRetryImmediately, rmq.RespPullOffsetMoved:
					if next, err = pullAnswer(b.addr, resp); err != nil {
						return nil, err
					}
				}
				switch resp.Code {
				case rmq.RespSuccess:
					ms, err := decodeRecords(resp.Body, b.name)
					if err != nil {
						return nil, err
					}
					out = append(out, ms...)
				case rmq.RespPullNotFound:
					next = end
				case rmq.RespPullRetryImmediately, rmq.RespPullOffsetMoved:
				default:
					return nil, c.refused(b.addr, "read "+topic, resp)
				}
				if next <= off {
					break
				}
				off = next
			}
		}
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func dlqView(ms []Message) []DLQMessage {
	out := make([]DLQMessage, 0, len(ms))
	for _, m := range ms {
		out = append(out, DLQMessage{Message: m, OriginalTopic: m.Properties[message.PropertyRetryTopic]})
	}
	return out
}

// DLQList writes the dead-letter messages of a group (at most limit).
func (c *CLI) DLQList(ctx context.Context, group string, limit int) error {
	if group == "" {
		return fmt.Errorf("%w: give the consumer group with --group", ErrUsage)
	}
	if limit <= 0 {
		limit = 1000
	}
	ms, err := c.readTopic(ctx, dlqTopic(group), limit)
	if err != nil {
		return err
	}
	dl := dlqView(ms)
	if c.json() {
		return c.writeJSON(struct {
			Group    string       `json:"group"`
			Messages []DLQMessage `json:"messages"`
		}{group, dl})
	}
	if len(dl) == 0 {
		_, err := fmt.Fprintf(c.cfg.Out, "group %s has no dead-letter messages\n", group)
		return err
	}
	t := newTable("OFFSET ID", "ID", "ORIGINAL TOPIC", "RECONSUMED", "STORED", "BODY")
	for _, m := range dl {
		t.add(m.OffsetID, m.ID, m.OriginalTopic, m.ReconsumeTimes, formatTime(m.StoreTimestamp), clip(m.Body, 40))
	}
	return t.write(c.cfg.Out)
}

// Resent is one message `dlq resend` stored again.
type Resent struct {
	// DLQOffsetID is the dead-letter copy's offset id; ID the message's
	// unique id.
	DLQOffsetID string `json:"dlqOffsetMsgId"`
	ID          string `json:"msgId"`
	Topic       string `json:"topic"`
	QueueID     int32  `json:"queueId"`
	QueueOffset int64  `json:"queueOffset"`
	// OffsetID is the new copy's offset id.
	OffsetID string `json:"offsetMsgId"`
}

// ResendFailure is a message `dlq resend` could not store again.
type ResendFailure struct {
	DLQOffsetID string `json:"dlqOffsetMsgId"`
	Error       string `json:"error"`
}

// DLQResend stores dead-letter messages of group again in their original
// topics: the one with id (offset id or unique id), or all of them. A
// progress bar is drawn on Config.Progress when it is a terminal.
func (c *CLI) DLQResend(ctx context.Context, group, id string, all bool) error {
	if group == "" {
		return fmt.Errorf("%w: give the consumer group with --group", ErrUsage)
	}
	if (id == "") == !all {
		return fmt.Errorf("%w: give --id ID or --all", ErrUsage)
	}
	ms, err := c.readTopic(ctx, dlqTopic(group), 1<<20)
	if err != nil {
		return err
	}
	var pending []Message
	for _, m := range ms {
		if all || m.ID == id || m.OffsetID == id {
			pending = append(pending, m)
		}
	}
	if len(pending) == 0 {
		if all {
			return fmt.Errorf("%w: group %s has no dead-letter messages", ErrNotFound, group)
		}
		return fmt.Errorf("%w: no dead-letter message of group %s has id %s; list them with `petrel dlq list --group %s`", ErrNotFound, group, id, group)
	}
	bar := c.progressBar(len(pending), "resending")
	result := struct {
		Group  string          `json:"group"`
		Resent []Resent        `json:"resent"`
		Failed []ResendFailure `json:"failed"`
	}{Group: group, Resent: []Resent{}, Failed: []ResendFailure{}}
	for _, m := range pending {
		r, err := c.resendOne(ctx, group, m)
		if err != nil {
			if errors.Is(err, ErrUnreachable) {
				return err
			}
			result.Failed = append(result.Failed, ResendFailure{DLQOffsetID: m.OffsetID, Error: err.Error()})
		} else {
			result.Resent = append(result.Resent, r)
		}
		if bar != nil {
			_ = bar.Add(1)
		}
	}
	if bar != nil {
		_ = bar.Finish()
		fmt.Fprintln(c.cfg.Progress)
	}
	if c.json() {
		if err := c.writeJSON(result); err != nil {
			return err
		}
	} else {
		for _, r := range result.Resent {
			fmt.Fprintf(c.cfg.Out, "resent %s to %s queue %d offset %d (offset id %s)\n", r.ID, r.Topic, r.QueueID, r.QueueOffset, r.OffsetID)
		}
		for _, f := range result.Failed {
			fmt.Fprintf(c.cfg.Out, "failed %s: %s\n", f.DLQOffsetID, f.Error)
		}
		fmt.Fprintf(c.cfg.Out, "resent %d of %d dead-letter messages of group %s\n", len(result.Resent), len(pending), group)
	}
	if len(result.Failed) > 0 {
		return fmt.Errorf("%w: %d of %d messages were not resent (see above)", ErrRefused, len(result.Failed), len(pending))
	}
	return nil
}

func (c *CLI) resendOne(ctx context.Context, group string, m Message) (Resent, error) {
	host, _, err := message.ParseOffsetID(m.OffsetID)
	if err != nil {
		return Resent{}, fmt.Errorf("%w: offset id %s: %w", ErrRefused, m.OffsetID, err)
	}
	resp, err := c.callOK(ctx, host.String(), "resend "+m.OffsetID, rmq.EncodeResendDLQRequest(rmq.ResendDLQRequest{Group: group, MsgID: m.OffsetID}))
	if err != nil {
		return Resent{}, err
	}
	r, err := rmq.DecodeSendResponse(resp)
	if err != nil {
		return Resent{}, fmt.Errorf("%w: resend answer from %s: %w", ErrRefused, host, err)
	}
	return Resent{DLQOffsetID: m.OffsetID, ID: m.ID, Topic: m.Properties[message.PropertyRetryTopic], QueueID: r.QueueID, QueueOffset: r.QueueOffset, OffsetID: r.MsgID}, nil
}

// progressBar returns a bar on Config.Progress when that is a terminal.
func (c *CLI) progressBar(n int, what string) *progressbar.ProgressBar {
	if !isTerminal(c.cfg.Progress) {
		return nil
	}
	return progressbar.NewOptions(n, progressbar.OptionSetWriter(c.cfg.Progress), progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(), progressbar.OptionClearOnFinish())
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || f == nil {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
