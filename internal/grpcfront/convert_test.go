package grpcfront

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/md5"
	"encoding/hex"
	"strings"
	"testing"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/message"
)

// TestCompressedBodiesAreInflated: a body a 4.x producer compressed goes
// out inflated, IDENTITY, with the digest of what the client gets.
func TestCompressedBodiesAreInflated(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 1)
	plain := bytes.Repeat([]byte("compress me "), 100)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(plain)
	zw.Close()
	props := message.EncodeProperties(map[string]string{message.PropertyUniqKey: "ID-Z", message.PropertyTags: "TagZ",
		message.PropertyShardingKey: "g4", "app": "x"})
	if _, err := e.b.Send(context.Background(), &broker.SendRequest{Topic: "T1", QueueID: 0, SysFlag: message.SysFlagCompressed,
		Body: z.Bytes(), Properties: message.EncodedProperties(props)}); err != nil {
		t.Fatal(err)
	}
	r := e.awaitRecords("T1", 1)[0][0]
	m := toMessage(r, &v2.Resource{Name: "T1"})
	sp := m.SystemProperties
	// MD5 in upper-case hex, as the proxy writes it and the Java and
	// Node.js clients check it.
	sum := md5.Sum(plain)
	want := strings.ToUpper(hex.EncodeToString(sum[:]))
	if !bytes.Equal(m.Body, plain) || sp.BodyEncoding != v2.Encoding_IDENTITY || sp.BodyDigest.Type != v2.DigestType_MD5 || sp.BodyDigest.Checksum != want {
		t.Fatalf("body %d bytes encoding %v digest %v; want the inflated %d bytes", len(m.Body), sp.BodyEncoding, sp.BodyDigest, len(plain))
	}
	if sp.MessageId != "ID-Z" || sp.GetTag() != "TagZ" || sp.GetMessageGroup() != "g4" || sp.MessageType != v2.MessageType_FIFO ||
		m.UserProperties["app"] != "x" || len(m.UserProperties) != 1 {
		t.Fatalf("converted %v user %v", sp, m.UserProperties)
	}
	if _, err := inflate([]byte("not zlib")); err == nil {
		t.Fatal("inflate accepted garbage")
	}
}

// TestTypeInferredWhenUnspecified: a client that does not set the message
// type gets FIFO for a message with a group.
func TestTypeInferredWhenUnspecified(t *testing.T) {
	e := newEnv(t)
	e.createTopic("T1", 4)
	m := msg("T1", "ID-G", "grouped")
	m.SystemProperties.MessageType = v2.MessageType_MESSAGE_TYPE_UNSPECIFIED
	m.SystemProperties.MessageGroup = ptr("g1")
	if got := e.send("p1", m); code(got.Status) != v2.Code_OK {
		t.Fatalf("send: %v", got.Status)
	}
	recs := e.awaitRecords("T1", 1)[broker.ShardQueue("g1", 4)]
	if len(recs) != 1 || prop(recs[0], propertyShardingKey) != "g1" {
		t.Fatalf("queue %d holds %d records", broker.ShardQueue("g1", 4), len(recs))
	}
	// RocketMQ's proxy hands __SHARDINGKEY back as a user property too
	// (it is not one of MessageConst's system keys).
	if got := toMessage(recs[0], &v2.Resource{Name: "T1"}); got.SystemProperties.GetMessageGroup() != "g1" || got.UserProperties[propertyShardingKey] != "g1" {
		t.Fatalf("delivered group %q, user properties %v; want g1 and __SHARDINGKEY=g1", got.SystemProperties.GetMessageGroup(), got.UserProperties)
	}
	d := m.SystemProperties
	d.MessageGroup = nil
	d.DeliveryTimestamp = tspb(t0)
	if inferType(d) != v2.MessageType_DELAY || inferType(&v2.SystemProperties{}) != v2.MessageType_NORMAL {
		t.Fatal("inferType")
	}
}
