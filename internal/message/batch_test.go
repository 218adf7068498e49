package message

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

func collectBatch(body []byte) ([]BatchItem, error) {
	var items []BatchItem
	err := DecodeBatch(body, func(it BatchItem) error {
		items = append(items, it)
		return nil
	})
	return items, err
}

func sampleBatch() []BatchItem {
	return []BatchItem{
		{Flag: 0, Body: []byte("first"), Properties: "KEYS\x01a b\x02"},
		{Flag: -1, Body: []byte{}, Properties: ""},
		{Flag: 7, Body: bytes.Repeat([]byte{0, 1, 2}, 100), Properties: "TAGS\x01T\x02WAIT\x01false\x02"},
	}
}

func TestBatchLayout(t *testing.T) {
	// One item built field by field from remoting-protocol.md §4.4.
	be := binary.BigEndian
	var w []byte
	w = be.AppendUint32(w, 4+4+4+4+4+2+2+4)
	w = be.AppendUint32(w, 0)
	w = be.AppendUint32(w, 0)
	w = be.AppendUint32(w, 5)
	w = be.AppendUint32(w, 2)
	w = append(w, "hi"...)
	w = be.AppendUint16(w, 4)
	w = append(w, "a\x01b\x02"...)
	items := []BatchItem{{Flag: 5, Body: []byte("hi"), Properties: "a\x01b\x02"}}
	if got := EncodeBatch(items); !bytes.Equal(got, w) {
		t.Fatalf("EncodeBatch:\n got %x\nwant %x", got, w)
	}
}

func TestBatchRoundTrip(t *testing.T) {
	for _, items := range [][]BatchItem{nil, sampleBatch(), sampleBatch()[1:2]} {
		body := EncodeBatch(items)
		got, err := collectBatch(body)
		if err != nil {
			t.Fatalf("DecodeBatch: %v", err)
		}
		if len(got) != len(items) {
			t.Fatalf("DecodeBatch gave %d items, want %d", len(got), len(items))
		}
		for i := range items {
			if got[i].Flag != items[i].Flag || !bytes.Equal(got[i].Body, items[i].Body) || got[i].Properties != items[i].Properties {
				t.Fatalf("item %d = %+v, want %+v", i, got[i], items[i])
			}
			// Bodies alias the input but cannot be appended over the next item.
			if len(got[i].Body) > 0 && &got[i].Body[0] != &body[bytesIndex(body, got[i].Body)] {
				t.Fatalf("item %d body does not alias the input", i)
			}
			if cap(got[i].Body) != len(got[i].Body) {
				t.Fatalf("item %d body has spare capacity %d", i, cap(got[i].Body)-len(got[i].Body))
			}
		}
		if again := EncodeBatch(got); !bytes.Equal(again, body) {
			t.Fatal("EncodeBatch(DecodeBatch(body)) differs from body")
		}
	}
}

// bytesIndex returns the offset of sub, a subslice of b, in b.
func bytesIndex(b, sub []byte) int {
	for i := range b {
		if &b[i] == &sub[0] {
			return i
		}
	}
	return -1
}

func TestDecodeBatchErrors(t *testing.T) {
	be := binary.BigEndian
	good := EncodeBatch(sampleBatch()[:1]) // 22 + 5 + 9 = 36 bytes
	second := len(good)
	// mod returns two good items with the second changed by fn.
	mod := func(fn func(b []byte)) []byte {
		b := append(append([]byte{}, good...), good...)
		fn(b[second:])
		return b
	}
	cases := []struct {
		name string
		body []byte
		want string // in the error text
	}{
		{"trailing bytes", append(append([]byte{}, good...), 1, 2, 3), "3 bytes left"},
		{"TOTALSIZE small", mod(func(b []byte) { be.PutUint32(b, 21) }), "TOTALSIZE 21 is below"},
		{"TOTALSIZE negative", mod(func(b []byte) { be.PutUint32(b, 0xFFFFFFFF) }), "TOTALSIZE -1 is below"},
		{"TOTALSIZE past end", mod(func(b []byte) { be.PutUint32(b, uint32(len(good)+1)) }), "TOTALSIZE 37 runs past the end of the body (36 bytes left)"},
		{"TOTALSIZE short of fields", mod(func(b []byte) { be.PutUint32(b, uint32(len(good)-1)) }), "fields take 36 bytes but TOTALSIZE is 35"},
		{"MAGICCODE", mod(func(b []byte) { be.PutUint32(b[4:], Magic) }), "MAGICCODE is 0xDAA320A7"},
		{"BODYCRC", mod(func(b []byte) { b[11] = 1 }), "BODYCRC"},
		{"BODYLENGTH negative", mod(func(b []byte) { be.PutUint32(b[16:], 0x80000000) }), "BODYLENGTH -2147483648"},
		{"BODYLENGTH too big", mod(func(b []byte) { be.PutUint32(b[16:], 100) }), "BODYLENGTH 100 does not fit"},
		{"BODYLENGTH one less", mod(func(b []byte) { be.PutUint32(b[16:], 4) }), "fields take"},
		{"PROPERTIESLENGTH negative", mod(func(b []byte) { be.PutUint16(b[25:], 0xFFFF) }), "PROPERTIESLENGTH -1"},
		{"PROPERTIESLENGTH one more", mod(func(b []byte) { be.PutUint16(b[25:], 10) }), "fields take 37 bytes but TOTALSIZE is 36"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			items, err := collectBatch(tc.body)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("DecodeBatch = %v, want ErrCorrupt", err)
			}
			want := "batch item 1 at byte 36: " + tc.want
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not contain %q", err, want)
			}
			if len(items) != 1 {
				t.Fatalf("%d items passed before the error, want 1", len(items))
			}
		})
	}
	// A lone short item is item 0.
	if _, err := collectBatch(good[:10]); err == nil || !strings.Contains(err.Error(), "batch item 0 at byte 0") {
		t.Fatalf("short body: err = %v", err)
	}
}

func TestDecodeBatchStopsOnCallbackError(t *testing.T) {
	stop := errors.New("stop")
	body := EncodeBatch(sampleBatch())
	calls := 0
	err := DecodeBatch(body, func(BatchItem) error {
		calls++
		if calls == 2 {
			return stop
		}
		return nil
	})
	if err != stop || calls != 2 {
		t.Fatalf("DecodeBatch = %v after %d calls, want the callback's error after 2", err, calls)
	}
}

func TestEncodeBatchPanicsOnLongProperties(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("EncodeBatch accepted properties longer than MaxPropertiesLen")
		}
	}()
	EncodeBatch([]BatchItem{{Properties: strings.Repeat("a", MaxPropertiesLen+1)}})
}
