package brokerfront_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/daemon"
	"github.com/petrelmq/petrel/internal/daemon/daemontest"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// TestSendRefusesAMessageTypeTheTopicDoesNotTake: a 4.x send to a topic
// created with +message.type=NORMAL is typed from its properties as
// RocketMQ 5 types it; a delayed message, a sharding-keyed one and a
// transaction's half are refused with MESSAGE_ILLEGAL (what RocketMQ's
// proxy answers remoting clients) and a remark naming both types, and
// nothing of them is stored; a plain one is stored. With the check off
// (--topic-message-type-check=false) the delayed one is taken.
func TestSendRefusesAMessageTypeTheTopicDoesNotTake(t *testing.T) {
	create := func(f *front) {
		t.Helper()
		resp := f.invoke(t, rmq.CodeUpdateAndCreateTopic, map[string]string{"topic": "OnlyNormal", "readQueueNums": "1",
			"writeQueueNums": "1", "perm": "6", "attributes": "+message.type=NORMAL"}, nil)
		if resp.Code != 0 {
			t.Fatalf("create topic: code %d remark %q", resp.Code, resp.Remark)
		}
	}
	f := startFront(t)
	create(f)
	half := sendExt("OnlyNormal", "UNIQ_KEY\x01TX-1\x02PGROUP\x01pg\x02TRAN_MSG\x01true\x02", map[string]string{"sysFlag": strconv.Itoa(int(message.SysFlagTxPrepared))})
	for _, tc := range []struct {
		name, typ string
		code      int16
		ext       map[string]string
		body      []byte
	}{
		{"delay level", "DELAY", rmq.CodeSendMessage, sendExt("OnlyNormal", "DELAY\x013\x02", nil), []byte("x")},
		{"deliver time", "DELAY", codeSendMessageV2, map[string]string{"a": "pg", "b": "OnlyNormal", "e": "0", "i": "TIMER_DELAY_SEC\x0110\x02"}, []byte("x")},
		{"sharding key", "FIFO", rmq.CodeSendMessage, sendExt("OnlyNormal", "__SHARDINGKEY\x01order-1\x02", nil), []byte("x")},
		{"half", "TRANSACTION", rmq.CodeSendMessage, half, []byte("x")},
		{"batch item delayed", "DELAY", rmq.CodeSendBatchMessage, sendExt("OnlyNormal", "", map[string]string{"batch": "true"}), message.EncodeBatch([]message.BatchItem{
			{Body: []byte("a")}, {Body: []byte("b"), Properties: "DELAY\x012\x02"}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := f.invoke(t, tc.code, tc.ext, tc.body)
			want := `topic "OnlyNormal" accepts NORMAL messages only (its message.type), and this is a ` + tc.typ + " message"
			if resp.Code != rmq.RespMessageIllegal || !strings.Contains(resp.Remark, want) || !strings.Contains(resp.Remark, "message.type") {
				t.Fatalf("code %d remark %q; want %d (MESSAGE_ILLEGAL) with %q", resp.Code, resp.Remark, rmq.RespMessageIllegal, want)
			}
		})
	}
	if resp := f.invoke(t, rmq.CodeSendMessage, sendExt("OnlyNormal", "KEYS\x01k\x02", nil), []byte("plain")); resp.Code != 0 {
		t.Fatalf("plain send: code %d remark %q", resp.Code, resp.Remark)
	}
	if got := f.settledMaxOffset(t, "OnlyNormal", 1); got != "1" {
		t.Fatalf("OnlyNormal holds %s messages, want only the plain one", got)
	}

	c := daemontest.Start(t, func(cfg *daemon.BrokerConfig) { cfg.Broker.NoTopicMessageTypeCheck = true })
	cl := remoting.NewClient(remoting.ClientOptions{})
	t.Cleanup(func() { cl.Close() })
	off := &front{addr: c.Broker.Addr().String(), client: cl}
	create(off)
	if resp := off.invoke(t, rmq.CodeSendMessage, sendExt("OnlyNormal", "__SHARDINGKEY\x01order-1\x02", nil), []byte("fifo")); resp.Code != 0 {
		t.Fatalf("with the check off, a FIFO send to a NORMAL topic: code %d remark %q", resp.Code, resp.Remark)
	}
	if got := off.settledMaxOffset(t, "OnlyNormal", 1); got != "1" {
		t.Fatalf("with the check off OnlyNormal holds %s messages, want the FIFO one", got)
	}
}
