package broker

// Send: SEND_MESSAGE (10), its V2 header form (310) and SEND_BATCH_MESSAGE
// (320). The front decodes either header into a SendRequest; the broker
// sees no difference between V1 and V2. Behaviour follows Java's
// SendMessageProcessor: validate, find or auto-create the topic, check the
// write permission and the queue id, store, answer with the offset id.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/petrelmq/petrel/internal/broker/txn"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/meta"
)

// SendStatus is the durability a successful send achieved.
type SendStatus int

// Send statuses (RocketMQ's SendStatus; the front answers SendOK with code
// 0 and SendFlushDiskTimeout with code 10 FLUSH_DISK_TIMEOUT).
const (
	// SendOK: stored and durable under the store's flush mode.
	SendOK SendStatus = iota
	// SendFlushDiskTimeout: stored, but not known durable within the
	// store's SyncFlushTimeout; it may still become durable.
	SendFlushDiskTimeout
	// SendFlushSlaveTimeout: stored on the master (sync replication), but
	// the commit point did not cover it within ReplicationTimeout (code 12
	// FLUSH_SLAVE_TIMEOUT); it may still be replicated.
	SendFlushSlaveTimeout
	// SendSlaveNotAvailable: stored on the master, but fewer slaves are in
	// sync than sync replication requires (code 11 SLAVE_NOT_AVAILABLE).
	SendSlaveNotAvailable
)

func (s SendStatus) String() string {
	switch s {
	case SendFlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	case SendFlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case SendSlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	}
	return "SEND_OK"
}

// DefaultRegionID is the region a send result names (MSG_REGION).
const DefaultRegionID = "DefaultRegion"

// defaultClientQueueNums is used when a send names no defaultTopicQueueNums.
const defaultClientQueueNums = 4

// SendRequest is a decoded send, in the broker's terms: fronts translate
// their protocol's flags and reserved properties into the typed fields
// (Transactional, Delay, ShardingKey, MessageType), and the broker reads
// no sysflag bit and no such property of a request. The broker does not
// keep Body or Properties after Send returns.
type SendRequest struct {
	ProducerGroup string
	Topic         string
	// DefaultTopic names the auto-create template (TBW102 when empty);
	// DefaultTopicQueueNums caps the queues of an auto-created topic (4
	// when ≤ 0).
	DefaultTopic          string
	DefaultTopicQueueNums int32
	// NoGroupTopicCreate: never auto-create a %RETRY% or %DLQ% topic for
	// this send (a 5.x producer cannot name one; 4.x consumers fall back
	// to plain sends to their retry topic).
	NoGroupTopicCreate bool
	// QueueID < 0 lets the broker choose among the write queues: by
	// ShardingKey when there is one, else in turn.
	QueueID int32
	// SysFlag is stored as given (a 4.x producer's compressed-body and
	// multi-tags bits); the broker reads no bit of it, and clears the
	// transaction type bits of a half.
	SysFlag, Flag int32
	BornTimestamp int64 // ms
	// BornHost is the producer's address; the front takes it from the
	// connection (clients do not send it).
	BornHost netip.AddrPort
	// Properties are stored as given when encoded (the 4.x wire form
	// already says all the typed fields do); to map properties the broker
	// first adds those of the typed fields: TRAN_MSG=true and
	// PGROUP=ProducerGroup (Transactional), __SHARDINGKEY (ShardingKey),
	// TIMER_DELIVER_MS, TIMER_DELAY_MS or DELAY (Delay). The broker adds
	// UNIQ_KEY to batch items without one and CLUSTER to every message.
	Properties message.Properties
	// Transactional makes the message a transaction's half: invisible
	// until END_TRANSACTION commits it (never delayed). Not for a batch.
	Transactional bool
	// Delay asks for later delivery, within the broker's MaxTimerDelay
	// (a single message; a batch has ItemDelays).
	Delay message.Delay
	// ItemDelays[i] is the delay of batch item i; nil when none is
	// delayed.
	ItemDelays []message.Delay
	// ShardingKey places a FIFO message: with QueueID < 0 the broker puts
	// every message of one key on one queue (ShardQueue).
	ShardingKey string
	// MessageType is the type the producer declares, checked against the
	// topic's (AcceptedTypes); for MessageTypeUnspecified (4.x) the type
	// the other fields and the properties make it is (CheckMessageType).
	MessageType MessageType
	// Body is the message body, or for a batch the SEND_BATCH_MESSAGE body.
	Body              []byte
	ReconsumeTimes    int32
	MaxReconsumeTimes int32 // accepted and ignored for now (retry/DLQ routing comes later)
	Batch             bool
}

