package rmq

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/remoting"
)

// Fuzz inputs for headers are ext fields: key NUL value NUL key NUL ...
// (seeds under testdata/fuzz/<Target>/). Every decoder of a request
// Petrel serves is reached by one of the targets below. Each checks that
// a decode either succeeds and survives Encode then Decode unchanged, or
// fails with a *FieldError naming a field the header has (for bodies: with
// the sentence "<body> body is not valid JSON: ...").

func extFrom(data []byte) map[string]string {
	parts := bytes.Split(data, []byte{0})
	ext := make(map[string]string, len(parts)/2)
	for i := 0; i+1 < len(parts); i += 2 {
		ext[string(parts[i])] = string(parts[i+1])
	}
	return ext
}

// extBytes is extFrom's inverse for seeds.
func extBytes(ext map[string]string) []byte {
	var b []byte
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range ext {
			if !yield(k) {
				return
			}
		}
	}) {
		b = append(b, k...)
		b = append(b, 0)
		b = append(b, ext[k]...)
		b = append(b, 0)
	}
	return b
}

// headerCodec is one header type under fuzz: its code, decoder, encoder
// and field names.
type headerCodec struct {
	code   int16
	fields []string
	rt     func(c *remoting.Command) (first any, again any, err error)
}

func codecOf[T any](code int16, dec func(*remoting.Command) (T, error), enc func(T) *remoting.Command, fields ...string) headerCodec {
	return headerCodec{code: code, fields: fields, rt: func(c *remoting.Command) (any, any, error) {
		h, err := dec(c)
		if err != nil {
			return h, nil, err
		}
		h2, err := dec(enc(h))
		return h, h2, err
	}}
}

func noBody[T any](enc func(T, []byte) *remoting.Command) func(T) *remoting.Command {
	return func(h T) *remoting.Command { return enc(h, nil) }
}

// servedHeaders are the small request headers Petrel serves, in the order
// FuzzDecodeHeaders' first byte picks them.
var servedHeaders = []headerCodec{
	codecOf(CodeQueryConsumerOffset, DecodeQueryConsumerOffsetRequest, EncodeQueryConsumerOffsetRequest, "consumerGroup", "topic", "queueId"),
	codecOf(CodeUpdateConsumerOffset, DecodeUpdateConsumerOffsetRequest, EncodeUpdateConsumerOffsetRequest, "consumerGroup", "topic", "queueId", "commitOffset"),
	codecOf(CodeSearchOffsetByTimestamp, DecodeSearchOffsetRequest, EncodeSearchOffsetRequest, "topic", "queueId", "timestamp"),
	codecOf(CodeGetMaxOffset, DecodeQueueOffsetRequest, EncodeGetMaxOffsetRequest, "topic", "queueId"),
	codecOf(CodeUnregisterClient, DecodeUnregisterClientRequest, EncodeUnregisterClientRequest, "clientID", "producerGroup", "consumerGroup"),
	codecOf(CodeGetConsumerListByGroup, DecodeConsumerGroupRequest, EncodeGetConsumerListRequest, "consumerGroup"),
	codecOf(CodeQueryMessage, DecodeQueryMessageRequest, EncodeQueryMessageRequest, "topic", "key", "maxNum", "beginTimestamp", "endTimestamp"),
	codecOf(CodeViewMessageByID, DecodeViewMessageRequest, EncodeViewMessageRequest, "topic", "offset"),
	codecOf(CodeConsumerSendMsgBack, DecodeSendBackRequest, EncodeSendBackRequest, "offset", "group", "delayLevel", "originMsgId", "originTopic", "unitMode", "maxReconsumeTimes"),
	codecOf(CodePetrelResendDLQ, DecodeResendDLQRequest, EncodeResendDLQRequest, "group", "offset", "msgId"),
	codecOf(CodePetrelCancelDelayed, DecodeCancelDelayedRequest, EncodeCancelDelayedRequest, "msgId", "topic"),
	codecOf(CodeEndTransaction, DecodeEndTransactionRequest, EncodeEndTransactionRequest, "producerGroup", "tranStateTableOffset", "commitLogOffset", "commitOrRollback", "fromTransactionCheck", "msgId", "transactionId"),
	codecOf(CodeInvokeBrokerToResetOffset, DecodeResetOffsetRequest, EncodeResetOffsetRequest, "topic", "group", "timestamp", "isForce"),
	// Not served, sent: the check-back a producer decodes.
	codecOf(CodeCheckTransactionState, DecodeCheckTransactionState, noBody(EncodeCheckTransactionState), "tranStateTableOffset", "commitLogOffset", "msgId", "transactionId", "offsetMsgId"),
}

