package txn

// Records: the half a send becomes, the copies re-stored by checks, the op
// records, the committed message and the body of a check request. See
// doc.go for their fields.

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/petrelmq/petrel/internal/message"
)

// toHalf rewrites msg into a half (see Manager.Half).
func toHalf(msg *message.Message) {
	// RocketMQ's broker names the transaction by the message's UNIQ_KEY
	// (TransactionalMessageBridge.parseHalfMessageInner), whatever the
	// producer set; the committed message keeps it.
	if u := msg.Property(message.PropertyUniqKey); u != "" {
		msg.SetProperty(PropertyTransactionID, u)
	}
	msg.SetProperty(PropertyRealTopic, msg.Topic)
	msg.SetProperty(PropertyRealQueueID, strconv.FormatInt(int64(msg.QueueID), 10))
	msg.SysFlag &^= message.SysFlagTxMask
	msg.Topic = HalfTopic
	msg.QueueID = 0
}

// half is what the manager keeps of one live half record.
type half struct {
	qo      int64 // queue offset in HalfTopic
	clo     int64 // commit-log offset
	storeMS int64
	origin  int64 // queue offset of the transaction's first half
	checks  int
	due     int64 // ms: when the next check is due
	group   string
	bad     string // non-empty: why it cannot be checked or committed
	t       *txn
}

// txn is one open transaction: its live halves (normally one), by queue
// offset ascending.
type txn struct {
	origin int64
	halves []*half
	// busy: a writer (End or a check round) is storing records for this
	// transaction; others wait on Manager.cond.
	busy bool
}

// parseHalf reads what the manager needs from a half record. firstDelay is
// Config.Timeout in ms.
func parseHalf(r message.Record, firstDelay int64) *half {
	h := &half{qo: r.QueueOffset(), clo: r.PhysicalOffset(), storeMS: r.StoreTimestamp()}
	h.origin = h.qo
	if v, ok := r.Property(PropertyPreparedQueueOffset); ok {
		if o, err := strconv.ParseInt(string(v), 10, 64); err == nil && o >= 0 && o <= h.qo {
			h.origin = o
		}
	}
	if v, ok := r.Property(PropertyCheckTimes); ok {
		if n, err := strconv.Atoi(string(v)); err == nil && n > 0 {
			h.checks = n
		}
	}
	h.due = h.storeMS + firstDelay
	if v, ok := r.Property(PropertyCheckImmunitySeconds); ok {
		// Java: seconds; an unparsable value or one below the timeout
		// leaves the timeout.
		if s, err := strconv.ParseInt(string(v), 10, 64); err == nil && s > 0 && s < 1<<40 && s*1000 > firstDelay {
			h.due = h.storeMS + s*1000
		}
	}
	if v, ok := r.Property(PropertyNextCheck); ok {
		if at, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			h.due = at
		}
	}
	if g, ok := r.Property(PropertyProducerGroup); ok && len(g) > 0 {
		h.group = string(g)
	} else {
		h.bad = "no PGROUP property"
	}
	if _, _, err := realQueue(r); err != nil {
		h.bad = err.Error()
	}
	return h
}

// realQueue returns the topic and queue a half commits to.
func realQueue(r message.Record) (string, int32, error) {
	t, ok := r.Property(PropertyRealTopic)
	if !ok || len(t) == 0 || len(t) > message.MaxTopicLen || !message.ValidTopic(t) {
		return "", 0, fmt.Errorf("%w: REAL_TOPIC %q is missing or invalid", ErrNotHalf, t)
	}
	q, ok := r.Property(PropertyRealQueueID)
	id, err := strconv.ParseInt(string(q), 10, 32)
	if !ok || err != nil || id < 0 {
		return "", 0, fmt.Errorf("%w: REAL_QID %q is missing or invalid", ErrNotHalf, q)
	}
	return string(t), int32(id), nil
}

// internalProps are removed from the committed message.
var internalProps = []string{
	PropertyRealTopic, PropertyRealQueueID, PropertyTransactionPrepared,
	PropertyCheckTimes, PropertyPreparedQueueOffset, PropertyNextCheck,
}

