package sqlfilter

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// tokKind is the kind of a lexical token.
type tokKind uint8

const (
	tEOF tokKind = iota
	tIdent
	tInt    // DECIMAL_LITERAL: 0 | [1-9][0-9]*[lL]?
	tFloat  // FLOATING_POINT_LITERAL
	tString // '...' with '' for a quote
	tEq     // =
	tNe     // <>
	tGt     // >
	tGe     // >=
	tLt     // <
	tLe     // <=
	tLParen
	tRParen
	tComma
	tPlus
	tMinus
	// Reserved words, matched without regard to case.
	kwNot
	kwAnd
	kwOr
	kwBetween
	kwIn
	kwTrue
	kwFalse
	kwNull
	kwIs
	kwContains
	kwStartsWith
	kwEndsWith
)

// keywords are RocketMQ's reserved words (SelectorParser.jj); an identifier
// spelled like one of them, in any case, is that keyword.
var keywords = []struct {
	word string
	kind tokKind
}{
	{"NOT", kwNot}, {"AND", kwAnd}, {"OR", kwOr}, {"BETWEEN", kwBetween},
	{"IN", kwIn}, {"TRUE", kwTrue}, {"FALSE", kwFalse}, {"NULL", kwNull},
	{"IS", kwIs}, {"CONTAINS", kwContains}, {"STARTSWITH", kwStartsWith},
	{"ENDSWITH", kwEndsWith},
}

var punctText = map[tokKind]string{
	tEq: "=", tNe: "<>", tGt: ">", tGe: ">=", tLt: "<", tLe: "<=",
	tLParen: "(", tRParen: ")", tComma: ",", tPlus: "+", tMinus: "-",
}

// token is one lexical token. off is its byte offset in the source.
type token struct {
	kind tokKind
	off  int
	text string  // source text of the token
	str  string  // tString: the decoded value
	ival int64   // tInt
	fval float64 // tFloat
}

// describe names the token for an error message.
func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of input"
	case tIdent:
		return "identifier " + t.text
	case tInt, tFloat:
		return "number " + t.text
	case tString:
		return "string " + truncate(t.text, 32)
	}
	if t.kind >= kwNot {
		return strings.ToUpper(t.text)
	}
	return "'" + punctText[t.kind] + "'"
}

// truncate shortens s to at most n bytes for a message, cutting at a
// character boundary and marking the cut with "...".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// lexError is a lexical error at a byte offset.
type lexError struct {
	off int
	msg string
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$'
}

func isIdentPart(c byte) bool { return isIdentStart(c) || isDigit(c) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// lex splits src into tokens, ending with a tEOF token. It follows the
// token rules of RocketMQ's SelectorParser.jj: longest match, whitespace is
// space, tab, CR, LF and form feed, "--" starts a comment to the end of the
// line and "/*" one to the next "*/".
func lex(src string) ([]token, *lexError) {
	toks := make([]token, 0, len(src)/3+1)
	i := 0
	for {
		// Skip whitespace and comments.
		for i < len(src) {
			c := src[i]
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' {
				i++
				continue
			}
			if c == '-' && i+1 < len(src) && src[i+1] == '-' {
				// A line comment needs a line end after it, as in
				// RocketMQ; without one, "--" is two minus signs
				// ("a > --5" is a > -(-5)).
				if end := strings.IndexAny(src[i:], "\r\n"); end >= 0 {
					i += end + 1
					continue
				}
			}
			if c == '/' && i+1 < len(src) && src[i+1] == '*' {
				end := strings.Index(src[i+2:], "*/")
				if end < 0 {
					return nil, &lexError{i, "unterminated comment: expected */"}
				}
				i += 2 + end + 2
				continue
			}
			break
		}
		if i >= len(src) {
			toks = append(toks, token{kind: tEOF, off: i})
			return toks, nil
		}
		start := i
		c := src[i]
		switch {
		case isIdentStart(c):
			for i < len(src) && isIdentPart(src[i]) {
				i++
			}
			t := token{kind: tIdent, off: start, text: src[start:i]}
			for _, kw := range keywords {
				if strings.EqualFold(t.text, kw.word) {
					t.kind = kw.kind
					break
				}
			}
			toks = append(toks, t)
		case isDigit(c) || c == '.' && i+1 < len(src) && isDigit(src[i+1]):
			t, err := lexNumber(src, start)
			if err != nil {
				return nil, err
			}
			i = start + len(t.text)
			toks = append(toks, t)
		case c == '\'':
			t, err := lexString(src, start)
			if err != nil {
				return nil, err
			}
			i = start + len(t.text)
			toks = append(toks, t)
		default:
			var k tokKind
			n := 1
			next := byte(0)
			if i+1 < len(src) {
				next = src[i+1]
			}
			switch c {
			case '=':
				k = tEq
			case '<':
				switch next {
				case '>':
					k, n = tNe, 2
				case '=':
					k, n = tLe, 2
				default:
					k = tLt
				}
			case '>':
				if next == '=' {
					k, n = tGe, 2
				} else {
					k = tGt
				}
			case '(':
				k = tLParen
			case ')':
				k = tRParen
			case ',':
				k = tComma
			case '+':
				k = tPlus
			case '-':
				k = tMinus
			case '!':
				if next == '=' {
					return nil, &lexError{i, "'!=' is not supported: use '<>'"}
				}
				return nil, &lexError{i, "unexpected character '!'"}
			case '"':
				return nil, &lexError{i, "unexpected character '\"': string literals use single quotes"}
			default:
				return nil, &lexError{i, "unexpected character " + quoteChar(src[i:])}
			}
			toks = append(toks, token{kind: k, off: start, text: src[start : start+n]})
			i += n
		}
	}
}

