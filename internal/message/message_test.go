package message

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

var (
	hostV4     = netip.MustParseAddrPort("10.0.0.1:1234")
	hostV4b    = netip.MustParseAddrPort("192.168.7.9:10911")
	hostV6     = netip.MustParseAddrPort("[2001:db8::1]:10911")
	hostV6b    = netip.MustParseAddrPort("[fe80::1:2:3:4]:65535")
	hostMapped = netip.MustParseAddrPort("[::ffff:10.0.0.1]:1234")
)

// sample returns a message with every field set to a distinct value.
func sample(body, props string, born, store netip.AddrPort) *Message {
	return &Message{
		Topic:                     "TopicTest",
		QueueID:                   3,
		Flag:                      -7,
		QueueOffset:               1 << 40,
		PhysicalOffset:            1<<33 + 5,
		SysFlag:                   SysFlagTxPrepared,
		BornTimestamp:             1_700_000_000_123,
		BornHost:                  born,
		StoreTimestamp:            1_700_000_000_456,
		StoreHost:                 store,
		ReconsumeTimes:            2,
		PreparedTransactionOffset: 99,
		Body:                      []byte(body),
		Properties:                props,
	}
}

// sampleRecords returns encoded records that cover both host forms for
// both hosts, empty and non-empty bodies and properties.
func sampleRecords() map[string][]byte {
	props := "KEYS\x01k1 k2\x02TAGS\x01TagA\x02UNIQ_KEY\x01C0A80001000018B4AAC2\x02"
	return map[string][]byte{
		"v4-v4":       sample("hello", props, hostV4, hostV4b).Encode(),
		"v6-v4":       sample("hello", props, hostV6, hostV4b).Encode(),
		"v4-v6":       sample("hello", props, hostV4, hostV6).Encode(),
		"v6-v6":       sample("hello", props, hostV6b, hostV6).Encode(),
		"empty-body":  sample("", props, hostV4, hostV6).Encode(),
		"empty-props": sample("hello", "", hostV6, hostV4).Encode(),
		"empty-both":  sample("", "", hostV4, hostV4).Encode(),
	}
}

// recordsWithProps returns the sample records with non-empty properties.
func recordsWithProps(t *testing.T) map[string][]byte {
	t.Helper()
	out := make(map[string][]byte)
	for name, b := range sampleRecords() {
		if len(Record(b).Properties()) > 0 {
			out[name] = b
		}
	}
	if len(out) == 0 {
		t.Fatal("no sample record has properties")
	}
	return out
}

// TestEncodeLayout builds a record field by field from the table in doc.go
// and compares it with EncodeTo's output.
func TestEncodeLayout(t *testing.T) {
	m := &Message{
		Topic:                     "T_1",
		QueueID:                   3,
		Flag:                      7,
		QueueOffset:               11,
		PhysicalOffset:            13,
		SysFlag:                   SysFlagTxPrepared | SysFlagBornHostIPv6, // the born bit is wrong: the encoder fixes it
		BornTimestamp:             17,
		BornHost:                  netip.MustParseAddrPort("10.0.0.1:1234"),
		StoreTimestamp:            19,
		StoreHost:                 netip.MustParseAddrPort("[2001:db8::1]:10911"),
		ReconsumeTimes:            2,
		PreparedTransactionOffset: 23,
		Body:                      []byte("hi"),
		Properties:                "a\x01b\x02",
	}
	be := binary.BigEndian
	var w []byte
	w = be.AppendUint32(w, 0) // TOTALSIZE, patched below
	w = be.AppendUint32(w, 0xDAA320A7)
	w = be.AppendUint32(w, BodyChecksum([]byte("hi")))
	w = be.AppendUint32(w, 3)
	w = be.AppendUint32(w, 7)
	w = be.AppendUint64(w, 11)
	w = be.AppendUint64(w, 13)
	w = be.AppendUint32(w, 0x4|0x20)
	w = be.AppendUint64(w, 17)
	w = append(w, 10, 0, 0, 1)
	w = be.AppendUint32(w, 1234)
	w = be.AppendUint64(w, 19)
	w = append(w, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)
	w = be.AppendUint32(w, 10911)
	w = be.AppendUint32(w, 2)
	w = be.AppendUint64(w, 23)
	w = be.AppendUint32(w, 2)
	w = append(w, "hi"...)
	w = append(w, 3)
	w = append(w, "T_1"...)
	w = be.AppendUint16(w, 4)
	w = append(w, "a\x01b\x02"...)
	be.PutUint32(w, uint32(len(w)))

	if got := m.Encode(); !bytes.Equal(got, w) {
		t.Fatalf("Encode:\n got %x\nwant %x", got, w)
	}
	if m.EncodedLen() != len(w) {
		t.Fatalf("EncodedLen = %d, want %d", m.EncodedLen(), len(w))
	}
	// BodyChecksum is CRC-32 IEEE masked to 31 bits; "hi" has a known CRC.
	if got, want := BodyChecksum([]byte("hi")), uint32(0xD8932AAC&0x7FFFFFFF); got != want {
		t.Fatalf("BodyChecksum(hi) = %#x, want %#x", got, want)
	}
	// The smallest record: IPv4 hosts, empty body, one-byte topic, no properties.
	min := (&Message{Topic: "T"}).EncodedLen()
	if min != MinRecordLen+1 {
		t.Fatalf("EncodedLen of the smallest message = %d, want MinRecordLen+1 = %d", min, MinRecordLen+1)
	}
}

