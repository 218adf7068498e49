package staterec

import (
	"bytes"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestBatchGolden(t *testing.T) {
	b := AppendBatch(nil,
		Record{Kind: KindTopicDelete, Payload: AppendName(nil, "T")},
		Record{Kind: KindSnapshotEnd, Payload: AppendSnapshot(nil, Snapshot{ID: 2, Epoch: 3})},
		Record{Kind: 99},
	)
	want := "01" +
		"02" + "00000003" + "000154" +
		"11" + "0000000c" + "0000000000000002" + "00000003" +
		"63" + "00000000"
	if got := hex.EncodeToString(b); got != want {
		t.Fatalf("batch\n got %s\nwant %s", got, want)
	}
	if BatchLen(Record{Kind: KindTopicDelete, Payload: AppendName(nil, "T")}, Record{Kind: KindSnapshotEnd, Payload: make([]byte, 12)}, Record{Kind: 99}) != len(b) {
		t.Fatal("BatchLen differs from AppendBatch")
	}
	var kinds []Kind
	if err := DecodeBatch(b, func(r Record) error { kinds = append(kinds, r.Kind); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kinds, []Kind{KindTopicDelete, KindSnapshotEnd, 99}) {
		t.Fatalf("kinds %v (unknown kinds must be passed on)", kinds)
	}
}

func TestOffsetsGolden(t *testing.T) {
	p := AppendOffsets(nil, []Offset{{Group: "g", Topic: "t", QueueID: 3, Offset: 1 << 33}})
	want := "00000001" + "000167" + "000174" + "00000003" + "0000000200000000"
	if got := hex.EncodeToString(p); got != want {
		t.Fatalf("offsets\n got %s\nwant %s", got, want)
	}
	if OffsetLen(Offset{Group: "g", Topic: "t"}) != len(p)-4 {
		t.Fatal("OffsetLen")
	}
	p = AppendGroupTopic(nil, "g", "")
	if got := hex.EncodeToString(p); got != "0001670000" {
		t.Fatalf("group topic %s", got)
	}
}

func TestRoundTrip(t *testing.T) {
	offs := []Offset{{"g1", "t1", 0, 0}, {"g2", "", -1, -5}, {strings.Repeat("x", MaxName), "t", 1<<31 - 1, 1<<63 - 1}}
	recs := []Record{
		{KindTopicPut, []byte(`{"topicName":"a"}`)},
		{KindOffsets, AppendOffsets(nil, offs)},
		{KindOffsetsDelete, AppendGroupTopic(nil, "g", "t")},
		{KindSnapshotBegin, AppendSnapshot(nil, Snapshot{ID: 1<<64 - 1, Epoch: 7})},
		{KindPop, nil},
	}
	b := AppendBatch([]byte("prefix"), recs...)
	if !bytes.HasPrefix(b, []byte("prefix")) {
		t.Fatal("AppendBatch must append")
	}
	var got []Record
	if err := DecodeBatch(b[6:], func(r Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(recs) {
		t.Fatalf("%d records, want %d", len(got), len(recs))
	}
	for i := range recs {
		if got[i].Kind != recs[i].Kind || !bytes.Equal(got[i].Payload, recs[i].Payload) {
			t.Fatalf("record %d: %v %x, want %v %x", i, got[i].Kind, got[i].Payload, recs[i].Kind, recs[i].Payload)
		}
	}
	var back []Offset
	if err := DecodeOffsets(got[1].Payload, func(o Offset) error { back = append(back, o); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back, offs) {
		t.Fatalf("offsets %v, want %v", back, offs)
	}
	g, tp, err := DecodeGroupTopic(got[2].Payload)
	if err != nil || g != "g" || tp != "t" {
		t.Fatalf("group topic %q %q %v", g, tp, err)
	}
	s, err := DecodeSnapshot(got[3].Payload)
	if err != nil || s != (Snapshot{ID: 1<<64 - 1, Epoch: 7}) {
		t.Fatalf("snapshot %+v %v", s, err)
	}
	n, err := DecodeName(AppendName(nil, "topic-Ω"))
	if err != nil || n != "topic-Ω" {
		t.Fatalf("name %q %v", n, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	nop := func(Record) error { return nil }
	for _, c := range []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"version", []byte{2}, ErrVersion},
		{"short header", []byte{1, 5, 0, 0}, ErrTruncated},
		{"short payload", []byte{1, 5, 0, 0, 0, 3, 'a'}, ErrTruncated},
		{"huge length", []byte{1, 5, 0xff, 0xff, 0xff, 0xff}, ErrTooLong},
	} {
		if err := DecodeBatch(c.in, nop); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if err := DecodeBatch([]byte{1}, nop); err != nil {
		t.Errorf("an empty batch is valid: %v", err)
	}
	stop := errors.New("stop")
	if err := DecodeBatch(AppendBatch(nil, Record{Kind: 1}, Record{Kind: 2}), func(Record) error { return stop }); err != stop {
		t.Errorf("fn's error %v", err)
	}
	// A count the length cannot hold is refused before any entry is read.
	calls := 0
	if err := DecodeOffsets([]byte{0xff, 0xff, 0xff, 0xff, 0, 0}, func(Offset) error { calls++; return nil }); !errors.Is(err, ErrTruncated) || calls != 0 {
		t.Errorf("huge count: %v after %d entries", err, calls)
	}
	if err := DecodeOffsets(append(AppendOffsets(nil, nil), 0), func(Offset) error { return nil }); !errors.Is(err, ErrTrailing) {
		t.Errorf("trailing offsets: %v", err)
	}
	if _, err := DecodeName([]byte{0xff, 0xff}); !errors.Is(err, ErrTooLong) {
		t.Errorf("long name: %v", err)
	}
	if _, err := DecodeName(append(AppendName(nil, "a"), 0)); !errors.Is(err, ErrTrailing) {
		t.Errorf("trailing name: %v", err)
	}
	if _, _, err := DecodeGroupTopic(AppendName(nil, "g")); !errors.Is(err, ErrTruncated) {
		t.Errorf("group without topic: %v", err)
	}
	if _, err := DecodeSnapshot(make([]byte, 11)); !errors.Is(err, ErrTruncated) {
		t.Errorf("short snapshot: %v", err)
	}
	if _, err := DecodeSnapshot(make([]byte, 13)); !errors.Is(err, ErrTrailing) {
		t.Errorf("long snapshot: %v", err)
	}
}

func TestKindString(t *testing.T) {
	if KindOffsets.String() != "offsets" || Kind(200).String() != "kind(200)" {
		t.Fatalf("%v %v", KindOffsets, Kind(200))
	}
	for k, want := range map[Kind]string{KindUserPut: "user-put", KindUserDelete: "user-delete", KindAclPut: "acl-put", KindAclDelete: "acl-delete"} {
		if k.String() != want {
			t.Errorf("%d: %q, want %q", uint8(k), k.String(), want)
		}
	}
	// The numbers are on the wire: they must never change.
	if KindUserPut != 8 || KindUserDelete != 9 || KindAclPut != 10 || KindAclDelete != 11 {
		t.Fatal("the access-control kinds changed numbers")
	}
}

func TestCheckAuthPayload(t *testing.T) {
	if err := CheckAuthPayload(KindUserPut, make([]byte, MaxUserPayload)); err != nil {
		t.Fatalf("a user payload at the bound: %v", err)
	}
	if err := CheckAuthPayload(KindUserPut, make([]byte, MaxUserPayload+1)); !errors.Is(err, ErrTooLong) {
		t.Fatalf("a user payload over the bound: %v", err)
	}
	if err := CheckAuthPayload(KindAclPut, make([]byte, MaxAclPayload+1)); !errors.Is(err, ErrTooLong) {
		t.Fatalf("an ACL payload over the bound: %v", err)
	}
	if err := CheckAuthPayload(KindTopicPut, make([]byte, MaxAclPayload+1)); err != nil {
		t.Fatalf("other kinds are not the access control's: %v", err)
	}
}

// FuzzDecodeBatch: no panic, a decoded batch re-encodes to the same bytes,
// and no record's payload reaches past the input.
func FuzzDecodeBatch(f *testing.F) {
	f.Add([]byte{1})
	f.Add(AppendBatch(nil, Record{KindTopicDelete, AppendName(nil, "T")}, Record{KindOffsets, AppendOffsets(nil, []Offset{{"g", "t", 1, 2}})}))
	f.Add([]byte{1, 5, 0xff, 0xff, 0xff, 0xff})
	f.Add(AppendBatch(nil, Record{KindUserPut, []byte(`{"username":"u","password":"p","userType":"Normal","userStatus":"enable"}`)},
		Record{KindAclPut, []byte(`{"subject":"User:u","policies":[]}`)}, Record{KindAclDelete, AppendName(nil, "User:u")},
		Record{KindUserDelete, AppendName(nil, "u")}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var recs []Record
		err := DecodeBatch(b, func(r Record) error {
			if len(r.Payload) > len(b) {
				t.Fatalf("payload of %d bytes from %d input bytes", len(r.Payload), len(b))
			}
			recs = append(recs, r)
			return nil
		})
		if err != nil {
			return
		}
		if again := AppendBatch(nil, recs...); !bytes.Equal(again, b) {
			t.Fatalf("re-encoded %x, input %x", again, b)
		}
	})
}

// FuzzDecodeOffsets: no panic, bounded, and round-trips.
func FuzzDecodeOffsets(f *testing.F) {
	f.Add(AppendOffsets(nil, []Offset{{"g", "t", 1, 2}, {"", "", -1, -1}}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, p []byte) {
		var offs []Offset
		err := DecodeOffsets(p, func(o Offset) error {
			offs = append(offs, o)
			if len(offs)*minOffsetLen > len(p) {
				t.Fatalf("%d entries from %d bytes", len(offs), len(p))
			}
			return nil
		})
		if err != nil {
			return
		}
		if again := AppendOffsets(nil, offs); !bytes.Equal(again, p) {
			t.Fatalf("re-encoded %x, input %x", again, p)
		}
	})
}

// FuzzDecodePayloads covers the small payload decoders: no panic, and
// what decodes re-encodes to the input.
func FuzzDecodePayloads(f *testing.F) {
	f.Add(AppendName(nil, "T"))
	f.Add(AppendGroupTopic(nil, "g", ""))
	f.Add(AppendSnapshot(nil, Snapshot{ID: 1, Epoch: 2}))
	f.Add(AppendName(nil, "User:alice"))
	f.Fuzz(func(t *testing.T, p []byte) {
		for _, k := range []Kind{KindUserPut, KindAclPut} {
			if err := CheckAuthPayload(k, p); err == nil && len(p) > MaxAclPayload {
				t.Fatalf("%v payload of %d bytes passed", k, len(p))
			}
		}
		if n, err := DecodeName(p); err == nil && !bytes.Equal(AppendName(nil, n), p) {
			t.Fatalf("name %q from %x", n, p)
		}
		if g, tp, err := DecodeGroupTopic(p); err == nil && !bytes.Equal(AppendGroupTopic(nil, g, tp), p) {
			t.Fatalf("group topic %q %q from %x", g, tp, p)
		}
		if s, err := DecodeSnapshot(p); err == nil && !bytes.Equal(AppendSnapshot(nil, s), p) {
			t.Fatalf("snapshot %+v from %x", s, p)
		}
	})
}