// committed builds the message a commit stores, as Java's
// EndTransactionProcessor does: real topic and queue, REAL_*, TRAN_MSG and
// the check bookkeeping removed, transaction type commit, the half's
// commit-log offset in PREPAREDTRANSACTIONOFFSET; the store sets the store
// timestamp, host and offsets afresh.
func committed(r message.Record) (*message.Message, error) {
	topic, qid, err := realQueue(r)
	if err != nil {
		return nil, err
	}
	m, _, err := message.Decode(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotHalf, err)
	}
	m.Topic, m.QueueID = topic, qid
	for _, k := range internalProps {
		m.RemoveProperty(k)
	}
	m.SysFlag = m.SysFlag&^message.SysFlagTxMask | message.SysFlagTxCommit
	m.PreparedTransactionOffset = r.PhysicalOffset()
	m.QueueOffset, m.PhysicalOffset, m.StoreTimestamp, m.BodyCRC = 0, 0, 0, 0
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotHalf, err)
	}
	return m, nil
}

// renewed is the copy of a half re-stored after a check (or to move an
// old half forward): same message, check count and next-check time
// updated, origin recorded.
func renewed(r message.Record, origin int64, checks int, due int64) (*message.Message, error) {
	m, _, err := message.Decode(r)
	if err != nil {
		return nil, err
	}
	if checks > 0 {
		m.SetProperty(PropertyCheckTimes, strconv.Itoa(checks))
	} else {
		m.RemoveProperty(PropertyCheckTimes)
	}
	m.SetProperty(PropertyPreparedQueueOffset, strconv.FormatInt(origin, 10))
	m.SetProperty(PropertyNextCheck, strconv.FormatInt(due, 10))
	m.Topic, m.QueueID = HalfTopic, 0
	m.QueueOffset, m.PhysicalOffset, m.StoreTimestamp = 0, 0, 0
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

var opProperties = message.EncodeProperties(map[string]string{message.PropertyTags: OpTag})

// opRecord says "the half at queue offset qo is done": body = the offset
// in decimal, tag "d", as RocketMQ 4.x writes it.
func opRecord(qo int64, nowMS int64, host netip.AddrPort) *message.Message {
	if !host.IsValid() {
		host = netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	}
	return &message.Message{
		Topic:         OpTopic,
		BornTimestamp: nowMS,
		BornHost:      host,
		Body:          strconv.AppendInt(nil, qo, 10),
		Properties:    opProperties,
	}
}

// opOffsets parses an op body: one decimal offset (4.x) or several joined
// by commas (5.x). Unparsable items are skipped.
func opOffsets(body []byte, fn func(int64)) {
	for item := range strings.SplitSeq(string(body), ",") {
		if v, err := strconv.ParseInt(strings.TrimSpace(item), 10, 64); err == nil && v >= 0 {
			fn(v)
		}
	}
}

// CheckHeader is the ext of a CHECK_TRANSACTION_STATE (code 39) request.
type CheckHeader struct {
	TranStateTableOffset int64  // the half's queue offset
	CommitLogOffset      int64  // the half's commit-log offset
	MsgID                string // UNIQ_KEY
	TransactionID        string // __transactionId__, else UNIQ_KEY
	OffsetMsgID          string // offset message id of the half
}

// CheckRequest builds the header and body of a CHECK_TRANSACTION_STATE
// request for a half record as the Checker receives it. The body is the
// record with its real topic and queue (as Java sends it, so the client's
// listener sees the message it sent) and without Petrel's bookkeeping
// property. It fails only for a record that is not a half.
func CheckRequest(half message.Record) (CheckHeader, []byte, error) {
	topic, qid, err := realQueue(half)
	if err != nil {
		return CheckHeader{}, nil, err
	}
	m, _, err := message.Decode(half)
	if err != nil {
		return CheckHeader{}, nil, fmt.Errorf("%w: %w", ErrNotHalf, err)
	}
	h := CheckHeader{
		TranStateTableOffset: half.QueueOffset(),
		CommitLogOffset:      half.PhysicalOffset(),
		MsgID:                m.Property(message.PropertyUniqKey),
		OffsetMsgID:          message.OffsetID(half.StoreHost(), half.PhysicalOffset()),
	}
	h.TransactionID = m.Property(PropertyTransactionID)
	if h.TransactionID == "" {
		h.TransactionID = h.MsgID
	}
	m.Topic, m.QueueID = topic, qid
	m.RemoveProperty(PropertyNextCheck)
	return h, m.Encode(), nil
}