func TestRoundTrip(t *testing.T) {
	topic127 := strings.Repeat("Ab0%|_-", 19)[:MaxTopicLen]
	cases := []struct {
		name string
		m    *Message
		// Expected host forms after decoding (the encoder unmaps
		// IPv4-mapped addresses and writes 0.0.0.0 for no address).
		born, store netip.AddrPort
		bornV6      bool
		storeV6     bool
	}{
		{"v4-v4", sample("body", "A\x01B\x02", hostV4, hostV4b), hostV4, hostV4b, false, false},
		{"v6-v4", sample("body", "A\x01B\x02", hostV6, hostV4b), hostV6, hostV4b, true, false},
		{"v4-v6", sample("body", "A\x01B\x02", hostV4, hostV6), hostV4, hostV6, false, true},
		{"v6-v6", sample("body", "A\x01B\x02", hostV6b, hostV6), hostV6b, hostV6, true, true},
		{"mapped-born", sample("body", "", hostMapped, hostV6), hostV4, hostV6, false, true},
		{"mapped-store", sample("body", "", hostV6, hostMapped), hostV6, hostV4, true, false},
		{"no-hosts", sample("body", "", netip.AddrPort{}, netip.AddrPort{}),
			netip.MustParseAddrPort("0.0.0.0:0"), netip.MustParseAddrPort("0.0.0.0:0"), false, false},
		{"empty-body", sample("", "A\x01B\x02", hostV4, hostV6), hostV4, hostV6, false, true},
		{"empty-props", sample("body", "", hostV4, hostV6), hostV4, hostV6, false, true},
		{"empty-both", sample("", "", hostV6, hostV4), hostV6, hostV4, true, false},
		{"empty-value", sample("x", "A\x01\x02", hostV4, hostV4), hostV4, hostV4, false, false},
		{"topic-127", func() *Message { m := sample("b", "", hostV4, hostV4); m.Topic = topic127; return m }(),
			hostV4, hostV4, false, false},
		{"big-body", sample(strings.Repeat("x", 70000), "A\x01B\x02", hostV4, hostV4), hostV4, hostV4, false, false},
		{"host-bits-preset", func() *Message {
			m := sample("b", "", hostV4, hostV4)
			m.SysFlag = SysFlagBornHostIPv6 | SysFlagStoreHostIPv6 | SysFlagCompressed
			return m
		}(), hostV4, hostV4, false, false},
		{"crc-given", func() *Message {
			m := sample("body", "", hostV4, hostV4)
			m.BodyCRC = BodyChecksum([]byte("body"))
			return m
		}(), hostV4, hostV4, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.m.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			b := tc.m.Encode()
			if len(b) != tc.m.EncodedLen() {
				t.Fatalf("len(Encode) = %d, EncodedLen = %d", len(b), tc.m.EncodedLen())
			}
			// EncodeTo into a larger buffer writes only EncodedLen bytes.
			buf := bytes.Repeat([]byte{0xEE}, len(b)+10)
			if n := tc.m.EncodeTo(buf); n != len(b) || !bytes.Equal(buf[:n], b) || buf[n] != 0xEE {
				t.Fatalf("EncodeTo wrote %d bytes, differing from Encode or past the end", n)
			}
			if n, err := Check(b); n != len(b) || err != nil {
				t.Fatalf("Check = %d, %v; want %d, nil", n, err, len(b))
			}
			got, n, err := Decode(append(b, 1, 2, 3))
			if err != nil || n != len(b) {
				t.Fatalf("Decode = %d, %v; want %d, nil", n, err, len(b))
			}
			sys := tc.m.SysFlag &^ (SysFlagBornHostIPv6 | SysFlagStoreHostIPv6)
			if tc.bornV6 {
				sys |= SysFlagBornHostIPv6
			}
			if tc.storeV6 {
				sys |= SysFlagStoreHostIPv6
			}
			want := *tc.m
			want.SysFlag = sys
			want.BornHost, want.StoreHost = tc.born, tc.store
			want.BodyCRC = BodyChecksum(tc.m.Body)
			if want.Body == nil {
				want.Body = []byte{}
			}
			assertMessage(t, got, &want)
			if again := got.Encode(); !bytes.Equal(again, b) {
				t.Fatalf("re-encoding the decoded message differs:\n got %x\nwant %x", again, b)
			}
			assertRecordMatches(t, Record(b), got)
		})
	}
}

