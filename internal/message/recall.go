package message

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
)

// A recall handle names one delayed message so that its producer can
// recall it before it is due (RocketMQ 5's RECALL_MESSAGE). Version 1 is
// the URL-safe base64 (padded) of "v1 topic brokerName timestamp uniqId",
// space-separated, where timestamp is the message's due time (unix ms)
// plus one and uniqId its UNIQ_KEY. A send answers it for a single delayed
// message (not a batch, not a retry).
type RecallHandle struct {
	Topic      string
	BrokerName string
	// Timestamp is the handle's timestamp field as written (a number for
	// handles Petrel and RocketMQ make; At is its value, -1 when it is not
	// one).
	Timestamp string
	At        int64
	UniqID    string
}

// MaxRecallHandle bounds the handles DecodeRecallHandle reads (a topic
// and a broker name of at most 127 characters, a number and an id fit
// easily).
const MaxRecallHandle = 1024

// ErrRecallHandle is returned for a handle that does not decode.
var ErrRecallHandle = errors.New("recall handle is invalid")

// EncodeRecallHandle returns the version 1 handle of a message of topic on
// brokerName due at dueMS (unix ms) with UNIQ_KEY uniq.
func EncodeRecallHandle(topic, brokerName string, dueMS int64, uniq string) string {
	raw := "v1 " + topic + " " + brokerName + " " + strconv.FormatInt(dueMS+1, 10) + " " + uniq
	return base64.URLEncoding.EncodeToString([]byte(raw))
}

// DecodeRecallHandle reads a handle; the padding is optional, as in Java.
func DecodeRecallHandle(s string) (RecallHandle, error) {
	if s == "" || len(s) > MaxRecallHandle {
		return RecallHandle{}, ErrRecallHandle
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return RecallHandle{}, ErrRecallHandle
	}
	items := strings.Split(string(raw), " ")
	if len(items) < 5 || items[0] != "v1" {
		return RecallHandle{}, ErrRecallHandle
	}
	h := RecallHandle{Topic: items[1], BrokerName: items[2], Timestamp: items[3], At: -1, UniqID: items[4]}
	if at, err := strconv.ParseInt(h.Timestamp, 10, 64); err == nil {
		h.At = at
	}
	return h, nil
}
