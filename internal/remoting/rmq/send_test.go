package rmq

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/remoting"
)

func sampleSendHeader() SendHeader {
	return SendHeader{
		ProducerGroup: "pg", Topic: "Orders", DefaultTopic: "TBW102", DefaultTopicQueueNums: 8,
		QueueID: 3, SysFlag: message.SysFlagCompressed, BornTimestamp: 1700000000123, Flag: 7,
		Properties: "UNIQ_KEY\x01AC11\x02WAIT\x01true\x02", ReconsumeTimes: 2, UnitMode: true,
		MaxReconsumeTimes: 16, BrokerName: "broker-a",
	}
}

// wire sends c through the frame codec in both header serialisations and
// returns what a server decodes.
func wire(t testing.TB, c *remoting.Command) []*remoting.Command {
	var out []*remoting.Command
	for _, ser := range []byte{remoting.SerializeJSON, remoting.SerializeRocketMQ} {
		c.SerializeType = ser
		buf, err := remoting.EncodeFrame(nil, c)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := remoting.DecodeFrame(buf, 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, got)
	}
	return out
}

func TestSendHeaderRoundTrip(t *testing.T) {
	for _, batch := range []bool{false, true} {
		h := sampleSendHeader()
		h.Batch = batch
		c := EncodeSendHeader(h)
		want := CodeSendMessageV2
		if batch {
			want = CodeSendBatchMessage
		}
		if c.Code != want || c.Ext("b") != "Orders" || c.Ext("m") != btoa(batch) {
			t.Fatalf("batch %v: code %d, b=%q m=%q", batch, c.Code, c.Ext("b"), c.Ext("m"))
		}
		for _, got := range append(wire(t, c), c) {
			back, err := DecodeSendHeader(got)
			if err != nil || back != h {
				t.Fatalf("batch %v: decoded %+v, %v; want %+v", batch, back, err, h)
			}
			if back.IsBatch(got.Code) != batch {
				t.Fatalf("IsBatch(%d) = %v", got.Code, !batch)
			}
		}
	}
	// A SEND_BATCH_MESSAGE is a batch whatever its m field says.
	h := sampleSendHeader()
	if !h.IsBatch(CodeSendBatchMessage) || h.IsBatch(CodeSendMessage) {
		t.Fatal("IsBatch does not follow the code")
	}
}

// TestSendHeaderV1Names: SEND_MESSAGE's long names decode like the V2
// letters.
func TestSendHeaderV1Names(t *testing.T) {
	h := sampleSendHeader()
	c := remoting.NewRequest(CodeSendMessage, map[string]string{
		"producerGroup": h.ProducerGroup, "topic": h.Topic, "defaultTopic": h.DefaultTopic,
		"defaultTopicQueueNums": "8", "queueId": "3", "sysFlag": "1", "bornTimestamp": "1700000000123",
		"flag": "7", "properties": h.Properties, "reconsumeTimes": "2", "unitMode": "TRUE",
		"maxReconsumeTimes": "16", "batch": "false", "brokerName": "broker-a",
	}, nil)
	for _, got := range append(wire(t, c), c) {
		back, err := DecodeSendHeader(got)
		if err != nil || back != h {
			t.Fatalf("decoded %+v, %v; want %+v", back, err, h)
		}
	}
	// Absent fields are zero; an empty number is 0.
	back, err := DecodeSendHeader(remoting.NewRequest(CodeSendMessageV2, map[string]string{"b": "T", "e": ""}, nil))
	if err != nil || back != (SendHeader{Topic: "T"}) {
		t.Fatalf("sparse header: %+v, %v", back, err)
	}
}

