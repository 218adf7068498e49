package sqlfilter

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSyntaxErrorPositions(t *testing.T) {
	cases := []struct {
		expr string
		pos  int
		msg  string
	}{
		{"", 1, "expected an expression, found end of input"},
		{"a >", 4, "expected a value after '>', found end of input"},
		{"a = 5 AND", 10, "expected a value after AND, found end of input"},
		{"AND a = 5", 1, "expected an expression, found AND"},
		{"a != 5", 3, "'!=' is not supported: use '<>'"},
		{"a == 5", 4, "expected a value after '=', found '='"},
		{"a = \"x\"", 5, "string literals use single quotes"},
		{"a = 'x", 5, "unterminated string literal"},
		{"a /* x", 3, "unterminated comment"},
		{"(a = 1", 7, "expected ')' to close '(' at position 1, found end of input"},
		{"a = 1)", 6, "found ')' without a matching '('"},
		{"a = 1 b = 2", 7, "expected an operator or end of input, found identifier b"},
		{"a = 5 -- no line end", 7, "expected an operator or end of input, found '-'"},
		{"a NOT = 5", 7, "expected BETWEEN, IN, CONTAINS, STARTSWITH or ENDSWITH after NOT, found '='"},
		{"a IN (1)", 7, "expected a string literal in the IN list, found number 1"},
		{"a IN ('x' 'y')", 11, "expected ',' or ')' in the IN list, found string 'y'"},
		{"a IN 'x'", 6, "expected '(' after IN, found string 'x'"},
		{"a IN ()", 7, "expected a string literal in the IN list, found ')'"},
		{"1 IN ('x')", 3, "IN needs a property name on its left, found 1"},
		{"a BETWEEN 1 OR 2", 13, "expected AND between the bounds of BETWEEN, found OR"},
		{"a BETWEEN 5 AND 1", 11, "bounds of BETWEEN are reversed: 5 is greater than 1"},
		{"a IS 5", 6, "expected NULL or NOT NULL after IS, found number 5"},
		{"a IS NOT 5", 10, "expected NULL after IS NOT, found number 5"},
		{"a CONTAINS b", 12, "expected a string literal after CONTAINS, found identifier b"},
		{"a = NULL", 5, "NULL cannot be compared with '=': use IS NULL"},
		{"a <> NULL", 6, "NULL cannot be compared with '<>': use IS NOT NULL"},
		{"a > 'x'", 5, "'x' cannot be compared with '>': only numbers can be ordered"},
		{"a BETWEEN TRUE AND 5", 11, "TRUE cannot be compared with BETWEEN"},
		{"(a > 5) > 3", 2, "a condition cannot be compared with '>'"},
		{"TRUE = 5", 6, "TRUE cannot be compared with 5"},
		{"5", 1, "expected a condition, found 5"},
		{"a = 1 AND 'x'", 11, "expected a condition, found 'x'"},
		{"NOT -a", 5, "expected a condition, found -a"},
		{"a = 99999999999999999999", 5, "out of range: integers must fit in 64 bits"},
		{"a = 1e999", 5, "number 1e999 is out of range"},
		{"a = 0123", 5, "number 0123 has a leading zero"},
		{"a.b = 1", 2, "unexpected character '.'"},
		{"é = 1", 1, "unexpected character 'é'"},
		{"'é' = x y", 9, "found identifier y"}, // positions count characters, not bytes
		{"a = 1\n  AND\n  b >", 18, "expected a value after '>'"},
		{"a IN ('x' '" + strings.Repeat("é", 40) + "')", 11, "found string '" + strings.Repeat("é", 14) + "..."},
	}
	for _, c := range cases {
		_, err := Compile(c.expr)
		if err == nil {
			t.Errorf("Compile(%q) succeeded", c.expr)
			continue
		}
		if !errors.Is(err, ErrSyntax) || errors.Is(err, ErrLimit) {
			t.Errorf("Compile(%q) = %v, want ErrSyntax", c.expr, err)
		}
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Compile(%q) = %T, want *SyntaxError", c.expr, err)
			continue
		}
		if se.Pos != c.pos || !strings.Contains(se.Msg, c.msg) {
			t.Errorf("Compile(%q) = %v\nwant position %d, message containing %q", c.expr, err, c.pos, c.msg)
		}
		if !utf8.ValidString(err.Error()) {
			t.Errorf("Compile(%q): message %q is not valid UTF-8", c.expr, err)
		}
		if want := "sqlfilter: syntax error at position "; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Compile(%q) = %q, want prefix %q", c.expr, err, want)
		}
	}
}