func assertMessage(t *testing.T, got, want *Message) {
	t.Helper()
	if got.Topic != want.Topic || got.QueueID != want.QueueID || got.Flag != want.Flag ||
		got.QueueOffset != want.QueueOffset || got.PhysicalOffset != want.PhysicalOffset ||
		got.SysFlag != want.SysFlag || got.BornTimestamp != want.BornTimestamp ||
		got.BornHost != want.BornHost || got.StoreTimestamp != want.StoreTimestamp ||
		got.StoreHost != want.StoreHost || got.ReconsumeTimes != want.ReconsumeTimes ||
		got.PreparedTransactionOffset != want.PreparedTransactionOffset ||
		!bytes.Equal(got.Body, want.Body) || got.Properties != want.Properties || got.BodyCRC != want.BodyCRC {
		t.Fatalf("decoded message differs:\n got %+v\nwant %+v", *got, *want)
	}
}

// assertRecordMatches checks every Record accessor against a decoded message.
func assertRecordMatches(t *testing.T, r Record, m *Message) {
	t.Helper()
	type field struct {
		name      string
		got, want any
	}
	for _, f := range []field{
		{"TotalSize", int(r.TotalSize()), len(r)},
		{"BodyCRC", r.BodyCRC(), m.BodyCRC},
		{"QueueID", r.QueueID(), m.QueueID},
		{"Flag", r.Flag(), m.Flag},
		{"QueueOffset", r.QueueOffset(), m.QueueOffset},
		{"PhysicalOffset", r.PhysicalOffset(), m.PhysicalOffset},
		{"SysFlag", r.SysFlag(), m.SysFlag},
		{"BornTimestamp", r.BornTimestamp(), m.BornTimestamp},
		{"BornHost", r.BornHost(), m.BornHost},
		{"StoreTimestamp", r.StoreTimestamp(), m.StoreTimestamp},
		{"StoreHost", r.StoreHost(), m.StoreHost},
		{"ReconsumeTimes", r.ReconsumeTimes(), m.ReconsumeTimes},
		{"PreparedTransactionOffset", r.PreparedTransactionOffset(), m.PreparedTransactionOffset},
		{"Topic", string(r.Topic()), m.Topic},
		{"Body", string(r.Body()), string(m.Body)},
		{"Properties", string(r.Properties()), m.Properties},
	} {
		if f.got != f.want {
			t.Errorf("Record.%s = %v, Decode gave %v", f.name, f.got, f.want)
		}
	}
	for k, v := range ParseProperties(m.Properties) {
		if got, ok := r.Property(k); !ok || string(got) != v {
			t.Errorf("Record.Property(%q) = %q, %v; want %q, true", k, got, ok, v)
		}
	}
	if _, ok := r.Property("NO_SUCH_KEY"); ok {
		t.Errorf("Record.Property found a missing key")
	}
}

func TestDecodeCopies(t *testing.T) {
	b := sample("body", "A\x01B\x02", hostV4, hostV6).Encode()
	m, _, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 0
	}
	if string(m.Body) != "body" || m.Topic != "TopicTest" || m.Properties != "A\x01B\x02" {
		t.Fatalf("Decode result changed with its input: %+v", *m)
	}
}

