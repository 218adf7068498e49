package brokerfront_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"maps"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/remoting/rmq"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
)

const (
	codeSendMessageV2 int16 = 310
)

type front struct {
	addr   string
	client *remoting.Client
	core   *broker.Broker // the broker behind the front, to await its state
}

func startFront(t *testing.T) *front {
	t.Helper()
	c := daemontest.Start(t)
	cl := remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(func() { cl.Close() })
	return &front{addr: c.Broker.Addr().String(), client: cl, core: c.Broker.Core()}
}

func (f *front) invoke(t *testing.T, code int16, ext map[string]string, body []byte) *remoting.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := f.client.Invoke(ctx, f.addr, remoting.NewRequest(code, ext, body))
	if err != nil {
		t.Fatalf("invoke code %d: %v", code, err)
	}
	return resp
}

func sendExt(topic, props string, edit map[string]string) map[string]string {
	ext := map[string]string{
		"producerGroup": "pg", "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": "0", "sysFlag": "0", "bornTimestamp": "1", "flag": "0",
		"properties": props, "reconsumeTimes": "0", "unitMode": "false",
		"maxReconsumeTimes": "0", "batch": "false",
	}
	maps.Copy(ext, edit)
	return ext
}

// maxOffset is the queue's max offset: how many messages it stored.
func (f *front) maxOffset(t *testing.T, topic string) string {
	t.Helper()
	return f.invoke(t, rmq.CodeGetMaxOffset, map[string]string{"topic": topic, "queueId": "0"}, nil).Ext("offset")
}

// settledMaxOffset waits until queue 0 of topic reaches atLeast messages
// (a send is answered once durable; the consume queue is fed just after)
// and returns its max offset then. Dispatch follows the log's order, so
// once the last send of a test is visible, so is anything stored before it.
func (f *front) settledMaxOffset(t *testing.T, topic string, atLeast int64) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := f.maxOffset(t, topic)
		if n, err := strconv.ParseInt(got, 10, 64); err == nil && n >= atLeast {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue 0 of %s still holds %s messages after 10s, want at least %d", topic, got, atLeast)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestNumericHeaderFieldsAreRefused: a numeric header field that does not
// parse is refused with a remark that names it; the request does nothing
// (before, "abc" became 0: a send to queue 0, a pull from offset 0), and
// so is a request without a field Java requires.
func TestNumericHeaderFieldsAreRefused(t *testing.T) {
	f := startFront(t)
	if resp := f.invoke(t, rmq.CodeSendMessage, sendExt("Orders", "", nil), []byte("ok")); resp.Code != 0 {
		t.Fatalf("good send: code %d remark %q", resp.Code, resp.Remark)
	}
	for _, tc := range []struct {
		name  string
		code  int16
		ext   map[string]string
		want  int16
		field string
	}{
		{"send queueId", rmq.CodeSendMessage, sendExt("Orders", "", map[string]string{"queueId": "abc"}), rmq.RespMessageIllegal, "queueId"},
		{"send V2 e", codeSendMessageV2, map[string]string{"a": "pg", "b": "Orders", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "12x", "h": "0", "i": ""}, rmq.RespMessageIllegal, "bornTimestamp"},
		{"send sysFlag out of range", rmq.CodeSendMessage, sendExt("Orders", "", map[string]string{"sysFlag": "99999999999"}), rmq.RespMessageIllegal, "sysFlag"},
		{"pull queueOffset", rmq.CodePullMessage, map[string]string{"consumerGroup": "cg", "topic": "Orders", "queueId": "0", "queueOffset": "x",
			"maxMsgNums": "32", "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*", "expressionType": "TAG"}, rmq.RespSystemError, "queueOffset"},
		{"max offset queueId", rmq.CodeGetMaxOffset, map[string]string{"topic": "Orders", "queueId": "one"}, rmq.RespSystemError, "queueId"},
		{"pull queueId", rmq.CodePullMessage, map[string]string{"consumerGroup": "cg", "topic": "Orders", "queueId": "x", "queueOffset": "0",
			"maxMsgNums": "32", "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0", "expressionType": "TAG"}, rmq.RespSystemError, "queueId"},
		{"pull without topic", rmq.CodePullMessage, map[string]string{"consumerGroup": "cg", "queueId": "0", "queueOffset": "0",
			"maxMsgNums": "32", "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subVersion": "0"}, rmq.RespSystemError, "topic"},
		{"commit offset", rmq.CodeUpdateConsumerOffset, map[string]string{"consumerGroup": "cg", "topic": "Orders", "queueId": "0", "commitOffset": "1.5"}, rmq.RespSystemError, "commitOffset"},
		{"search timestamp", rmq.CodeSearchOffsetByTimestamp, map[string]string{"topic": "Orders", "queueId": "0", "timestamp": "today"}, rmq.RespSystemError, "timestamp"},
		{"send back delayLevel", rmq.CodeConsumerSendMsgBack, map[string]string{"group": "cg", "offset": "0", "delayLevel": "high"}, rmq.RespSystemError, "delayLevel"},
		{"view offset", rmq.CodeViewMessageByID, map[string]string{"offset": "0x10"}, rmq.RespSystemError, "offset"},
		{"reset timestamp", rmq.CodeInvokeBrokerToResetOffset, map[string]string{"topic": "Orders", "group": "cg", "timestamp": "-1s"}, rmq.RespSystemError, "timestamp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := f.invoke(t, tc.code, tc.ext, []byte("refused"))
			if resp.Code != tc.want || !strings.Contains(resp.Remark, "field "+tc.field+" ") {
				t.Fatalf("code %d remark %q, want code %d naming %s", resp.Code, resp.Remark, tc.want, tc.field)
			}
		})
	}
	// A last good send: once it is visible, a refused send stored before it
	// would be too.
	if resp := f.invoke(t, rmq.CodeSendMessage, sendExt("Orders", "", nil), []byte("ok")); resp.Code != 0 {
		t.Fatalf("last good send: code %d remark %q", resp.Code, resp.Remark)
	}
	if got := f.settledMaxOffset(t, "Orders", 2); got != "2" {
		t.Fatalf("queue 0 holds %s messages, want only the two good ones", got)
	}
}

