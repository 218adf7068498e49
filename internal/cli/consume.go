package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/remoting"
)

// cliReaderGroup is the group name of reads that commit nothing.
const cliReaderGroup = "PETREL_CLI_READER"

// DefaultFormat is consume's default line template.
const DefaultFormat = "{{.ID}} {{.Body}}"

// pullSuspendTime is how long a tailing pull waits at the broker for news.
const pullSuspendTime = 15 * time.Second

// pullBatch is how many messages one pull asks for.
const pullBatch = 32

// ConsumeSpec is what `consume` reads.
type ConsumeSpec struct {
	Topic string
	// Group commits what was printed as the group's offsets and, without
	// From, starts at the group's committed offsets. Empty: read without
	// committing.
	Group string
	// Tag is a tag expression: "*" (default) or "TagA || TagB".
	Tag string
	// From is "earliest", "latest" or a time (see ParseTime); empty means
	// the group's offsets with Group (latest on a queue where it has
	// none), else earliest.
	From string
	// Count stops after this many messages (0: no limit).
	Count int
	// Format is a text/template over Message for table output; default
	// DefaultFormat.
	Format string
	// Exit stops at the end of every queue instead of waiting for new
	// messages.
	Exit bool
	// Until is a time (see ParseTime): a queue stops at its first message
	// stored after it. An Until already past also stops every queue at its
	// end (nothing older can come); one in the future ends the command at
	// that time at the latest.
	Until string
	// SQL is a SQL92 filter over the messages' properties, evaluated by
	// the broker (instead of Tag).
	SQL string
}

type queueRef struct {
	broker, addr string
	queue        int32
}

type pulledBatch struct {
	q    queueRef
	msgs []Message
	next int64
	err  error
	done bool // the queue reached its end (Exit)
}

// Consume prints the messages of a topic as they arrive (or up to the end,
// with Exit) until Count messages or ctx ends; ctx ending is not an error.
func (c *CLI) Consume(ctx context.Context, spec ConsumeSpec) error {
	if spec.Topic == "" {
		return fmt.Errorf("%w: give the topic with --topic", ErrUsage)
	}
	if spec.Count < 0 {
		return fmt.Errorf("%w: --count must not be negative", ErrUsage)
	}
	if spec.Tag == "" {
		spec.Tag = "*"
	}
	if spec.SQL != "" && spec.Tag != "*" {
		return fmt.Errorf("%w: give --tag or --sql, not both", ErrUsage)
	}
	if spec.Format == "" {
		spec.Format = DefaultFormat
	}
	tmpl, err := template.New("format").Parse(spec.Format)
	if err != nil {
		return fmt.Errorf("%w: --format: %w", ErrUsage, err)
	}
	var fromTime time.Time
	switch spec.From {
	case "", "earliest", "latest":
	default:
		if fromTime, err = ParseTime(spec.From, c.cfg.Now()); err != nil {
			return err
		}
	}
	var until time.Time
	if spec.Until != "" {
		if until, err = ParseTime(spec.Until, c.cfg.Now()); err != nil {
			return err
		}
		if !fromTime.IsZero() && !until.After(fromTime) {
			return fmt.Errorf("%w: --until %s is not after --from %s", ErrUsage, spec.Until, spec.From)
		}
		if until.After(c.cfg.Now()) {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, until)
			defer cancel()
		} else {
			spec.Exit = true // nothing stored before until can come any more
		}
	}
	rt, err := c.route(ctx, spec.Topic)
	if err != nil {
		return err
	}
	var queues []queueRef
	for _, b := range rt {
		if b.q.Perm&permRead == 0 {
			continue
		}
		for q := range b.q.ReadQueueNums {
			queues = append(queues, queueRef{b.name, b.addr, q})
		}
	}
	if len(queues) == 0 {
		return fmt.Errorf("%w: topic %q has no readable queue; make it readable with `petrel topic update %s --perm rw`", ErrRefused, spec.Topic, spec.Topic)
	}
	starts := make([]int64, len(queues))
	ends := make([]int64, len(queues))
	for i, q := range queues {
		if starts[i], err = c.startOffset(ctx, spec, fromTime, q); err != nil {
			return err
		}
		if spec.Exit {
			if ends[i], err = c.offsetCall(ctx, q, rmq.EncodeGetMaxOffsetRequest(q.offsetRequest(spec.Topic))); err != nil {
				return err
			}
		}
	}
	tags := tagSet(spec.Tag)
	if spec.SQL != "" {
		tags = nil // the broker filters
	}
	stopped := map[queueRef]bool{} // queues past Until
	ctx, cancel := context.WithCancel(ctx)
	batches := make(chan pulledBatch, len(queues))
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait() // no pull outlives the call
	}()
	for i, q := range queues {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.pullLoop(ctx, spec, q, starts[i], ends[i], batches)
		}()
	}
	go func() { wg.Wait(); close(batches) }()

	printed, active := 0, len(queues)
	for active > 0 {
		var b pulledBatch
		var ok bool
		select {
		case b, ok = <-batches:
		case <-ctx.Done():
			return nil
		}
		if !ok {
			return nil
		}
		if b.err != nil {
			if errors.Is(b.err, context.Canceled) {
				return nil
			}
			return b.err
		}
		if stopped[b.q] {
			continue
		}
		if b.done {
			active--
			continue
		}
		commit := b.next
		for _, m := range b.msgs {
			if spec.Count > 0 && printed >= spec.Count {
				commit = m.QueueOffset
				break
			}
			if !until.IsZero() && m.StoreTime().After(until) {
				commit = m.QueueOffset
				stopped[b.q] = true
				active--
				break
			}
			if tags != nil && !tags[m.Tags] {
				continue
			}
			if err := c.printMessage(tmpl, m); err != nil {
				return err
			}
			printed++
		}
		if spec.Group != "" {
			if err := c.commit(ctx, spec, b.q, commit); err != nil {
				return err
			}
		}
		if spec.Count > 0 && printed >= spec.Count {
			return nil
		}
	}
	return nil
}

