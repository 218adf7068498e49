package message

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// javaTrace joins records the way Java's TraceDataEncoder writes them:
// fields separated by 0x01, each record ended by 0x02.
func javaTrace(records ...[]string) []byte {
	var b strings.Builder
	for _, r := range records {
		b.WriteString(strings.Join(r, "\x01"))
		b.WriteByte(0x02)
	}
	return []byte(b.String())
}

// The records below are laid out field by field as the Java 4.9.8 client's
// encoderFromContextBean writes them (and, where marked, older or cloud
// clients).
var (
	javaPub = []string{"Pub", "1700000000000", "DefaultRegion", "OrderProducers", "Orders", "7F0000010B5818B4AAC2", "TagA",
		"order-1 order-2", "127.0.0.1:10911", "5", "3", "0", "7F00000100002A9F0000000000000F3C", "true"}
	javaSubBefore = []string{"SubBefore", "1700000000100", "DefaultRegion", "OrderConsumers", "REQ1", "7F0000010B5818B4AAC2", "2", "order-1 order-2"}
	javaSubAfter  = []string{"SubAfter", "REQ1", "7F0000010B5818B4AAC2", "7", "true", "order-1 order-2", "0", "1700000000110", "OrderConsumers"}
	javaEndTx     = []string{"EndTransaction", "1700000000050", "DefaultRegion", "TxProducers", "Orders", "7F0000010B5818B4AAC2", "null",
		"null", "127.0.0.1:10911", "1", "null", "COMMIT_MESSAGE", "false"}
)

func TestDecodeTraceReadsJavaRecords(t *testing.T) {
	got, err := DecodeTrace(javaTrace(javaPub, javaSubBefore, javaSubAfter, javaEndTx))
	if err != nil {
		t.Fatal(err)
	}
	want := []TraceRecord{
		{Type: TracePub, Timestamp: 1700000000000, RegionID: "DefaultRegion", Group: "OrderProducers", Topic: "Orders",
			MsgID: "7F0000010B5818B4AAC2", Tags: "TagA", Keys: "order-1 order-2", StoreHost: "127.0.0.1:10911", BodyLength: 5,
			CostMS: 3, MsgType: 0, OffsetMsgID: "7F00000100002A9F0000000000000F3C", Success: true},
		{Type: TraceSubBefore, Timestamp: 1700000000100, RegionID: "DefaultRegion", Group: "OrderConsumers", RequestID: "REQ1",
			MsgID: "7F0000010B5818B4AAC2", RetryTimes: 2, Keys: "order-1 order-2", Success: true},
		{Type: TraceSubAfter, RequestID: "REQ1", MsgID: "7F0000010B5818B4AAC2", CostMS: 7, Success: true, Keys: "order-1 order-2",
			Timestamp: 1700000000110, Group: "OrderConsumers"},
		{Type: TraceEndTransaction, Timestamp: 1700000000050, RegionID: "DefaultRegion", Group: "TxProducers", Topic: "Orders",
			MsgID: "7F0000010B5818B4AAC2", StoreHost: "127.0.0.1:10911", MsgType: 1, TransactionState: "COMMIT_MESSAGE", Success: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded\n%+v\nwant\n%+v", got, want)
	}
	if TraceMsgTypeName(got[3].MsgType) != "Trans_Msg_Half" || TraceMsgTypeName(9) != "9" {
		t.Fatalf("msg type names %q %q", TraceMsgTypeName(got[3].MsgType), TraceMsgTypeName(9))
	}
	if TraceContextName(4) != "FAILED" || TraceContextName(-1) != "-1" {
		t.Fatalf("context names %q %q", TraceContextName(4), TraceContextName(-1))
	}
}

func TestDecodeTraceReadsOlderAndCloudLayouts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fields []string
		check  func(r TraceRecord) bool
	}{
		// A Pub without offsetMsgId: the 13th field is success.
		{"pub 12 fields", javaPub[:12:12], func(r TraceRecord) bool { return r.Success && r.OffsetMsgID == "" }},
		{"pub 13 fields failed", append(javaPub[:12:12], "false"), func(r TraceRecord) bool { return !r.Success && r.OffsetMsgID == "" }},
		{"pub with client host", append(javaPub[:14:14], "10.0.0.9"), func(r TraceRecord) bool {
			return r.ClientHost == "10.0.0.9" && r.Success && r.OffsetMsgID != ""
		}},
		{"pub failed send", append(javaPub[:13:13], "FALSE"), func(r TraceRecord) bool { return !r.Success }},
		{"pub success any case", append(javaPub[:13:13], "TrUe"), func(r TraceRecord) bool { return r.Success }},
		// A SubAfter of an old client: no contextCode, timestamp or group.
		{"sub after 6 fields", javaSubAfter[:6], func(r TraceRecord) bool { return r.Timestamp == 0 && r.Group == "" && r.Success }},
		// A cloud-channel client ends after contextCode's separator.
		{"sub after cloud", append(javaSubAfter[:4:4], "false", "k", "4", ""), func(r TraceRecord) bool {
			return !r.Success && r.ContextCode == 4 && r.Timestamp == 0 && r.Group == ""
		}},
		{"sub before without keys", append(javaSubBefore[:7:7], "null"), func(r TraceRecord) bool { return r.Keys == "" }},
		{"recall", []string{"Recall", "1700000000200", "DefaultRegion", "P", "Orders", "ID", "false"}, func(r TraceRecord) bool {
			return r.Type == TraceRecall && !r.Success && r.Topic == "Orders" && r.MsgID == "ID"
		}},
	} {
		got, err := DecodeTrace(javaTrace(tc.fields))
		if err != nil || len(got) != 1 || !tc.check(got[0]) {
			t.Errorf("%s: %+v, %v", tc.name, got, err)
		}
	}
}