func checkHeader(t *testing.T, hc headerCodec, ext map[string]string) {
	first, again, err := hc.rt(remoting.NewRequest(hc.code, ext, nil))
	if err != nil {
		var fe *FieldError
		if !errors.As(err, &fe) || !slices.Contains(hc.fields, fe.Field) {
			t.Fatalf("code %d: error %v is not a FieldError naming one of %v", hc.code, err, hc.fields)
		}
		if fe.Missing == (ext[fe.Field] != "") {
			t.Fatalf("code %d: %v, but the field is %q", hc.code, err, ext[fe.Field])
		}
		return
	}
	if !reflect.DeepEqual(first, again) {
		t.Fatalf("code %d: round trip\n %+v\n %+v", hc.code, first, again)
	}
}

func FuzzDecodePullRequest(f *testing.F) {
	f.Add(extBytes(EncodePullRequest(PullRequest{ConsumerGroup: "cg", Topic: "T", QueueID: 1, QueueOffset: 2, MaxMsgNums: 32, SysFlag: 6, SuspendTimeoutMillis: 20000, Subscription: "*", SubVersion: 1, ExpressionType: "TAG"}).ExtFields))
	pull := codecOf(CodePullMessage, DecodePullRequest, EncodePullRequest, "consumerGroup", "topic", "queueId", "queueOffset", "maxMsgNums", "sysFlag", "commitOffset", "suspendTimeoutMillis", "subscription", "subVersion", "expressionType")
	answer := codecOf(RespSuccess, DecodePullResponse, func(r PullResponse) *remoting.Command {
		return EncodePullResponse(remoting.NewRequest(CodePullMessage, nil, nil), RespSuccess, r)
	}, "nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId")
	f.Fuzz(func(t *testing.T, data []byte) {
		ext := extFrom(data)
		for _, v := range ext {
			checkParseDecimal(t, v)
		}
		checkHeader(t, pull, ext)
		checkHeader(t, answer, ext)
	})
}

func FuzzDecodeHeaders(f *testing.F) {
	f.Add(byte(0), []byte("consumerGroup\x00cg\x00topic\x00T\x00queueId\x001\x00"))
	f.Fuzz(func(t *testing.T, which byte, data []byte) {
		checkHeader(t, servedHeaders[int(which)%len(servedHeaders)], extFrom(data))
	})
}

// FuzzDecodeSendResponse covers the send answer (and PETREL_RESEND_DLQ's)
// that the CLI reads from a broker.
func FuzzDecodeSendResponse(f *testing.F) {
	answer := codecOf(RespSuccess, DecodeSendResponse, func(r SendResponse) *remoting.Command {
		return EncodeSendResponse(remoting.NewRequest(CodeSendMessageV2, nil, nil), RespSuccess, r)
	}, "msgId", "queueId", "queueOffset")
	f.Fuzz(func(t *testing.T, data []byte) {
		checkHeader(t, answer, extFrom(data))
	})
}

// FuzzDecodeRecall covers RECALL_MESSAGE's request (served) and its
// answer (the CLI reads it).
func FuzzDecodeRecall(f *testing.F) {
	req := codecOf(CodeRecallMessage, DecodeRecallRequest, EncodeRecallRequest, "producerGroup", "topic", "recallHandle")
	answer := codecOf(RespSuccess, DecodeRecallResponse, func(r RecallResponse) *remoting.Command {
		return EncodeRecallResponse(remoting.NewRequest(CodeRecallMessage, nil, nil), r)
	}, "msgId")
	f.Fuzz(func(t *testing.T, data []byte) {
		ext := extFrom(data)
		checkHeader(t, req, ext)
		checkHeader(t, answer, ext)
	})
}