func TestCheckPrefixIsShort(t *testing.T) {
	for name, b := range sampleRecords() {
		for k := 0; k < len(b); k++ {
			if n, err := Check(b[:k]); !errors.Is(err, ErrShort) {
				t.Fatalf("%s: Check(first %d of %d bytes) = %d, %v; want ErrShort", name, k, len(b), n, err)
			}
			if m, _, err := Decode(b[:k]); m != nil || !errors.Is(err, ErrShort) {
				t.Fatalf("%s: Decode(first %d bytes) = %v, %v; want nil, ErrShort", name, k, m, err)
			}
		}
		if n, err := Check(b); n != len(b) || err != nil {
			t.Fatalf("%s: Check(whole) = %d, %v; want %d, nil", name, n, err, len(b))
		}
	}
}

// TestCheckTornTail simulates a crash that left a record's first k bytes
// and zeros after them: the result must never be accepted.
func TestCheckTornTail(t *testing.T) {
	for name, b := range recordsWithProps(t) {
		for k := 0; k < len(b); k++ {
			torn := make([]byte, len(b)+16) // zeros run on past the record too
			copy(torn, b[:k])
			n, err := Check(torn[:len(b)])
			if err == nil {
				t.Fatalf("%s: record cut at %d of %d and padded with zeros was accepted (n=%d)", name, k, len(b), n)
			}
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrShort) {
				t.Fatalf("%s: cut at %d: err = %v, want ErrCorrupt or ErrShort", name, k, err)
			}
			if _, err := Check(torn); err == nil {
				t.Fatalf("%s: cut at %d with extra zeros accepted", name, k)
			}
		}
	}
}

// corrupt returns a copy of a valid record changed by fn.
func corrupt(fn func(b []byte)) []byte {
	b := sample("hello", "A\x01B\x02", hostV4, hostV6).Encode()
	fn(b)
	return b
}

func TestCheckCorrupt(t *testing.T) {
	be := binary.BigEndian
	// Offsets in the sample record (IPv4 born host, IPv6 store host).
	const (
		bornHostAt  = 48
		storeHostAt = 48 + 8 + 8
		bodyLenAt   = storeHostAt + 20 + 12
		bodyAt      = bodyLenAt + 4
		topicLenAt  = bodyAt + len("hello")
		topicAt     = topicLenAt + 1
		propsLenAt  = topicAt + len("TopicTest")
	)
	withTopic := func(topic string) []byte {
		m := sample("hello", "A\x01B\x02", hostV4, hostV6)
		m.Topic = topic
		return m.Encode() // bypasses Validate on purpose
	}
	cases := []struct {
		name string
		b    []byte
	}{
		{"bad magic", corrupt(func(b []byte) { b[7] ^= 1 })},
		{"V2 magic", corrupt(func(b []byte) { be.PutUint32(b[4:], 0xDAA320AB) })},
		{"bad CRC", corrupt(func(b []byte) { b[8] ^= 0x40 })},
		{"body changed", corrupt(func(b []byte) { b[bodyAt] ^= 1 })},
		{"CRC high bit", corrupt(func(b []byte) { b[8] |= 0x80 })},
		{"topic space", corrupt(func(b []byte) { b[topicAt+2] = ' ' })},
		{"topic dot", corrupt(func(b []byte) { b[topicAt] = '.' })},
		{"topic zero", corrupt(func(b []byte) { b[topicAt+8] = 0 })},
		{"topic non-ASCII", corrupt(func(b []byte) { b[topicAt] = 0xC3 })},
		{"empty topic", withTopic("")},
		{"topic 128", withTopic(strings.Repeat("t", 128))},
		{"topic 255", withTopic(strings.Repeat("t", 255))},
		{"props without separator", corrupt(func(b []byte) { b[len(b)-1] = 'x' })},
		{"TOTALSIZE one more", corrupt(func(b []byte) { be.PutUint32(b, be.Uint32(b)+1) })},
		{"TOTALSIZE one less", corrupt(func(b []byte) { be.PutUint32(b, be.Uint32(b)-1) })},
		{"TOTALSIZE negative", corrupt(func(b []byte) { be.PutUint32(b, 0x80000000) })},
		{"TOTALSIZE below minimum", corrupt(func(b []byte) { be.PutUint32(b, MinRecordLen-1) })},
		{"BODYLENGTH negative", corrupt(func(b []byte) { be.PutUint32(b[bodyLenAt:], 0xFFFFFFFF) })},
		{"BODYLENGTH huge", corrupt(func(b []byte) { be.PutUint32(b[bodyLenAt:], 1<<30) })},
		{"BODYLENGTH one more", corrupt(func(b []byte) { be.PutUint32(b[bodyLenAt:], 6) })},
		{"PROPERTIESLENGTH negative", corrupt(func(b []byte) { be.PutUint16(b[propsLenAt:], 0x8000) })},
		{"PROPERTIESLENGTH one less", corrupt(func(b []byte) { be.PutUint16(b[propsLenAt:], 3) })},
		{"born flag flipped", corrupt(func(b []byte) { b[39] ^= byte(SysFlagBornHostIPv6) })},
		{"store flag cleared", corrupt(func(b []byte) { b[39] &^= byte(SysFlagStoreHostIPv6) })},
		{"born port > 65535", corrupt(func(b []byte) { b[bornHostAt+4] = 1 })},
		{"store port > 65535", corrupt(func(b []byte) { b[storeHostAt+16+1] = 1 })},
		{"IPv4-mapped under IPv6 flag", corrupt(func(b []byte) {
			copy(b[storeHostAt:], []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 0, 0, 1})
		})},
		{"zeros", make([]byte, 200)},
		{"blank with size < 8", func() []byte {
			b := make([]byte, 16)
			be.PutUint32(b, 7)
			be.PutUint32(b[4:], BlankMagic)
			return b
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n, err := Check(tc.b)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Check = %d, %v; want ErrCorrupt", n, err)
			}
			if m, _, err := Decode(tc.b); m != nil || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decode = %v, %v; want nil, ErrCorrupt", m, err)
			}
		})
	}
}