// SendResult answers a stored send.
type SendResult struct {
	Status SendStatus
	// MsgID is the offset message id of the stored record; for a batch the
	// ids of all items, comma-joined.
	MsgID string
	// QueueID and QueueOffset locate the (first) stored record.
	QueueID     int32
	QueueOffset int64
	RegionID    string
	// RecallHandle names a single delayed message (not a batch item, not
	// one for a %RETRY% topic) so that its producer can recall it before
	// it is due (RECALL_MESSAGE, the 5.x RecallMessage): the v1 handle of
	// message.EncodeRecallHandle with the real topic, the broker's name,
	// the due time and the UNIQ_KEY. Empty for anything else, and for
	// the answer to a resend the dedup window recognised (it remembers
	// where the original is, not when it is due), as for a message
	// without a UNIQ_KEY (nothing to recall it by).
	RecallHandle string
}

// Send validates and stores a message or a batch and returns once it is
// durable under the store's flush mode.
//
// Validation, in order, each failure an *Error with Kind
// KindMessageIllegal unless noted: topic name (1..127 characters of
// [%|a-zA-Z0-9_-]); body (a batch's whole body) ≤ MaxMessageBytes;
// properties ≤ 32767 bytes; batch framing, at least one item, not to a
// %RETRY% topic. Then the topic: an unknown topic is created from the
// template named by DefaultTopic when AutoCreateTopics is on and the
// template has the inherit bit, else KindTopicNotExist. Then the write
// permission (KindNoPermission) and the queue id, which must be below
// max(read, write) queue count (KindSystemError, as in Java, so that
// producers retry on another queue).
//
// The stored message gets CLUSTER=<cluster name> (request/reply needs it)
// unless it has one; each batch item without a UNIQ_KEY gets one. Store
// errors: disk full or store closed → KindServiceUnavailable; a record over
// the store's limit → KindMessageIllegal; others → KindSystemError. A flush
// timeout is not an error: the result has Status SendFlushDiskTimeout.
//
// Send does not give up when ctx ends during the store write (the message
// may be stored regardless); ctx is checked before the write. Send is
// SendBatch of one request that waits for its answer.
func (b *Broker) Send(ctx context.Context, req *SendRequest) (SendResult, error) {
	type answer struct {
		res SendResult
		err error
	}
	ch := make(chan answer, 1)
	b.SendBatch(ctx, []*SendRequest{req}, func(_ int, res SendResult, err error) { ch <- answer{res, err} })
	a := <-ch
	return a.res, a.err
}