// quoteChar quotes the first character of s for an error message.
func quoteChar(s string) string {
	for _, r := range s {
		if r < ' ' || r == 0x7f || r == '\uFFFD' {
			return strconv.QuoteRune(r)
		}
		return "'" + string(r) + "'"
	}
	return "end of input"
}

// lexNumber reads a numeric literal at src[start]. As in RocketMQ:
//
//	DECIMAL_LITERAL: "0" | [1-9] [0-9]* [lL]?
//	FLOATING_POINT_LITERAL: [0-9]+ "." [0-9]* EXP? | "." [0-9]+ EXP? | [0-9]+ EXP
//	EXP: [eE] [+-]? [0-9]+
func lexNumber(src string, start int) (token, *lexError) {
	i := start
	for i < len(src) && isDigit(src[i]) {
		i++
	}
	intEnd := i
	isFloat := false
	if i < len(src) && src[i] == '.' {
		isFloat = true
		i++
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	}
	if n := expLen(src, i); n > 0 {
		isFloat = true
		i += n
	}
	if isFloat {
		text := src[start:i]
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(f, 0) {
			return token{}, &lexError{start, "number " + text + " is out of range"}
		}
		return token{kind: tFloat, off: start, text: text, fval: f}, nil
	}
	if src[start] == '0' && intEnd-start > 1 {
		return token{}, &lexError{start, "number " + src[start:intEnd] + " has a leading zero"}
	}
	digits := src[start:intEnd]
	if intEnd < len(src) && (src[intEnd] == 'l' || src[intEnd] == 'L') && src[start] != '0' {
		i++
	}
	v, ok := parseDigits(digits)
	if !ok {
		return token{}, &lexError{start, "number " + src[start:i] + " is out of range: integers must fit in 64 bits"}
	}
	return token{kind: tInt, off: start, text: src[start:i], ival: v}, nil
}

// expLen returns the length of an exponent ([eE][+-]?[0-9]+) at src[i],
// or 0 if there is none.
func expLen(src string, i int) int {
	if i >= len(src) || src[i] != 'e' && src[i] != 'E' {
		return 0
	}
	j := i + 1
	if j < len(src) && (src[j] == '+' || src[j] == '-') {
		j++
	}
	k := j
	for k < len(src) && isDigit(src[k]) {
		k++
	}
	if k == j {
		return 0
	}
	return k - i
}

// parseDigits parses a non-empty run of ASCII digits as a non-negative
// int64, reporting false on overflow.
func parseDigits(s string) (int64, bool) {
	var v uint64
	for i := 0; i < len(s); i++ {
		d := uint64(s[i] - '0')
		if v > (math.MaxInt64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return int64(v), true
}

// lexString reads a single-quoted string literal at src[start]; a quote
// inside it is written twice.
func lexString(src string, start int) (token, *lexError) {
	i := start + 1
	var b *strings.Builder
	segStart := i
	for {
		j := strings.IndexByte(src[i:], '\'')
		if j < 0 {
			return token{}, &lexError{start, "unterminated string literal: expected a closing '"}
		}
		i += j
		if i+1 < len(src) && src[i+1] == '\'' {
			if b == nil {
				b = &strings.Builder{}
			}
			b.WriteString(src[segStart : i+1])
			i += 2
			segStart = i
			continue
		}
		var val string
		if b == nil {
			val = src[segStart:i]
		} else {
			b.WriteString(src[segStart:i])
			val = b.String()
		}
		return token{kind: tString, off: start, text: src[start : i+1], str: val}, nil
	}
}
