package grpcfront

// Stored records to gRPC messages (deliveries and check-backs): the
// reverse of send.go's table. Bodies a 4.x producer compressed (zlib,
// the compressed sysflag) are inflated, so every body goes out IDENTITY
// with an MD5 digest.

import (
	"bytes"
	"compress/zlib"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/message"
)

// maxInflatedBody bounds a decompressed body.
const maxInflatedBody = 64 << 20

// toMessage converts a stored record; topic is the resource to name (the
// one the client asked for).
func toMessage(r message.Record, topic *v2.Resource) *v2.Message {
	props := message.ParseProperties(string(r.Properties()))
	body := r.Body()
	if r.SysFlag()&message.SysFlagCompressed != 0 {
		if b, err := inflate(body); err == nil {
			body = b
		}
	}
	body = bytes.Clone(body)
	sp := &v2.SystemProperties{
		MessageId:      props[message.PropertyUniqKey],
		BodyDigest:     bodyDigest(body),
		BodyEncoding:   v2.Encoding_IDENTITY,
		BornTimestamp:  timestamppb.New(time.UnixMilli(r.BornTimestamp())),
		BornHost:       r.BornHost().Addr().String(),
		StoreTimestamp: timestamppb.New(time.UnixMilli(r.StoreTimestamp())),
		StoreHost:      r.StoreHost().String(),
		QueueId:        r.QueueID(),
		QueueOffset:    ptr(r.QueueOffset()),
	}
	if sp.MessageId == "" {
		sp.MessageId = message.OffsetID(r.StoreHost(), r.PhysicalOffset())
	}
	if t, ok := props[message.PropertyTags]; ok && t != "" {
		sp.Tag = ptr(t)
	}
	if k := props[message.PropertyKeys]; k != "" {
		sp.Keys = strings.Fields(k)
	}
	group := props[propertyShardingKey]
	if group == "" {
		group = props[message.PropertyShardingKey]
	}
	if group != "" {
		sp.MessageGroup = ptr(group)
	}
	if tc := props[propertyTraceContext]; tc != "" {
		sp.TraceContext = ptr(tc)
	}
	var deliverAt int64
	if v, err := strconv.ParseInt(props[message.PropertyTimerDeliverMS], 10, 64); err == nil && v > 0 {
		deliverAt = v
		sp.DeliveryTimestamp = timestamppb.New(time.UnixMilli(v))
	}
	switch {
	case props[message.PropertyTransactionFlag] == "true" || r.SysFlag()&message.SysFlagTxMask != 0:
		sp.MessageType = v2.MessageType_TRANSACTION
	case group != "":
		sp.MessageType = v2.MessageType_FIFO
	case deliverAt > 0 || props[message.PropertyDelayLevel] != "":
		sp.MessageType = v2.MessageType_DELAY
	default:
		sp.MessageType = v2.MessageType_NORMAL
	}
	user := make(map[string]string)
	for k, v := range props {
		if !hiddenProperty(k) {
			user[k] = v
		}
	}
	return &v2.Message{Topic: topic, UserProperties: user, SystemProperties: sp, Body: body}
}

// delivered converts a popped message: its receipt handle, attempt and
// remaining invisible time go into the system properties.
func delivered(p broker.PoppedMessage, topic *v2.Resource, now time.Time) *v2.Message {
	m := toMessage(p.Record, topic)
	sp := m.SystemProperties
	sp.ReceiptHandle = ptr(p.Handle)
	sp.DeliveryAttempt = ptr(max(p.Attempt, 1))
	if !p.InvisibleUntil.IsZero() {
		sp.InvisibleDuration = durationpb.New(max(p.InvisibleUntil.Sub(now), 0))
	}
	return m
}

// checkMessage is the message of a check-back: the half as stored, with
// its real topic, named in the producer's namespace ns.
func checkMessage(chk broker.TransactionCheck, ns string) (*v2.Message, error) {
	r := message.Record(chk.Body)
	if _, err := message.Check(r); err != nil {
		return nil, fmt.Errorf("the half message of the check is not a record: %w", err)
	}
	m := toMessage(r, resourceOf(string(r.Topic()), ns))
	m.SystemProperties.MessageType = v2.MessageType_TRANSACTION
	if chk.Header.MsgID != "" {
		m.SystemProperties.MessageId = chk.Header.MsgID
	}
	return m, nil
}

// inflate decompresses a zlib body (what 4.x producers send compressed).
func inflate(b []byte) ([]byte, error) {
	zr, err := zlib.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	out, err := io.ReadAll(io.LimitReader(zr, maxInflatedBody+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxInflatedBody {
		return nil, fmt.Errorf("inflated body over %d bytes", maxInflatedBody)
	}
	return out, nil
}

// bodyDigest is a delivered body's digest as RocketMQ's proxy writes it:
// MD5 in upper-case hex. The Java and Node.js clients compare exactly that
// (a lower-case one marked every message corrupted, and their push
// consumers discarded it instead of calling the listener); the Go client
// computes lower case but does not act on a mismatch.
func bodyDigest(body []byte) *v2.Digest {
	sum := md5.Sum(body)
	return &v2.Digest{Type: v2.DigestType_MD5, Checksum: strings.ToUpper(hex.EncodeToString(sum[:]))}
}