func TestErrorMessageFormat(t *testing.T) {
	_, err := Compile("price >")
	if got, want := err.Error(), "sqlfilter: syntax error at position 8: expected a value after '>', found end of input"; got != want {
		t.Fatalf("error = %q, want %q", got, want)
	}
}

func TestLengthLimit(t *testing.T) {
	// Exactly MaxLength bytes compiles.
	ok := "a = '" + strings.Repeat("x", MaxLength-6) + "'"
	if len(ok) != MaxLength {
		t.Fatalf("test expression is %d bytes", len(ok))
	}
	e := mustCompile(t, ok)
	if !e.Match(props("a=" + strings.Repeat("x", MaxLength-6))) {
		t.Fatal("long literal does not match")
	}
	for _, src := range []string{ok + " ", strings.Repeat("(", 1<<20)} {
		_, err := Compile(src)
		if !errors.Is(err, ErrLimit) || errors.Is(err, ErrSyntax) {
			t.Fatalf("Compile(%d bytes) = %v, want ErrLimit", len(src), err)
		}
		if !strings.Contains(err.Error(), "4096") {
			t.Fatalf("error %q does not name the limit", err)
		}
	}
}

func TestDepthLimit(t *testing.T) {
	nest := func(open, close string, n int) string {
		return strings.Repeat(open, n) + "TRUE" + strings.Repeat(close, n)
	}
	for _, c := range []struct {
		name, open, close string
	}{
		{"parentheses", "(", ")"},
		{"NOT", "NOT NOT ", ""},
		{"mixed", "NOT (", ")"},
	} {
		t.Run(c.name, func(t *testing.T) {
			per := strings.Count(c.open, "(") + strings.Count(c.open, "NOT")
			n := MaxDepth / per
			e := mustCompile(t, nest(c.open, c.close, n))
			if !e.Match(props("")) { // an even number of NOTs
				t.Fatalf("depth %d: does not match", n*per)
			}
			// String nests no deeper, so it compiles too.
			mustCompile(t, e.String())
			_, err := Compile(nest(c.open, c.close, n+1))
			if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "deeper than 64 levels") {
				t.Fatalf("depth %d: err = %v, want ErrLimit naming the limit", (n+1)*per, err)
			}
		})
	}
	// Hostile input within the length limit: no stack overflow.
	for _, src := range []string{
		strings.Repeat("(", MaxLength),
		strings.Repeat("-", MaxLength/2) + "5 = a",
		strings.Repeat("+ ", MaxLength/2),
		strings.Repeat("NOT ", MaxLength/4),
	} {
		if _, err := Compile(src); !errors.Is(err, ErrLimit) {
			t.Errorf("Compile(%.10q...) = %v, want ErrLimit", src, err)
		}
	}
}

func TestLongFlatChains(t *testing.T) {
	// Left-deep chains are not nesting: as many terms as fit are fine.
	var b strings.Builder
	b.WriteString("a = 1")
	for b.Len()+12 <= MaxLength {
		b.WriteString(" AND b <> 2")
	}
	e := mustCompile(t, b.String())
	if !e.Match(props("a=1;b=3")) || e.Match(props("a=1;b=2")) {
		t.Fatal("wrong verdict on a long AND chain")
	}
	if s := e.String(); s != b.String() {
		t.Fatal("String changed a flat chain")
	}
}