// tagSet parses a tag expression; nil means every tag.
func tagSet(expr string) map[string]bool {
	expr = strings.TrimSpace(expr)
	if expr == "" || expr == "*" {
		return nil
	}
	set := map[string]bool{}
	for _, t := range strings.Split(expr, "||") {
		if t = strings.TrimSpace(t); t != "" {
			set[t] = true
		}
	}
	return set
}

func (c *CLI) printMessage(tmpl *template.Template, m Message) error {
	if c.json() {
		return c.writeJSONLine(m)
	}
	var sb strings.Builder
	if err := tmpl.Execute(&sb, m); err != nil {
		return fmt.Errorf("%w: --format: %w", ErrUsage, err)
	}
	sb.WriteByte('\n')
	_, err := fmt.Fprint(c.cfg.Out, sb.String())
	return err
}

// offsetRequest is the GET_MIN_OFFSET / GET_MAX_OFFSET header of q.
func (q queueRef) offsetRequest(topic string) rmq.QueueOffsetRequest {
	return rmq.QueueOffsetRequest{Topic: topic, QueueID: q.queue}
}

// offsetCall sends an offset request (14, 29, 30, 31) and returns the
// offset of its successful answer.
func (c *CLI) offsetCall(ctx context.Context, q queueRef, req *remoting.Command) (int64, error) {
	resp, err := c.callOK(ctx, q.addr, "queue offset", req)
	if err != nil {
		return 0, err
	}
	return offsetOf(q.addr, resp)
}

// offsetOf reads the offset of an answer.
func offsetOf(addr string, resp *remoting.Command) (int64, error) {
	r, err := rmq.DecodeOffsetResponse(resp)
	if err != nil {
		return 0, fmt.Errorf("%w: offset answer from %s: %w", ErrRefused, addr, err)
	}
	return r.Offset, nil
}

func (c *CLI) startOffset(ctx context.Context, spec ConsumeSpec, from time.Time, q queueRef) (int64, error) {
	switch {
	case spec.From == "earliest" || spec.From == "" && spec.Group == "":
		return c.offsetCall(ctx, q, rmq.EncodeGetMinOffsetRequest(q.offsetRequest(spec.Topic)))
	case spec.From == "latest":
		return c.offsetCall(ctx, q, rmq.EncodeGetMaxOffsetRequest(q.offsetRequest(spec.Topic)))
	case spec.From != "":
		return c.offsetCall(ctx, q, rmq.EncodeSearchOffsetRequest(rmq.SearchOffsetRequest{Topic: spec.Topic, QueueID: q.queue, Timestamp: from.UnixMilli()}))
	}
	resp, err := c.call(ctx, q.addr, rmq.EncodeQueryConsumerOffsetRequest(rmq.QueryConsumerOffsetRequest{ConsumerGroup: spec.Group, Topic: spec.Topic, QueueID: q.queue}))
	if err != nil {
		return 0, err
	}
	switch resp.Code {
	case rmq.RespSuccess:
		return offsetOf(q.addr, resp)
	case rmq.RespQueryNotFound:
		return c.offsetCall(ctx, q, rmq.EncodeGetMaxOffsetRequest(q.offsetRequest(spec.Topic)))
	}
	return 0, c.refused(q.addr, "offset of group "+spec.Group, resp)
}

