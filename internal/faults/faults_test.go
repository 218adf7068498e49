package faults

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Spec
	}{
		{"", Spec{}},
		{" , ", Spec{}},
		{"lose-ack=1000", Spec{LoseAck: 1000}},
		{"reorder", Spec{Reorder: true}},
		{"slow-disk=50ms", Spec{SlowDisk: 50 * time.Millisecond}},
		{"lose-ack=1000,reorder,slow-disk=50ms", Spec{LoseAck: 1000, Reorder: true, SlowDisk: 50 * time.Millisecond}},
		{" reorder , lose-ack = 7 ", Spec{LoseAck: 7, Reorder: true}},
		{"lose-ack=1", Spec{LoseAck: 1}},
		{"slow-disk=10s", Spec{SlowDisk: 10 * time.Second}},
	} {
		got, err := Parse(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		// String is read back to the same spec.
		if again, err := Parse(got.String()); err != nil || again != got {
			t.Errorf("Parse(%q.String() = %q) = %+v, %v", tc.in, got.String(), again, err)
		}
	}
}

func TestParseErrorsSayWhatIsWrong(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"lose-ack", "needs a value"},
		{"lose-ack=", "needs a value"},
		{"lose-ack=0", "≥ 1"},
		{"lose-ack=-3", "≥ 1"},
		{"lose-ack=ten", "whole number"},
		{"reorder=yes", "takes no value"},
		{"slow-disk", "needs a value"},
		{"slow-disk=50", "duration"},
		{"slow-disk=0s", "above 0"},
		{"slow-disk=11s", "at most 10s"},
		{"reorder,reorder", "given twice"},
		{"lose-acks=5", `unknown fault "lose-acks"`},
		{"kill", "known: lose-ack=N, reorder, slow-disk=D"},
	} {
		_, err := Parse(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "faults: ") {
			t.Errorf("Parse(%q) error = %v; want one starting with \"faults: \" that says %q", tc.in, err, tc.want)
		}
	}
}

func TestFromEnvNamesTheVariable(t *testing.T) {
	env := map[string]string{EnvVar: "reorder,lose-ack=10"}
	spec, err := FromEnv(func(k string) string { return env[k] })
	if err != nil || spec != (Spec{LoseAck: 10, Reorder: true}) {
		t.Fatalf("FromEnv = %+v, %v", spec, err)
	}
	env[EnvVar] = "bogus"
	if _, err := FromEnv(func(k string) string { return env[k] }); err == nil || !strings.HasPrefix(err.Error(), "PETREL_TEST_FAULTS: faults: ") {
		t.Fatalf("FromEnv of a bad spec: %v; want an error naming %s", err, EnvVar)
	}
	if spec, err := FromEnv(func(string) string { return "" }); err != nil || !spec.IsZero() {
		t.Fatalf("FromEnv unset = %+v, %v; want the zero spec", spec, err)
	}
}

func TestOneInChoosesEveryNthCall(t *testing.T) {
	o := NewOneIn(4)
	var got []int
	for i := 1; i <= 12; i++ {
		if o.Next() {
			got = append(got, i)
		}
	}
	if want := []int{4, 8, 12}; !slices.Equal(got, want) || o.Hits() != 3 {
		t.Fatalf("chosen calls %v (hits %d); want %v", got, o.Hits(), want)
	}
	for _, never := range []*OneIn{nil, {}, NewOneIn(0), NewOneIn(-1)} {
		for range 5 {
			if never.Next() {
				t.Fatalf("%+v chose a call; want never", never)
			}
		}
	}
	if every := NewOneIn(1); !every.Next() || !every.Next() {
		t.Fatal("1 in 1 must choose every call")
	}
}

func TestOneInIsExactUnderConcurrency(t *testing.T) {
	o := NewOneIn(10)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				o.Next()
			}
		}()
	}
	wg.Wait()
	if o.Hits() != 800 {
		t.Fatalf("hits %d of 8000 calls at 1 in 10; want 800", o.Hits())
	}
}

// record is a fake stored record: its 4-byte size, then tag repeated.
func record(tag byte, n int) []byte {
	b := make([]byte, 4+n)
	binary.BigEndian.PutUint32(b, uint32(4+n))
	for i := 4; i < len(b); i++ {
		b[i] = tag
	}
	return b
}

func TestReverseRecords(t *testing.T) {
	a, b, c := record('a', 3), record('b', 0), record('c', 10)
	body := bytes.Join([][]byte{a, b, c}, nil)
	orig := bytes.Clone(body)
	got, err := ReverseRecords(body, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := bytes.Join([][]byte{c, b, a}, nil); !bytes.Equal(got, want) {
		t.Fatalf("reversed = %q; want %q", got, want)
	}
	if !bytes.Equal(body, orig) {
		t.Fatal("ReverseRecords changed its input")
	}
	if got, err := ReverseRecords(a, 1); err != nil || !bytes.Equal(got, a) {
		t.Fatalf("one record: %q, %v", got, err)
	}
	if got, err := ReverseRecords(nil, 0); err != nil || len(got) != 0 {
		t.Fatalf("no record: %q, %v", got, err)
	}
}

func TestReverseRecordsRefusesMalformedBodies(t *testing.T) {
	a, b := record('a', 3), record('b', 5)
	body := append(bytes.Clone(a), b...)
	tooBig := bytes.Clone(a)
	binary.BigEndian.PutUint32(tooBig, 100)
	tooSmall := bytes.Clone(a)
	binary.BigEndian.PutUint32(tooSmall, 3)
	for name, tc := range map[string]struct {
		body  []byte
		count int
	}{
		"fewer records than count": {body, 3},
		"more records than count":  {body, 1},
		"negative count":           {body, -1},
		"stray tail":               {append(bytes.Clone(body), 0, 0), 2},
		"size past the end":        {tooBig, 1},
		"size below its header":    {tooSmall, 1},
	} {
		if _, err := ReverseRecords(tc.body, tc.count); !errors.Is(err, ErrRecords) {
			t.Errorf("%s: err = %v; want ErrRecords", name, err)
		}
	}
}

func FuzzReverseRecords(f *testing.F) {
	f.Add(bytes.Join([][]byte{record('a', 3), record('b', 0)}, nil), 2)
	f.Add([]byte{0, 0, 0, 4}, 1)
	f.Add([]byte{0, 0, 0}, 1)
	f.Fuzz(func(t *testing.T, body []byte, count int) {
		if count > 1<<16 {
			return
		}
		out, err := ReverseRecords(body, count)
		if err != nil {
			return
		}
		// A well-formed body reversed twice is itself.
		back, err := ReverseRecords(out, count)
		if err != nil || !bytes.Equal(back, body) {
			t.Fatalf("reversing twice: %q, %v; want %q", back, err, body)
		}
	})
}
