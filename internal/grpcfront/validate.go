package grpcfront

// Checks on what a client sends before it reaches the broker: the message
// id, tag, keys, message group and user properties all end up in the
// stored record's encoded properties, where the separator bytes 0x01 and
// 0x02 would corrupt them.

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/message"
)

// Limits of the client-supplied strings.
const (
	// MaxMessageIDLen bounds a message id (the Go and Java clients make 34
	// or 32 characters).
	MaxMessageIDLen = 128
	// MaxMessageGroupLen is the Java proxy's limit on a message group.
	MaxMessageGroupLen = 64
	// maxTagLen and maxKeyLen bound a tag and each key.
	maxTagLen = 255
	maxKeyLen = 255
)

// validMessageID reports why a client-supplied message id cannot be used,
// or "" when it can. The id is opaque (other SDKs use other layouts): it
// must be 1..MaxMessageIDLen bytes of valid UTF-8 without control
// characters or spaces, so that it can be stored as the UNIQ_KEY
// property and looked up by the broker's index.
func validMessageID(id string) string {
	switch {
	case id == "":
		return "the message has no message id; the client must set one (system_properties.message_id)"
	case len(id) > MaxMessageIDLen:
		return fmt.Sprintf("the message id is %d bytes, longer than the limit of %d", len(id), MaxMessageIDLen)
	case !utf8.ValidString(id):
		return "the message id is not valid UTF-8"
	}
	for _, r := range id {
		if r <= ' ' || r == 0x7f {
			return fmt.Sprintf("the message id %q contains a space or control character (%U)", id, r)
		}
	}
	return ""
}

// validText checks a tag, key or message group: non-blank, at most max
// bytes, no control characters; what says which it is.
func validText(s, what string, maxLen int) string {
	switch {
	case strings.TrimSpace(s) == "":
		return fmt.Sprintf("the %s is blank; leave it unset or give it a value", what)
	case len(s) > maxLen:
		return fmt.Sprintf("the %s is %d bytes, longer than the limit of %d", what, len(s), maxLen)
	case !utf8.ValidString(s):
		return fmt.Sprintf("the %s is not valid UTF-8", what)
	}
	for _, r := range s {
		if r < ' ' || r == 0x7f {
			return fmt.Sprintf("the %s %q contains a control character (%U)", what, s, r)
		}
	}
	return ""
}

// validTag checks a message tag: text without "||" separators' bar.
func validTag(tag string) string {
	if why := validText(tag, "tag", maxTagLen); why != "" {
		return why
	}
	if strings.ContainsRune(tag, '|') {
		return fmt.Sprintf("the tag %q contains '|', which separates tags in subscriptions; use another character", tag)
	}
	return ""
}

// validKey checks one message key: keys are stored space-separated.
func validKey(key string) string {
	if why := validText(key, "message key", maxKeyLen); why != "" {
		return why
	}
	if strings.ContainsRune(key, ' ') {
		return fmt.Sprintf("the message key %q contains a space, which separates stored keys; use another character", key)
	}
	return ""
}

// validUserProperty checks one user property.
func validUserProperty(k, v string) string {
	switch {
	case k == "":
		return "a user property has an empty key"
	case !message.ValidProperty(k, v):
		return fmt.Sprintf("user property %q has a key or value with a control character 0x01 or 0x02", k)
	case reservedProperty(k):
		return fmt.Sprintf("user property key %q is reserved for the broker; rename it", k)
	}
	return ""
}

// systemPropertyKeys are the property keys RocketMQ (and Petrel) use for
// themselves: clients may not set them as user properties and they are
// not handed back as user properties.
var systemPropertyKeys = map[string]bool{
	message.PropertyTags: true, message.PropertyKeys: true, message.PropertyUniqKey: true,
	message.PropertyWait: true, message.PropertyDelayLevel: true, message.PropertyTimerDeliverMS: true,
	message.PropertyRealTopic: true, message.PropertyRealQueueID: true, message.PropertyRetryTopic: true,
	message.PropertyOriginMessageID: true, message.PropertyTransactionFlag: true,
	message.PropertyProducerGroup: true, message.PropertyCluster: true, message.PropertyMaxReconsumeTime: true,
	message.PropertyShardingKey: true, propertyShardingKey: true,
	"TIMER_DELAY_SEC": true, "TIMER_DELAY_MS": true, "TIMER_OUT_MS": true, "TIMER_ENQUEUE_MS": true,
	"TIMER_DEQUEUE_MS": true, "TIMER_ROLL_TIMES": true, "TIMER_DEL_UNIQKEY": true,
	"MIN_OFFSET": true, "MAX_OFFSET": true, "BUYER_ID": true, "MSG_REGION": true, "TRACE_ON": true,
	"TRANSACTION_CHECK_TIMES": true, "CHECK_IMMUNITY_TIME_IN_SECONDS": true, "TRAN_PREPARED_QUEUE_OFFSET": true,
	propertyTransactionID: true, "PETREL_TRAN_NEXT_CHECK": true, "CONSUME_START_TIME": true,
	"INSTANCE_ID": true, "CORRELATION_ID": true, "REPLY_TO_CLIENT": true, "TTL": true, "ARRIVE_TIME": true,
	"PUSH_REPLY_TIME": true, "MSG_TYPE": true, "POP_CK": true, "POP_CK_OFFSET": true, "1ST_POP_TIME": true,
	"DLQ_ORIGIN_TOPIC": true, "DLQ_ORIGIN_MESSAGE_ID": true, "__BORNHOST": true, propertyTraceContext: true,
}

// Property keys the gRPC front reads or refuses that the message package
// does not name.
const (
	// propertyShardingKey holds a FIFO message's group (Java's
	// MessageConst.PROPERTY_SHARDING_KEY; the broker writes it from the
	// send's ShardingKey); message.PropertyShardingKey (the 4.x Go
	// client's) is read too.
	propertyShardingKey = broker.PropertyShardingKey
	// propertyTransactionID is a half's transaction id, its UNIQ_KEY,
	// kept on the committed message.
	propertyTransactionID = broker.PropertyTransactionID
	// propertyTraceContext holds the client's trace context.
	propertyTraceContext = "TRACE_CONTEXT"
)

func reservedProperty(k string) bool { return systemPropertyKeys[k] }

// deliveredKeys are reserved keys a delivery still hands back as user
// properties, as RocketMQ's proxy does: they are not among MessageConst's
// system keys (STRING_HASH_SET), so its clients see them.
var deliveredKeys = map[string]bool{propertyShardingKey: true, propertyTransactionID: true}

// hiddenProperty reports whether a stored property stays out of a
// delivery's user properties.
func hiddenProperty(k string) bool { return systemPropertyKeys[k] && !deliveredKeys[k] }