// prepareSend validates req, finds (or, with create, auto-creates) its
// topic, picks the queue and builds the messages to store. After the
// topic is found, a declared MessageType the topic does not accept is
// refused (KindMessageIllegal with ErrMessageType in the chain), and a
// delay beyond MaxTimerDelay too (ErrDeliveryTime).
func (b *Broker) prepareSend(ctx context.Context, req *SendRequest, create bool) ([]*message.Message, int32, error) {
	if b.closed.Load() {
		return nil, 0, b.errClosed()
	}
	if err := b.refuseOnSlave(KindServiceUnavailable, "sends"); err != nil {
		return nil, 0, err
	}
	if err := b.refuseOnLease(KindServiceUnavailable, "sends"); err != nil {
		return nil, 0, err
	}
	if err := b.refuseWithoutWritePermission(); err != nil {
		return nil, 0, err
	}
	if err := checkTopicName(req.Topic); err != nil {
		return nil, 0, err
	}
	if txn.IsSystemTopic(req.Topic) || req.Topic == TimerTopic || req.Topic == StateTopic {
		return nil, 0, errorf(KindMessageIllegal, nil, "topic %q is a system topic of the broker; producers may not send to it", req.Topic)
	}
	if req.Transactional && req.Batch {
		return nil, 0, errorf(KindMessageIllegal, nil, "a batch cannot be a transactional (prepared) message; send it on its own")
	}
	if len(req.Body) > b.cfg.MaxMessageBytes {
		what := "message body"
		if req.Batch {
			what = "batch body"
		}
		return nil, 0, errorf(KindMessageIllegal, nil, "%s is %d bytes, over the limit of %d bytes (MaxMessageBytes); send a smaller body or split it", what, len(req.Body), b.cfg.MaxMessageBytes)
	}
	props := b.sendProperties(req)
	if !req.Batch {
		if err := checkProperties(props, -1); err != nil {
			return nil, 0, err
		}
	} else if strings.HasPrefix(req.Topic, RetryGroupTopicPrefix) {
		return nil, 0, errorf(KindMessageIllegal, nil, "batch sends to retry topic %q are not allowed; send the messages one by one", req.Topic)
	}
	topic, ok := b.meta.Topic(req.Topic)
	if !ok {
		if !create {
			return nil, 0, errorf(KindTopicNotExist, nil, "topic %q does not exist on broker %s", req.Topic, b.cfg.BrokerName)
		}
		var err error
		if topic, err = b.topicForSend(req); err != nil {
			return nil, 0, err
		}
	}
	if err := b.CheckMessageType(topicFromMeta(topic), req); err != nil {
		return nil, 0, err
	}
	if !b.meta.TopicsDurable() {
		// The topic may be one another send is creating right now: never
		// acknowledge a message to a topic whose config a crash could lose.
		if err := b.meta.SyncTopics(ctx); err != nil {
			return nil, 0, errorf(KindSystemError, err, "saving the topic table failed; retry")
		}
	}
	if topic.Perm&meta.PermWrite == 0 {
		return nil, 0, errorf(KindNoPermission, nil, "topic %q is not writable on broker %s (perm %d); send to another broker or give the topic write permission", topic.Name, b.cfg.BrokerName, topic.Perm)
	}
	qid := req.QueueID
	switch {
	case qid >= 0:
	case req.ShardingKey != "":
		qid = ShardQueue(req.ShardingKey, topic.WriteQueueNums)
	default:
		qid = int32(b.sendSeq.Add(1) % uint32(max(topic.WriteQueueNums, 1)))
	}
	if n := max(topic.ReadQueueNums, topic.WriteQueueNums); qid >= n {
		return nil, 0, errorf(KindSystemError, nil, "queue id %d is outside topic %q, which has %d queues on broker %s; refresh the route and pick a queue below %d", qid, topic.Name, n, b.cfg.BrokerName, n)
	}
	msgs, err := b.buildMessages(req, props, qid)
	if err != nil {
		return nil, 0, err
	}
	if req.Transactional {
		// A half message: invisible until END_TRANSACTION commits it (never
		// delayed: RocketMQ ignores the delay of a prepared message).
		b.txns.m.Half(msgs[0])
		if err := checkStorable(msgs[0], -1); err != nil {
			return nil, 0, err
		}
	} else {
		for i, m := range msgs {
			d := req.Delay
			if req.Batch {
				d = message.Delay{}
				if i < len(req.ItemDelays) {
					d = req.ItemDelays[i]
				}
			}
			if err := b.deferIfDelayed(m, d); err != nil {
				return nil, 0, err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, errorf(KindServiceUnavailable, err, "send was cancelled before the message was stored")
	}
	return msgs, qid, nil
}

// sendProperties are the encoded properties to store for req: encoded
// ones as given; map ones with the typed fields' properties added.
func (b *Broker) sendProperties(req *SendRequest) string {
	m := req.Properties.Map()
	if m == nil {
		return req.Properties.Encoded()
	}
	if req.Transactional {
		m[message.PropertyTransactionFlag] = "true"
		if req.ProducerGroup != "" {
			m[message.PropertyProducerGroup] = req.ProducerGroup
		}
	}
	if req.ShardingKey != "" {
		m[PropertyShardingKey] = req.ShardingKey
	}
	switch d := req.Delay; {
	case d.AtMS != 0:
		m[message.PropertyTimerDeliverMS] = strconv.FormatInt(d.AtMS, 10)
	case d.After > 0:
		m[PropertyTimerDelayMS] = strconv.FormatInt(d.After.Milliseconds(), 10)
	case d.Level > 0:
		m[message.PropertyDelayLevel] = strconv.Itoa(int(d.Level))
	}
	return message.EncodeProperties(m)
}

// sendResult turns the store's answer for msgs into Send's.
func (b *Broker) sendResult(msgs []*message.Message, qid int32, err error) (SendResult, error) {
	res := SendResult{Status: SendOK, QueueID: qid, RegionID: DefaultRegionID}
	switch {
	case err == nil:
	case errors.Is(err, store.ErrFlushTimeout):
		res.Status = SendFlushDiskTimeout
	case errors.Is(err, store.ErrDiskFull):
		return SendResult{}, errorf(KindServiceUnavailable, err, "the disk of broker %s is full; send to another broker", b.cfg.BrokerName)
	case errors.Is(err, store.ErrClosed):
		return SendResult{}, b.errClosed()
	case errors.Is(err, store.ErrBusy):
		return SendResult{}, errorf(KindSystemBusy, err, "broker %s is busy: its disk is not keeping up; nothing was stored, retry (on another broker if you have one)", b.cfg.BrokerName)
	case errors.Is(err, store.ErrTooLarge):
		return SendResult{}, errorf(KindMessageIllegal, err, "the stored record would exceed the store's record limit; send a smaller body or fewer properties")
	default:
		return SendResult{}, errorf(KindSystemError, err, "storing the message failed; retry")
	}
	b.stats.put(msgs)
	res.QueueOffset = msgs[0].QueueOffset
	if len(msgs) == 1 {
		res.MsgID = message.OffsetID(msgs[0].StoreHost, msgs[0].PhysicalOffset)
	} else {
		var sb strings.Builder
		for i, m := range msgs {
			if i > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(message.OffsetID(m.StoreHost, m.PhysicalOffset))
		}
		res.MsgID = sb.String()
	}
	return res, nil
}

// topicForSend finds the topic or auto-creates it: the one auto-creation
// rule of sends on every front. An unknown topic is created from the
// template (DefaultTopic, else TBW102) when AutoCreateTopics is on and the
// template has the inherit bit, with DefaultTopicQueueNums queues (4 when
// ≤ 0) capped by the template's write queues, and the template's
// permissions without the inherit bit.
func (b *Broker) topicForSend(req *SendRequest) (meta.Topic, error) {
	if t, ok := b.meta.Topic(req.Topic); ok {
		return t, nil
	}
	if !b.AutoCreateTopics() {
		return meta.Topic{}, errorf(KindTopicNotExist, nil, "topic %q does not exist on broker %s and auto-creation is off; create the topic first", req.Topic, b.cfg.BrokerName)
	}
	if req.NoGroupTopicCreate && isGroupTopic(req.Topic) {
		return meta.Topic{}, errorf(KindTopicNotExist, nil, "topic %q does not exist on broker %s; a retry or dead-letter topic belongs to its consumer group and is not created by a send", req.Topic, b.cfg.BrokerName)
	}
	tmplName := req.DefaultTopic
	if tmplName == "" {
		tmplName = TemplateTopic
	}
	tmpl, ok := b.meta.Topic(tmplName)
	if !ok {
		return meta.Topic{}, errorf(KindTopicNotExist, nil, "topic %q does not exist on broker %s and its template topic %q does not either; create the topic first", req.Topic, b.cfg.BrokerName, tmplName)
	}
	if tmpl.Perm&meta.PermInherit == 0 {
		return meta.Topic{}, errorf(KindTopicNotExist, nil, "topic %q does not exist on broker %s and template topic %q may not be inherited (perm %d); create the topic first", req.Topic, b.cfg.BrokerName, tmplName, tmpl.Perm)
	}
	n := req.DefaultTopicQueueNums
	if n <= 0 {
		n = defaultClientQueueNums
	}
	n = min(n, tmpl.WriteQueueNums, maxQueueNums)
	if n < 1 {
		n = 1
	}
	return b.ensureTopic(meta.Topic{Name: req.Topic, ReadQueueNums: n, WriteQueueNums: n,
		Perm: tmpl.Perm &^ meta.PermInherit, TopicFilterType: "SINGLE_TAG"})
}

// checkProperties applies the properties length rule; item ≥ 0 names a
// batch item.
func checkProperties(props string, item int) *Error {
	if len(props) <= message.MaxPropertiesLen {
		return nil
	}
	where := "message properties are"
	if item >= 0 {
		where = fmt.Sprintf("properties of batch item %d are", item)
	}
	return errorf(KindMessageIllegal, nil, "%s %d bytes, over the limit of %d bytes; use fewer or shorter properties and keys", where, len(props), message.MaxPropertiesLen)
}

// buildMessages turns the request into messages ready for the store.
func (b *Broker) buildMessages(req *SendRequest, props string, qid int32) ([]*message.Message, error) {
	base := message.Message{
		Topic:          req.Topic,
		QueueID:        qid,
		Flag:           req.Flag,
		SysFlag:        req.SysFlag,
		BornTimestamp:  req.BornTimestamp,
		BornHost:       req.BornHost,
		ReconsumeTimes: req.ReconsumeTimes,
	}
	if !base.BornHost.IsValid() {
		// The record needs an address; 0.0.0.0:0 says "unknown".
		base.BornHost = netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	}
	if !req.Batch {
		m := base
		m.Body = req.Body
		m.Properties = b.finishProperties(props, false)
		if err := checkStorable(&m, -1); err != nil {
			return nil, err
		}
		return []*message.Message{&m}, nil
	}
	var msgs []*message.Message
	err := message.DecodeBatch(req.Body, func(it message.BatchItem) error {
		i := len(msgs)
		if err := checkProperties(it.Properties, i); err != nil {
			return err
		}
		m := base
		m.Flag = it.Flag
		m.Body = it.Body
		m.Properties = b.finishProperties(it.Properties, true)
		if err := checkStorable(&m, i); err != nil {
			return err
		}
		msgs = append(msgs, &m)
		return nil
	})
	var be *Error
	switch {
	case errors.As(err, &be):
		return nil, be
	case err != nil:
		return nil, errorf(KindMessageIllegal, err, "the batch body is malformed; encode it as RocketMQ's MessageBatch does")
	case len(msgs) == 0:
		return nil, errorf(KindMessageIllegal, nil, "the batch holds no message; send at least one")
	}
	return msgs, nil
}

func checkStorable(m *message.Message, item int) *Error {
	if len(m.Properties) > message.MaxPropertiesLen {
		// Only the properties the broker adds can get here.
		return checkProperties(m.Properties, item)
	}
	if err := m.Validate(); err != nil {
		return errorf(KindMessageIllegal, err, "the message cannot be stored")
	}
	return nil
}

// finishProperties ends props with the separator if the client did not,
// adds a UNIQ_KEY when asked and missing, and CLUSTER when missing and it
// fits.
func (b *Broker) finishProperties(props string, needUniq bool) string {
	if n := len(props); n > 0 && props[n-1] != message.PropertySeparator {
		props += string(message.PropertySeparator)
	}
	add := func(key, value string) {
		props += key + string(message.NameValueSeparator) + value + string(message.PropertySeparator)
	}
	if needUniq {
		if _, ok := message.PropertyOf(props, message.PropertyUniqKey); !ok {
			add(message.PropertyUniqKey, b.uniq.next())
		}
	}
	if _, ok := message.PropertyOf(props, message.PropertyCluster); !ok &&
		len(props)+len(message.PropertyCluster)+len(b.cfg.ClusterName)+2 <= message.MaxPropertiesLen {
		add(message.PropertyCluster, b.cfg.ClusterName)
	}
	return props
}

// uniqGen makes UNIQ_KEY values for batch items that have none: 16 bytes,
// hex in upper case like Java's — the store host's IPv4 (4), the process
// id (2), a random per-start nonce (4) and a counter (6) — unique within a
// broker run and, through the nonce, across restarts.
type uniqGen struct {
	prefix  [20]byte // hex of the first 10 bytes
	counter atomic.Uint64
}

func (g *uniqGen) init(host netip.AddrPort, now time.Time) {
	var raw [10]byte
	if a := host.Addr(); a.Is4() || a.Is4In6() {
		ip := a.Unmap().As4()
		copy(raw[:4], ip[:])
	}
	pid := os.Getpid()
	raw[4], raw[5] = byte(pid>>8), byte(pid)
	nonce := rand.Uint32() ^ uint32(now.UnixNano())
	raw[6], raw[7], raw[8], raw[9] = byte(nonce>>24), byte(nonce>>16), byte(nonce>>8), byte(nonce)
	hexUpper(g.prefix[:], raw[:])
	g.counter.Store(rand.Uint64() & (1<<47 - 1))
}

func (g *uniqGen) next() string {
	c := g.counter.Add(1)
	var raw [6]byte
	for i := range raw {
		raw[i] = byte(c >> (8 * (5 - i)))
	}
	var out [32]byte
	copy(out[:], g.prefix[:])
	hexUpper(out[20:], raw[:])
	return string(out[:])
}

func hexUpper(dst, src []byte) {
	const digits = "0123456789ABCDEF"
	for i, c := range src {
		dst[2*i], dst[2*i+1] = digits[c>>4], digits[c&0xF]
	}
}