// TestSendHeaderMalformedNumberNamesTheField: a number that does not
// parse fails the decode with a FieldError naming the V1 name, V2 letters
// included.
func TestSendHeaderMalformedNumberNamesTheField(t *testing.T) {
	for _, tc := range []struct{ key, value, field, bits string }{
		{"e", "x", "queueId", "32-bit"},
		{"queueId", "1.5", "queueId", "32-bit"},
		{"g", "12x", "bornTimestamp", "64-bit"},
		{"f", "99999999999", "sysFlag", "32-bit"},
		{"d", "-", "defaultTopicQueueNums", "32-bit"},
		{"h", "0x1", "flag", "32-bit"},
		{"j", "one", "reconsumeTimes", "32-bit"},
		{"l", " 16", "maxReconsumeTimes", "32-bit"},
	} {
		c := remoting.NewRequest(CodeSendMessageV2, nil, nil).AppendExt("b", "T").AppendExt(tc.key, tc.value)
		_, err := DecodeSendHeader(c)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field || fe.Value != tc.value ||
			!strings.Contains(err.Error(), "field "+tc.field+" ") || !strings.Contains(err.Error(), tc.bits) {
			t.Errorf("%s=%q: %v, want a FieldError naming %s (%s)", tc.key, tc.value, err, tc.field, tc.bits)
		}
	}
}

// TestAppendSendHeaderReusesTheRequest: a reused request carries only the
// new header.
func TestAppendSendHeaderReusesTheRequest(t *testing.T) {
	c := remoting.NewRequest(CodeSendMessageV2, nil, []byte("body"))
	AppendSendHeader(c, SendHeader{Topic: "A", QueueID: 1})
	h := sampleSendHeader()
	AppendSendHeader(c, h)
	n := 0
	c.EachExt(func(string, string) { n++ })
	back, err := DecodeSendHeader(c)
	if err != nil || back != h || n != 14 || string(c.Body) != "body" {
		t.Fatalf("reused: %+v, %v, %d fields, body %q", back, err, n, c.Body)
	}
}

func TestPrepared(t *testing.T) {
	for _, tc := range []struct {
		sys   int32
		props string
		want  bool
	}{
		{0, "", false},
		{message.SysFlagTxPrepared, "", true},
		{message.SysFlagTxPrepared | message.SysFlagCompressed, "", true},
		{message.SysFlagTxCommit, "", false},
		{message.SysFlagTxRollback, "", false},
		{0, "TRAN_MSG\x01true\x02", true},
		{0, "TRAN_MSG\x01TRUE\x02", true},
		{0, "TRAN_MSG\x01false\x02", false},
		{0, "TRAN_MSG\x01true\x02TRAN_MSG\x01no\x02", false}, // the last wins, as clients read it
	} {
		if got := Prepared(tc.sys, tc.props); got != tc.want {
			t.Errorf("Prepared(%#x, %q) = %v, want %v", tc.sys, tc.props, got, tc.want)
		}
	}
}