func TestCheckBlank(t *testing.T) {
	for _, n := range []int{8, 9, 100, 4096} {
		buf := bytes.Repeat([]byte{0xAB}, n+5)
		EncodeBlank(buf, n)
		if !bytes.Equal(buf[8:n], make([]byte, n-8)) || buf[n] != 0xAB {
			t.Fatalf("EncodeBlank(%d) did not zero exactly bytes 8..%d", n, n)
		}
		got, err := Check(buf)
		if !errors.Is(err, ErrBlank) || got != n {
			t.Fatalf("Check(blank %d) = %d, %v; want %d, ErrBlank", n, got, err, n)
		}
		// The filler's length is known from its first 8 bytes alone.
		if got, err := Check(buf[:8]); !errors.Is(err, ErrBlank) || got != n {
			t.Fatalf("Check(first 8 bytes of blank %d) = %d, %v; want %d, ErrBlank", n, got, err, n)
		}
		if _, err := Check(buf[:7]); !errors.Is(err, ErrShort) {
			t.Fatalf("Check(7 bytes of blank) = %v, want ErrShort", err)
		}
		if m, gotN, err := Decode(buf); m != nil || gotN != n || !errors.Is(err, ErrBlank) {
			t.Fatalf("Decode(blank) = %v, %d, %v; want nil, %d, ErrBlank", m, gotN, err, n)
		}
	}
}

func TestRecordPut(t *testing.T) {
	for name, b := range sampleRecords() {
		r := Record(b)
		r.PutQueueOffset(-12345)
		r.PutPhysicalOffset(1<<62 + 1)
		r.PutStoreTimestamp(987654321)
		// These fields are outside the CRC, so the record stays valid.
		if n, err := Check(b); err != nil || n != len(b) {
			t.Fatalf("%s: Check after Put* = %d, %v", name, n, err)
		}
		m, _, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if m.QueueOffset != -12345 || m.PhysicalOffset != 1<<62+1 || m.StoreTimestamp != 987654321 {
			t.Fatalf("%s: after Put*: queue offset %d, physical offset %d, store time %d",
				name, m.QueueOffset, m.PhysicalOffset, m.StoreTimestamp)
		}
		// Neighbouring fields are untouched.
		want := sample("", "", hostV4, hostV4)
		if m.SysFlag&^(SysFlagBornHostIPv6|SysFlagStoreHostIPv6) != want.SysFlag ||
			m.BornTimestamp != want.BornTimestamp || m.Flag != want.Flag || m.ReconsumeTimes != want.ReconsumeTimes {
			t.Fatalf("%s: Put* changed other fields: %+v", name, *m)
		}
		assertRecordMatches(t, r, m)
	}
}