// checkBody: a body that decodes encodes to bytes that decode and encode
// to the same bytes again; one that does not says so.
func checkBody[T any](t *testing.T, what string, body []byte, dec func([]byte) (T, error), enc func(T) []byte) {
	v, err := dec(body)
	if err != nil {
		if !strings.HasPrefix(err.Error(), what+" body is not valid JSON: ") {
			t.Fatalf("error %v does not say the %s body is not valid JSON", err, what)
		}
		return
	}
	b1 := enc(v)
	v2, err := dec(b1)
	if err != nil {
		t.Fatalf("%s re-encoded as %s does not decode: %v", what, b1, err)
	}
	if b2 := enc(v2); !bytes.Equal(b1, b2) {
		t.Fatalf("%s round trip:\n %s\n %s", what, b1, b2)
	}
}

func FuzzDecodeHeartbeat(f *testing.F) {
	f.Add([]byte(`{"clientID":"c","producerDataSet":[{"groupName":"pg"}],"consumerDataSet":[{"groupName":"cg","subscriptionDataSet":[{"topic":"T","subString":"a||b","tagsSet":["a","b"],"codeSet":["97",98],"subVersion":1,"expressionType":"TAG"}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkBody(t, "heartbeat", body, DecodeHeartbeatBody, EncodeHeartbeatBody)
	})
}

func FuzzDecodeLockBatch(f *testing.F) {
	f.Add([]byte(`{"consumerGroup":"cg","clientId":"c","mqSet":[{"topic":"T","brokerName":"b","queueId":1}]}`))
	dec := func(b []byte) (LockBatchBody, error) {
		return DecodeLockBatch(remoting.NewRequest(CodeLockBatchMQ, nil, b))
	}
	enc := func(b LockBatchBody) []byte { return EncodeLockBatchRequest(b).Body }
	f.Fuzz(func(t *testing.T, body []byte) {
		checkBody(t, "lock", body, dec, enc)
	})
}

// FuzzDecodeMQMap: any input decodes or fails without panicking, and
// what decodes, with values of any JSON, re-encodes in fastjson's form to
// the same map (moved here with the CLI's copy of the scanner).
func FuzzDecodeMQMap(f *testing.F) {
	for _, s := range []string{
		`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"minOffset":1}}}`,
		`{"offsetTable":[[{"topic":"T","brokerName":"b","queueId":2},7]]}`,
		`{"offsetTable":{}}`,
		`{"offsetTable":{{"topic":"a\"}:"}:"x\\"},{"topic":"b"}:[1,{"y":2}]}}`,
		`{"offsetTable":{{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := DecodeMQMap[json.RawMessage](body, "offsetTable")
		if err != nil {
			return
		}
		b, err := AppendMQMap([]byte(`{"offsetTable":`), m)
		if err != nil {
			t.Fatalf("%v does not encode: %v", m, err)
		}
		again, err := DecodeMQMap[json.RawMessage](append(b, '}'), "offsetTable")
		if err != nil || len(again) != len(m) {
			t.Fatalf("re-encoded %s: %v, %v", b, again, err)
		}
		for q, v := range m {
			w, ok := again[q]
			if !ok || !jsonEqual(v, w) {
				t.Fatalf("queue %+v: %s became %s (%v)", q, v, w, ok)
			}
		}
	})
}

// jsonEqual says whether a and b are the same JSON value (json.Marshal
// compacts and re-escapes a RawMessage it writes).
func jsonEqual(a, b []byte) bool {
	read := func(b []byte) (any, error) {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber() // numbers as written: 1e400 is valid JSON, not a float64
		var v any
		err := d.Decode(&v)
		return v, err
	}
	x, errX := read(a)
	y, errY := read(b)
	return errX == nil && errY == nil && reflect.DeepEqual(x, y)
}

// FuzzDecodeOffsetTable covers the reset-offset answer and notice, which
// the CLI and consumers read from a broker.
func FuzzDecodeOffsetTable(f *testing.F) {
	f.Add([]byte(`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:5}}`))
	f.Add([]byte(`{"offsetTable":[[{"brokerName":"b","queueId":0,"topic":"T"},5]]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		tbl, err := DecodeOffsetTable(body)
		if err != nil {
			return
		}
		again, err := DecodeOffsetTable(EncodeOffsetTable(tbl))
		if err != nil || !reflect.DeepEqual(OffsetTable(tbl), again) && len(tbl)+len(again) > 0 {
			t.Fatalf("round trip %v: %v, %v", tbl, again, err)
		}
	})
}