func TestPropertiesDelay(t *testing.T) {
	p := func(kv ...string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return message.EncodeProperties(m)
	}
	for _, tc := range []struct {
		props string
		want  message.Delay
	}{
		{"", message.Delay{}},
		{p("UNIQ_KEY", "U", "TAGS", "A"), message.Delay{}},
		{p("DELAY", "3"), message.Delay{Level: 3}},
		{p("DELAY", "0"), message.Delay{}},
		{p("DELAY", "-2"), message.Delay{}},
		{p("DELAY", "junk"), message.Delay{}},
		{p("DELAY", "99999999999"), message.Delay{Level: math.MaxInt32}},
		{p("TIMER_DELIVER_MS", "1700000000000"), message.Delay{AtMS: 1700000000000}},
		{p("TIMER_DELIVER_MS", "-5"), message.Delay{AtMS: -5}},
		{p("TIMER_DELIVER_MS", "0", "DELAY", "3"), message.Delay{}}, // the delivery time wins
		{p("TIMER_DELIVER_MS", ""), message.Delay{}},
		{p("TIMER_DELAY_SEC", "4"), message.Delay{After: 4 * time.Second}},
		{p("TIMER_DELAY_MS", "1500"), message.Delay{After: 1500 * time.Millisecond}},
		{p("TIMER_DELAY_SEC", "2", "TIMER_DELAY_MS", "9"), message.Delay{After: 2 * time.Second}},
		{p("TIMER_DELAY_SEC", "0", "DELAY", "3"), message.Delay{}},
		{p("TIMER_DELAY_SEC", "99999999999999"), message.Delay{After: math.MaxInt64}},
		{p("TIMER_DELIVER_MS", "7", "TIMER_DELAY_SEC", "4"), message.Delay{AtMS: 7}},
	} {
		got, err := PropertiesDelay(tc.props)
		if err != nil || got != tc.want {
			t.Errorf("PropertiesDelay(%q) = %+v, %v; want %+v", tc.props, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ props, key string }{
		{p("TIMER_DELIVER_MS", "soon"), "TIMER_DELIVER_MS"},
		{p("TIMER_DELAY_SEC", "-1"), "TIMER_DELAY_SEC"},
		{p("TIMER_DELAY_MS", "1e3"), "TIMER_DELAY_MS"},
	} {
		_, err := PropertiesDelay(tc.props)
		var pe *PropertyError
		if !errors.As(err, &pe) || pe.Key != tc.key || !strings.Contains(err.Error(), "property "+tc.key) {
			t.Errorf("PropertiesDelay(%q) = %v, want a PropertyError naming %s", tc.props, err, tc.key)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = PropertiesDelay("UNIQ_KEY\x01AC11\x02WAIT\x01true\x02") }); n != 0 {
		t.Fatalf("PropertiesDelay allocates %v times for properties without a delay", n)
	}
}

// TestDecodeSendHeaderDoesNotAllocate: the hot path decodes a header with
// no allocation of its own.
func TestDecodeSendHeaderDoesNotAllocate(t *testing.T) {
	c := EncodeSendHeader(sampleSendHeader())
	if n := testing.AllocsPerRun(100, func() { _, _ = DecodeSendHeader(c) }); n != 0 {
		t.Fatalf("DecodeSendHeader allocates %v times", n)
	}
}

// BenchmarkDecodeSendHeader: a typical V2 header (14 fields), as the
// server's lazy reader lists them.
func BenchmarkDecodeSendHeader(b *testing.B) {
	c := EncodeSendHeader(sampleSendHeader())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeSendHeader(c); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzDecodeSendHeader(f *testing.F) {
	f.Add(int16(CodeSendMessageV2), "pg", "Orders", "4", "0", "0", "1700000000123", "UNIQ_KEY\x01A\x02", "false")
	f.Add(int16(CodeSendBatchMessage), "", "T", "-1", "x", "99999999999", "12x", "", "true")
	f.Add(int16(CodeSendMessage), "p\x00g", "%RETRY%g", "", "-2147483648", "-1", "-9223372036854775808", "TRAN_MSG\x01true\x02DELAY\x013\x02", "TRUE")
	f.Fuzz(func(t *testing.T, code int16, group, topic, nums, queue, sys, born, props, batch string) {
		var c *remoting.Command
		if code == CodeSendMessage {
			c = remoting.NewRequest(code, map[string]string{"producerGroup": group, "topic": topic,
				"defaultTopicQueueNums": nums, "queueId": queue, "sysFlag": sys, "bornTimestamp": born,
				"properties": props, "batch": batch}, nil)
		} else {
			c = remoting.NewRequest(code, nil, nil).AppendExt("a", group).AppendExt("b", topic).
				AppendExt("d", nums).AppendExt("e", queue).AppendExt("f", sys).AppendExt("g", born).
				AppendExt("i", props).AppendExt("m", batch)
		}
		h, err := DecodeSendHeader(c)
		if err != nil {
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field == "" || fe.Missing {
				t.Fatalf("decode error %v is not a FieldError naming a malformed field", err)
			}
			return
		}
		if h.ProducerGroup != group || h.Topic != topic || h.Properties != props || h.Batch != (batch == "true") {
			t.Fatalf("decoded %+v from group %q topic %q props %q batch %q", h, group, topic, props, batch)
		}
		// What decodes encodes to the same header (V2), and through the
		// wire (JSON headers carry UTF-8 text only).
		again := []*remoting.Command{EncodeSendHeader(h)}
		if utf8.ValidString(group) && utf8.ValidString(topic) && utf8.ValidString(props) {
			again = append(again, wire(t, EncodeSendHeader(h))...)
		}
		for _, got := range again {
			back, err := DecodeSendHeader(got)
			if err != nil || back != h {
				t.Fatalf("round trip: %+v, %v; want %+v", back, err, h)
			}
		}
		_, _ = PropertiesDelay(props)
		_ = Prepared(h.SysFlag, props)
	})
}