func TestValidate(t *testing.T) {
	ok := func() *Message { return sample("b", "A\x01B\x02", hostV4, hostV4) }
	cases := []struct {
		name   string
		modify func(m *Message)
		valid  bool
	}{
		{"ok", func(m *Message) {}, true},
		{"no properties", func(m *Message) { m.Properties = "" }, true},
		{"topic 127", func(m *Message) { m.Topic = strings.Repeat("a", 127) }, true},
		{"topic specials", func(m *Message) { m.Topic = "%RETRY%group|x_y-Z9" }, true},
		{"props at limit", func(m *Message) { m.Properties = strings.Repeat("a", MaxPropertiesLen-1) + "\x02" }, true},
		{"empty topic", func(m *Message) { m.Topic = "" }, false},
		{"topic 128", func(m *Message) { m.Topic = strings.Repeat("a", 128) }, false},
		{"topic with space", func(m *Message) { m.Topic = "a b" }, false},
		{"topic with slash", func(m *Message) { m.Topic = "a/b" }, false},
		{"props over limit", func(m *Message) { m.Properties = strings.Repeat("a", MaxPropertiesLen) + "\x02" }, false},
		{"props without final separator", func(m *Message) { m.Properties = "A\x01B" }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := ok()
			tc.modify(m)
			err := m.Validate()
			if (err == nil) != tc.valid {
				t.Fatalf("Validate = %v, want valid=%v", err, tc.valid)
			}
			// Every message that passes Validate encodes to a record Check
			// accepts; the ones that fail for content would be rejected.
			b := m.Encode()
			n, cerr := Check(b)
			if tc.valid && (cerr != nil || n != len(b)) {
				t.Fatalf("valid message encodes to a record Check rejects: %d, %v", n, cerr)
			}
			if !tc.valid && cerr == nil && len(m.Properties) <= MaxPropertiesLen {
				t.Fatalf("invalid message encodes to a record Check accepts")
			}
		})
	}
}

func TestValidTopic(t *testing.T) {
	for _, s := range []string{"a", "Z", "0", "%", "|", "_", "-", "TopicTest", "%DLQ%g"} {
		if !ValidTopic(s) || !ValidTopic([]byte(s)) {
			t.Errorf("ValidTopic(%q) = false", s)
		}
	}
	for _, s := range []string{"a.b", "a b", "a/b", "é", "a\x00", "a:b", "a\x02"} {
		if ValidTopic(s) || ValidTopic([]byte(s)) {
			t.Errorf("ValidTopic(%q) = true", s)
		}
	}
}

func TestAllocs(t *testing.T) {
	m := sample(strings.Repeat("x", 1000), "TAGS\x01TagA\x02KEYS\x01a b\x02", hostV6, hostV4)
	buf := make([]byte, m.EncodedLen())
	rec := Record(m.Encode())
	// Longer than 32 bytes: shorter []byte-to-string conversions may use a
	// stack buffer and hide an allocation.
	tag := []byte(strings.Repeat("TagA", 20))
	wide := []byte(strings.Repeat("日本😀\xff", 8))
	var sink int64
	check := func(name string, fn func()) {
		t.Helper()
		if n := testing.AllocsPerRun(100, fn); n != 0 {
			t.Errorf("%s allocates %v times per run, want 0", name, n)
		}
	}
	check("EncodeTo", func() { m.EncodeTo(buf) })
	check("Check", func() {
		if _, err := Check(rec); err != nil {
			t.Fatal(err)
		}
	})
	check("Record accessors", func() {
		sink += int64(rec.TotalSize()) + int64(rec.BodyCRC()) + int64(rec.QueueID()) + int64(rec.Flag()) +
			rec.QueueOffset() + rec.PhysicalOffset() + int64(rec.SysFlag()) + rec.BornTimestamp() +
			int64(rec.BornHost().Port()) + rec.StoreTimestamp() + int64(rec.StoreHost().Port()) +
			int64(rec.ReconsumeTimes()) + rec.PreparedTransactionOffset() +
			int64(len(rec.Body())+len(rec.Topic())+len(rec.Properties()))
	})
	check("Record.Property", func() {
		v, _ := rec.Property(PropertyKeys)
		sink += int64(len(v))
	})
	check("Record Put*", func() {
		rec.PutQueueOffset(1)
		rec.PutPhysicalOffset(2)
		rec.PutStoreTimestamp(3)
	})
	check("PropertyOf", func() {
		v, _ := PropertyOf(m.Properties, PropertyTags)
		sink += int64(len(v))
	})
	check("TagHash([]byte)", func() { sink += TagHash(tag) })
	check("TagHash(non-ASCII []byte)", func() { sink += TagHash(wide) })
	check("Keys([]byte)", func() { Keys(tag, func(k []byte) { sink += int64(len(k)) }) })
	_ = sink
}
