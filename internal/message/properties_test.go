package message

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
)

func TestPropertyLookup(t *testing.T) {
	cases := []struct {
		name, props, key string
		want             string
		ok               bool
	}{
		{"first", "A\x011\x02B\x012\x02", "A", "1", true},
		{"last", "A\x011\x02B\x012\x02", "B", "2", true},
		{"missing", "A\x011\x02B\x012\x02", "C", "", false},
		{"empty props", "", "A", "", false},
		{"empty value", "A\x01\x02B\x012\x02", "A", "", true},
		{"empty key", "\x01v\x02", "", "v", true},
		{"no final separator", "A\x011\x02B\x012", "B", "2", true},
		{"three parts skipped", "A\x011\x01x\x02B\x012\x02", "A", "", false},
		{"one part skipped", "A\x02B\x012\x02", "A", "", false},
		{"skip bad then find good", "A\x01good\x02A\x01b\x01c\x02", "A", "good", true},
		{"later item wins", "A\x01old\x02B\x01x\x02A\x01new\x02", "A", "new", true},
		{"key is prefix", "AB\x011\x02", "A", "", false},
		{"key longer", "A\x011\x02", "AB", "", false},
		{"value holds key", "X\x01A\x02", "A", "", false},
		{"separator in key", "A\x011\x02", "A\x011", "", false},
		{"empty items", "\x02\x02A\x011\x02\x02", "A", "1", true},
		{"value with spaces", "KEYS\x01k1 k2\x02", "KEYS", "k1 k2", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := PropertyOf(tc.props, tc.key)
			if got != tc.want || ok != tc.ok {
				t.Errorf("PropertyOf = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
			gotB, ok := lookup([]byte(tc.props), tc.key)
			if string(gotB) != tc.want || ok != tc.ok {
				t.Errorf("lookup = %q, %v; want %q, %v", gotB, ok, tc.want, tc.ok)
			}
			v, ok := ParseProperties(tc.props)[tc.key]
			if v != tc.want || ok != tc.ok {
				t.Errorf("ParseProperties()[key] = %q, %v; want %q, %v", v, ok, tc.want, tc.ok)
			}
			m := &Message{Properties: tc.props}
			if got := m.Property(tc.key); got != tc.want {
				t.Errorf("Message.Property = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseProperties(t *testing.T) {
	cases := []struct {
		in   string
		want map[string]string
	}{
		{"", map[string]string{}},
		{"\x02", map[string]string{}},
		{"A\x011\x02", map[string]string{"A": "1"}},
		{"A\x011\x02B\x01\x02", map[string]string{"A": "1", "B": ""}},
		{"A\x011\x01x\x02B\x012\x02C\x02", map[string]string{"B": "2"}},
		{"A\x011\x02A\x012\x02", map[string]string{"A": "2"}},
		{"A\x011", map[string]string{"A": "1"}},
		{"\x01\x02", map[string]string{"": ""}},
	}
	for _, tc := range cases {
		if got := ParseProperties(tc.in); !maps.Equal(got, tc.want) {
			t.Errorf("ParseProperties(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestEncodeProperties(t *testing.T) {
	m := map[string]string{"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "ABC", "E": ""}
	want := "E\x01\x02KEYS\x01k1 k2\x02TAGS\x01TagA\x02UNIQ_KEY\x01ABC\x02"
	if got := EncodeProperties(m); got != want {
		t.Fatalf("EncodeProperties = %q, want %q", got, want)
	}
	if got := ParseProperties(want); !maps.Equal(got, m) {
		t.Fatalf("ParseProperties(EncodeProperties(m)) = %q, want %q", got, m)
	}
	if got := EncodeProperties(nil); got != "" {
		t.Fatalf("EncodeProperties(nil) = %q", got)
	}
}

func TestValidProperty(t *testing.T) {
	cases := []struct {
		k, v string
		ok   bool
	}{
		{"A", "1", true},
		{"A", "", true},
		{"", "1", false},
		{"A\x01", "1", false},
		{"A\x02", "1", false},
		{"A", "1\x01", false},
		{"A", "1\x02", false},
		{"日本", "é", true},
	}
	for _, tc := range cases {
		if got := ValidProperty(tc.k, tc.v); got != tc.ok {
			t.Errorf("ValidProperty(%q, %q) = %v, want %v", tc.k, tc.v, got, tc.ok)
		}
	}
}

func TestSetRemoveProperty(t *testing.T) {
	m := &Message{}
	m.SetProperty("A", "1")
	m.SetProperty("B", "2")
	if m.Properties != "A\x011\x02B\x012\x02" {
		t.Fatalf("after two sets: %q", m.Properties)
	}
	m.SetProperty("A", "3")
	if m.Properties != "B\x012\x02A\x013\x02" {
		t.Fatalf("after replacing A: %q", m.Properties)
	}
	m.SetProperty("E", "")
	if v, ok := PropertyOf(m.Properties, "E"); !ok || v != "" {
		t.Fatalf("empty value not stored: %q", m.Properties)
	}
	m.RemoveProperty("B")
	if m.Properties != "A\x013\x02E\x01\x02" {
		t.Fatalf("after removing B: %q", m.Properties)
	}
	m.RemoveProperty("missing")
	if m.Properties != "A\x013\x02E\x01\x02" {
		t.Fatalf("removing a missing key changed properties: %q", m.Properties)
	}
	m.RemoveProperty("A")
	m.RemoveProperty("E")
	if m.Properties != "" {
		t.Fatalf("after removing all: %q", m.Properties)
	}

	// Duplicates are all removed; malformed and empty items are dropped
	// on rewrite.
	m = &Message{Properties: "A\x011\x02\x02B\x012\x02A\x01x\x02"}
	m.RemoveProperty("A")
	if m.Properties != "B\x012\x02" {
		t.Fatalf("removing duplicates: %q", m.Properties)
	}

	// Properties that arrived without the final separator stay parseable
	// after a set.
	m = &Message{Properties: "A\x011"}
	m.SetProperty("B", "2")
	if got := ParseProperties(m.Properties); !maps.Equal(got, map[string]string{"A": "1", "B": "2"}) {
		t.Fatalf("set after unterminated properties: %q parses to %q", m.Properties, got)
	}
	if m.Properties[len(m.Properties)-1] != PropertySeparator {
		t.Fatalf("properties do not end with the separator: %q", m.Properties)
	}
	m = &Message{Properties: "A\x011"}
	m.SetProperty("A", "2")
	if m.Properties != "A\x012\x02" {
		t.Fatalf("replacing in unterminated properties: %q", m.Properties)
	}
}

func TestTags(t *testing.T) {
	m := &Message{Properties: "KEYS\x01k\x02TAGS\x01TagA\x02"}
	if m.Tags() != "TagA" {
		t.Fatalf("Tags = %q", m.Tags())
	}
	if (&Message{}).Tags() != "" {
		t.Fatal("Tags of a message without TAGS is not empty")
	}
}

// javaHashCode is String.hashCode written from its definition: s[0]*31^(n-1)
// + ... + s[n-1] over UTF-16 code units, in 32-bit arithmetic.
func javaHashCode(s string) int64 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = h*31 + int32(u)
	}
	return int64(h)
}

func TestTagHash(t *testing.T) {
	cases := []struct {
		tag  string
		want int64
	}{
		{"TagA", 2598919}, // "TagA".hashCode() in Java
		{"TagB", 2598920},
		{"", 0},
		{"é", 233},        // U+00E9: one UTF-16 unit, 0xE9
		{"日本", 835047},    // 0x65E5*31 + 0x672C
		{"😀", 1772899},    // U+1F600 = surrogates 0xD83D 0xDE00: 0xD83D*31 + 0xDE00
		{"a😀b", 57849694}, // ((97*31 + 0xD83D)*31 + 0xDE00)*31 + 98
		{"polygenelubricants", -2147483648},
		{"\xff", 65533}, // invalid UTF-8 counts as U+FFFD
	}
	for _, tc := range cases {
		if got := TagHash(tc.tag); got != tc.want {
			t.Errorf("TagHash(%q) = %d, want %d", tc.tag, got, tc.want)
		}
		if got := TagHash([]byte(tc.tag)); got != tc.want {
			t.Errorf("TagHash([]byte(%q)) = %d, want %d", tc.tag, got, tc.want)
		}
		if tc.tag != "\xff" {
			if ref := javaHashCode(tc.tag); ref != tc.want {
				t.Errorf("reference hash of %q = %d, table says %d", tc.tag, ref, tc.want)
			}
		}
	}
	// Longer strings against the reference, including mixed widths and
	// invalid sequences (which utf16.Encode([]rune(s)) also maps to U+FFFD
	// per byte).
	for _, s := range []string{
		strings.Repeat("TagA||", 50), "Ω≈ç√∫˜µ≤≥÷", "𝄞𝄞x𝄞", "a\xc3(b\xe2\x82", "\xed\xa0\x80", "\xf4\x90\x80\x80",
	} {
		if got, want := TagHash(s), javaHashCode(s); got != want {
			t.Errorf("TagHash(%q) = %d, reference %d", s, got, want)
		}
		if got, want := TagHash([]byte(s)), javaHashCode(s); got != want {
			t.Errorf("TagHash([]byte(%q)) = %d, reference %d", s, got, want)
		}
	}
}

func TestKeys(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" ", nil},
		{"a", []string{"a"}},
		{"a b", []string{"a", "b"}},
		{"  a  b  ", []string{"a", "b"}},
		{"k1 k2 k3", []string{"k1", "k2", "k3"}},
		{"a\tb", []string{"a\tb"}}, // only spaces separate keys
	}
	for _, tc := range cases {
		var got, gotB []string
		Keys(tc.in, func(k string) { got = append(got, k) })
		Keys([]byte(tc.in), func(k []byte) { gotB = append(gotB, string(k)) })
		if !slices.Equal(got, tc.want) || !slices.Equal(gotB, tc.want) {
			t.Errorf("Keys(%q) = %q / %q, want %q", tc.in, got, gotB, tc.want)
		}
	}
}