// TestSeparatorInPropertyValueIsRefused: a value holding 0x02 or 0x01
// cannot rewrite other properties (here the tag); such sends, single or
// batched, are refused and store nothing.
func TestSeparatorInPropertyValueIsRefused(t *testing.T) {
	f := startFront(t)
	for _, tc := range []struct {
		name, props, want string
	}{
		{"injected tag", "TAGS\x01A\x02k\x01x\x02TAGS\x01injected\x02", `property "TAGS" appears twice`},
		{"injected tag, no tag of its own", "k\x01x\x02\x02KEYS\x01y", `without a name`},
		{"0x01 in a value", "k\x01a\x01b\x02", `value of property "k" contains 0x01`},
		{"empty name", "\x01v\x02", `without a name`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := f.invoke(t, rmq.CodeSendMessage, sendExt("Tags", tc.props, nil), []byte("x"))
			if resp.Code != rmq.RespMessageIllegal || !strings.Contains(resp.Remark, tc.want) {
				t.Fatalf("code %d remark %q, want %d with %q", resp.Code, resp.Remark, rmq.RespMessageIllegal, tc.want)
			}
		})
	}
	batch := message.EncodeBatch([]message.BatchItem{
		{Body: []byte("a"), Properties: "TAGS\x01A\x02"},
		{Body: []byte("b"), Properties: "TAGS\x01A\x02k\x01x\x02TAGS\x01injected\x02"},
	})
	resp := f.invoke(t, rmq.CodeSendBatchMessage, sendExt("Tags", "", map[string]string{"batch": "true"}), batch)
	if resp.Code != rmq.RespMessageIllegal || !strings.Contains(resp.Remark, "batch item 1") {
		t.Fatalf("batch: code %d remark %q", resp.Code, resp.Remark)
	}
	if resp := f.invoke(t, rmq.CodeSendMessage, sendExt("Tags", "TAGS\x01A\x02KEYS\x01k1 k2\x02", nil), []byte("ok")); resp.Code != 0 {
		t.Fatalf("well-formed properties: code %d remark %q", resp.Code, resp.Remark)
	}
	if got := f.settledMaxOffset(t, "Tags", 1); got != "1" {
		t.Fatalf("queue 0 of Tags holds %s messages, want only the well-formed one", got)
	}
}