func (c *CLI) commit(ctx context.Context, spec ConsumeSpec, q queueRef, off int64) error {
	_, err := c.callOK(ctx, q.addr, "commit the offset of group "+spec.Group, rmq.EncodeUpdateConsumerOffsetRequest(rmq.UpdateConsumerOffsetRequest{
		ConsumerGroup: spec.Group, Topic: spec.Topic, QueueID: q.queue, CommitOffset: off,
	}))
	return err
}

// pullAnswer is the next offset of a pull answer with one of the pull
// codes (FOUND, NOT_FOUND, RETRY_IMMEDIATELY, OFFSET_MOVED).
func pullAnswer(addr string, resp *remoting.Command) (int64, error) {
	r, err := rmq.DecodePullResponse(resp)
	if err != nil {
		return 0, fmt.Errorf("%w: pull answer from %s: %w", ErrRefused, addr, err)
	}
	return r.NextBeginOffset, nil
}

// pullLoop pulls one queue from off and hands the batches on.
func (c *CLI) pullLoop(ctx context.Context, spec ConsumeSpec, q queueRef, off, end int64, out chan<- pulledBatch) {
	send := func(b pulledBatch) bool {
		b.q = q
		select {
		case out <- b:
			return true
		case <-ctx.Done():
			return false
		}
	}
	group := spec.Group
	if group == "" {
		group = cliReaderGroup
	}
	sub, typ := spec.Tag, "TAG"
	if spec.SQL != "" {
		sub, typ = spec.SQL, "SQL92"
	}
	for {
		if spec.Exit && off >= end {
			send(pulledBatch{done: true})
			return
		}
		flag, suspend := rmq.PullFlagSubscription, time.Duration(0)
		if !spec.Exit {
			flag |= rmq.PullFlagSuspend
			suspend = pullSuspendTime
		}
		req := rmq.EncodePullRequest(rmq.PullRequest{
			ConsumerGroup: group, Topic: spec.Topic, QueueID: q.queue, QueueOffset: off, MaxMsgNums: pullBatch, SysFlag: flag,
			SuspendTimeoutMillis: suspend.Milliseconds(), Subscription: sub, ExpressionType: typ,
		})
		pctx, cancel := context.WithTimeout(ctx, suspend+c.cfg.Timeout)
		resp, err := c.rc.Invoke(pctx, q.addr, req)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			send(pulledBatch{err: fmt.Errorf("%w: pull %s queue %d from %s: %w", ErrUnreachable, spec.Topic, q.queue, q.addr, err)})
			return
		}
		var next int64
		switch resp.Code {
		case rmq.RespSuccess, rmq.RespPullNotFound, rmq.RespPullRetryImmediately, rmq.RespPullOffsetMoved:
			if next, err = pullAnswer(q.addr, resp); err != nil {
				send(pulledBatch{err: err})
				return
			}
		}
		switch resp.Code {
		case rmq.RespSuccess:
			msgs, err := decodeRecords(resp.Body, q.broker)
			if err != nil {
				send(pulledBatch{err: err})
				return
			}
			if !send(pulledBatch{msgs: msgs, next: next}) {
				return
			}
			off = next
		case rmq.RespPullNotFound:
			if spec.Exit {
				send(pulledBatch{done: true})
				return
			}
			off = max(off, next)
		case rmq.RespPullRetryImmediately:
			// Nothing matched the tags up to next.
			if next > off && !send(pulledBatch{next: next}) {
				return
			}
			off = max(off, next)
		case rmq.RespPullOffsetMoved:
			// The offset is outside the queue (retention removed it, or
			// it is beyond the end): go where the broker says.
			off = next
		default:
			send(pulledBatch{err: c.refused(q.addr, fmt.Sprintf("pull %s queue %d", spec.Topic, q.queue), resp)})
			return
		}
	}
}