func TestDecodeTraceSkipsUnknownAndReportsMalformed(t *testing.T) {
	badTime := append([]string{"SubBefore", "soon"}, javaSubBefore[2:]...)
	body := javaTrace([]string{"Future", "1", "2"}, javaPub, javaSubAfter[:5], badTime, javaSubBefore)
	body = append(body, 0x02) // an empty record
	got, err := DecodeTrace(body)
	if len(got) != 2 || got[0].Type != TracePub || got[1].Type != TraceSubBefore {
		t.Fatalf("records %+v", got)
	}
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "trace record 2") || !strings.Contains(err.Error(), "5 fields") {
		t.Fatalf("error %v, want the short SubAfter (record 2) reported", err)
	}
	if _, err := DecodeTrace(javaTrace(badTime)); err == nil || !strings.Contains(err.Error(), `"soon"`) {
		t.Fatalf("bad timestamp: %v", err)
	}
	if _, err := DecodeTrace(javaTrace(append(javaSubBefore[:6:6], "99999999999", "k"))); err == nil {
		t.Fatal("a retry count past 32 bits decoded")
	}
	if got, err := DecodeTrace(nil); got != nil || err != nil {
		t.Fatalf("empty body: %v, %v", got, err)
	}
	// No final 0x02: the last record still counts.
	unterminated := javaTrace(javaSubBefore)
	if got, err := DecodeTrace(unterminated[:len(unterminated)-1]); err != nil || len(got) != 1 {
		t.Fatalf("unterminated: %+v, %v", got, err)
	}
}

func TestAppendTraceWritesTheJavaLayout(t *testing.T) {
	for _, fields := range [][]string{javaPub, javaSubBefore, javaSubAfter} {
		want := javaTrace(fields)
		recs, err := DecodeTrace(want)
		if err != nil || len(recs) != 1 {
			t.Fatalf("%s: %v", fields[0], err)
		}
		if got := AppendTrace(nil, recs[0]); !bytes.Equal(got, want) {
			t.Errorf("AppendTrace(%s) = %q, want %q", fields[0], got, want)
		}
	}
}

// FuzzTrace feeds DecodeTrace arbitrary bodies. Seeds are in
// testdata/fuzz/FuzzTrace.
func FuzzTrace(f *testing.F) {
	f.Add(javaTrace(javaPub, javaSubBefore, javaSubAfter, javaEndTx))
	f.Fuzz(func(t *testing.T, body []byte) {
		recs, err := DecodeTrace(body)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error %v does not wrap ErrCorrupt", err)
		}
		// Each record takes at least its type and 5 separators.
		if len(recs)*len("Pub\x01\x01\x01\x01\x01") > len(body)+1 {
			t.Fatalf("%d records from %d bytes", len(recs), len(body))
		}
		// Decoded records re-encode and decode to themselves, one by one
		// and together, whatever layout version they came in.
		var all []byte
		for _, r := range recs {
			enc := AppendTrace(nil, r)
			again, err := DecodeTrace(enc)
			if err != nil || len(again) != 1 || !reflect.DeepEqual(again[0], r) {
				t.Fatalf("record %+v re-encodes to %q, which decodes to %+v, %v", r, enc, again, err)
			}
			all = append(all, enc...)
		}
		again, err := DecodeTrace(all)
		if err != nil || len(again) != len(recs) {
			t.Fatalf("re-encoded body decodes to %d records, %v; want %d", len(again), err, len(recs))
		}
		// Records are delimited on their own: splitting the body at a
		// record end gives the same records.
		if i := bytes.IndexByte(body, 0x02); i >= 0 {
			a, _ := DecodeTrace(body[:i+1])
			b, _ := DecodeTrace(body[i+1:])
			if !reflect.DeepEqual(append(a, b...), recs) && !(len(a)+len(b) == 0 && recs == nil) {
				t.Fatalf("split at %d: %+v + %+v, whole %+v", i, a, b, recs)
			}
		}
	})
}