// TestPopMessageCodeOverRemoting: RocketMQ 5's POP_MESSAGE (200050) in a
// JSON header, which int16 cannot hold, as a Java client writes it, is
// served by the broker (here: the topic does not exist, code 17 naming
// it; it used to be REQUEST_CODE_NOT_SUPPORTED, and before that the
// connection was closed as a malformed frame), and its connection serves
// the next request.
func TestPopMessageCodeOverRemoting(t *testing.T) {
	f := startFront(t)
	nc, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	header := `{"code":200050,"language":"JAVA","version":401,"opaque":41,"flag":0,"extFields":{"consumerGroup":"g","topic":"T","queueId":"-1","maxMsgNums":"32","invisibleTime":"60000","pollTime":"0","bornTime":"1","initMode":"0"}}`
	frame := binary.BigEndian.AppendUint32(nil, uint32(4+len(header)))
	frame = binary.BigEndian.AppendUint32(frame, uint32(len(header)))
	frame = append(frame, header...)
	if _, err := nc.Write(frame); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(nc)
	resp, err := remoting.ReadFrame(br, 0)
	if err != nil {
		t.Fatalf("no answer to code 200050: %v", err)
	}
	if resp.Code != rmq.RespTopicNotExist || resp.Opaque != 41 || !strings.Contains(resp.Remark, `topic "T"`) {
		t.Fatalf("answer %+v", resp)
	}
	next := remoting.NewRequest(rmq.CodeGetMaxOffset, map[string]string{"topic": "T", "queueId": "0"}, nil)
	next.Opaque = 42
	enc, err := remoting.EncodeFrame(nil, next)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(enc); err != nil {
		t.Fatal(err)
	}
	if resp, err := remoting.ReadFrame(br, 0); err != nil || resp.Opaque != 42 || resp.Code != 0 {
		t.Fatalf("next request on the connection: %+v, %v", resp, err)
	}
}

// TestSendTypesThe4xFlags: the front turns the 4.x protocol's transaction
// flag (the prepared sysflag) and delay properties into the broker's typed
// fields: a delay property that does not parse is refused naming it (for
// a batch item too); a prepared send is a half and a delayed one waits in
// the timer, so neither is in the queue when a plain send after them is.
func TestSendTypesThe4xFlags(t *testing.T) {
	f := startFront(t)
	for _, tc := range []struct {
		name  string
		code  int16
		ext   map[string]string
		body  []byte
		field string
	}{
		{"deliver time", rmq.CodeSendMessage, sendExt("Flags", "TIMER_DELIVER_MS\x01soon\x02", nil), []byte("x"), "TIMER_DELIVER_MS"},
		{"relative delay", codeSendMessageV2, map[string]string{"a": "pg", "b": "Flags", "e": "0", "i": "TIMER_DELAY_SEC\x01-1\x02"}, []byte("x"), "TIMER_DELAY_SEC"},
		{"batch item", rmq.CodeSendBatchMessage, sendExt("Flags", "", map[string]string{"batch": "true"}), message.EncodeBatch([]message.BatchItem{
			{Body: []byte("a")}, {Body: []byte("b"), Properties: "TIMER_DELAY_MS\x01x\x02"}}), "TIMER_DELAY_MS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := f.invoke(t, tc.code, tc.ext, tc.body)
			if resp.Code != rmq.RespMessageIllegal || !strings.Contains(resp.Remark, "property "+tc.field+" ") {
				t.Fatalf("code %d remark %q, want %d naming %s", resp.Code, resp.Remark, rmq.RespMessageIllegal, tc.field)
			}
		})
	}
	half := sendExt("Flags", "UNIQ_KEY\x01TX-1\x02PGROUP\x01pg\x02", map[string]string{"sysFlag": strconv.Itoa(int(message.SysFlagTxPrepared))})
	if resp := f.invoke(t, rmq.CodeSendMessage, half, []byte("half")); resp.Code != 0 {
		t.Fatalf("prepared send: code %d remark %q", resp.Code, resp.Remark)
	}
	if resp := f.invoke(t, rmq.CodeSendMessage, sendExt("Flags", "DELAY\x013\x02", nil), []byte("later")); resp.Code != 0 {
		t.Fatalf("delayed send: code %d remark %q", resp.Code, resp.Remark)
	}
	if resp := f.invoke(t, rmq.CodeSendMessage, sendExt("Flags", "", nil), []byte("now")); resp.Code != 0 {
		t.Fatalf("plain send: code %d remark %q", resp.Code, resp.Remark)
	}
	if got := f.settledMaxOffset(t, "Flags", 1); got != "1" {
		t.Fatalf("queue 0 of Flags holds %s messages, want only the plain one", got)
	}
}
