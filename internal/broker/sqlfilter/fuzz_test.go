package sqlfilter

import (
	"errors"
	"testing"
	"unicode/utf8"
)

// fuzzPropSets are the messages every compiled fuzz input is evaluated
// on. The last one answers every key, so that random names have values.
var fuzzPropSets = []func(string) (string, bool){
	props(""),
	props("a=5;b=x;c=3.5;TAGS=TagA"),
	props("a=abc;b=true;c=NaN;d= 7;TAGS=TagB"),
	props("a=-0.0;b=;c=1e3;d=0x1p3;e=9223372036854775807"),
	func(k string) (string, bool) {
		vals := []string{"5", "x", "", "TRUE", "2.5", "-1", "a'b", "TagA"}
		return vals[len(k)%len(vals)], true
	},
}

// FuzzCompile checks that Compile never panics and only fails with its
// documented errors, and that String renders a fixed point that compiles
// to an expression with the same outcome on every message.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		"a > 5 AND b = 'x'",
		"NOT (a = 'x') OR b IN ('p', 'q''r')",
		"a BETWEEN -1 AND 2.5e3 AND c NOT CONTAINS 'z'",
		"--5 > - -a\n OR TAGS STARTSWITH 'Tag' /* c */",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Compile(s)
		if err != nil {
			var se *SyntaxError
			switch {
			case errors.As(err, &se):
				if !errors.Is(err, ErrSyntax) {
					t.Fatalf("Compile(%q): %v does not wrap ErrSyntax", s, err)
				}
				if se.Pos < 1 || se.Pos > utf8.RuneCountInString(s)+1 {
					t.Fatalf("Compile(%q): position %d out of range", s, se.Pos)
				}
			case !errors.Is(err, ErrLimit):
				t.Fatalf("Compile(%q): unexpected error %v", s, err)
			}
			return
		}
		s1 := e.String()
		e2, err := Compile(s1)
		if err != nil {
			if errors.Is(err, ErrLimit) && len(s1) > MaxLength {
				return // the canonical form can be longer (5e0 is 5.0)
			}
			t.Fatalf("Compile(%q) ok, but Compile(String() = %q): %v", s, s1, err)
		}
		if s2 := e2.String(); s2 != s1 {
			t.Fatalf("String not a fixed point: %q -> %q -> %q", s, s1, s2)
		}
		for i, p := range fuzzPropSets {
			o1, o2 := outcome(e, p), outcome(e2, p)
			if o1 != o2 {
				t.Fatalf("%q and its String %q differ on property set %d: %s vs %s", s, s1, i, o1, o2)
			}
			if e.Match(p) != (o1 == "T") {
				t.Fatalf("%q: Match disagrees with outcome %s", s, o1)
			}
		}
	})
}
