package remoting

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// appendJSONHeader appends c's header as the compact JSON object of
// remoting-protocol.md §1.3: keys code, language, version, opaque, flag,
// remark, extFields in that order, every ext value a string, ext keys in
// ascending order. Strings are escaped like encoding/json (HTML-safe,
// invalid UTF-8 as U+FFFD).
func appendJSONHeader(dst []byte, c *Command) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(c.FullCode()), 10)
	dst = append(dst, `,"language":`...)
	lang := c.Language
	if lang == "" {
		lang = LanguageGo
	}
	dst = appendJSONString(dst, lang)
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, int64(c.Version), 10)
	dst = append(dst, `,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(c.Opaque), 10)
	dst = append(dst, `,"flag":`...)
	dst = strconv.AppendInt(dst, int64(c.Flag), 10)
	dst = append(dst, `,"remark":`...)
	dst = appendJSONString(dst, c.Remark)
	dst = append(dst, `,"extFields":{`...)
	first := true
	key := func(k string) { // a field's separator, key and colon
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
	}
	for k, v := range c.ExtFields {
		key(k)
		dst = appendJSONString(dst, v)
	}
	eachBinaryExt(c.bext, func(k, v string) {
		key(k)
		dst = appendJSONString(dst, v)
	})
	for _, p := range c.ext {
		key(p.key)
		if p.null {
			dst = append(dst, "null"...)
		} else {
			dst = appendJSONString(dst, p.value)
		}
	}
	return append(dst, "}}"...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string literal.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// maxJSONDepth bounds the nesting of values the decoder skips.
const maxJSONDepth = 64

// jsonDec is a small JSON reader for remoting headers. It validates what it
// reads (strings, numbers, literals, nested values it skips) so that a
// header it accepts is valid JSON.
type jsonDec struct {
	b       []byte
	s       string // b as one string: unescaped values are substrings of it
	i       int
	depth   int
	scratch []byte // unescaped strings; valid until the next string
}

func (d *jsonDec) fail(what string) error {
	return fmt.Errorf("%w: json header at byte %d: %s", ErrMalformed, d.i, what)
}

func (d *jsonDec) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next skips white space and returns the next byte without consuming it, or
// 0 at the end.
func (d *jsonDec) next() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *jsonDec) expect(c byte) error {
	if d.next() != c {
		return d.fail("expected " + strconv.QuoteRune(rune(c)))
	}
	d.i++
	return nil
}

// str reads a string literal at d.i and returns its unescaped bytes, which
// alias the input or d.scratch. Invalid UTF-8 and lone surrogates become
// U+FFFD, as encoding/json does.
func (d *jsonDec) str() ([]byte, error) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return nil, d.fail("expected a string")
	}
	start, end, err := d.strSpan()
	if err != nil || end >= 0 {
		return d.b[start:max(end, start)], err
	}
	return d.strSlow(start)
}

// strVal reads a string literal and returns it as a string: a substring of
// d.s when it needs no unescaping, else a copy.
func (d *jsonDec) strVal() (string, error) {
	start, end, err := d.strSpan()
	if err != nil {
		return "", err
	}
	if end >= 0 {
		return d.s[start:end], nil
	}
	b, err := d.strSlow(start)
	return string(b), err
}

// strSpan scans a string literal at d.i. When it needs no unescaping (no
// escape, valid UTF-8) it consumes it and returns its content's span;
// otherwise it returns end -1 and leaves d.i for strSlow.
func (d *jsonDec) strSpan() (start, end int, err error) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return 0, 0, d.fail("expected a string")
	}
	start = d.i + 1
	ascii := true
	for j := start; j < len(d.b); j++ {
		c := d.b[j]
		if c == '"' {
			if !ascii && !utf8.Valid(d.b[start:j]) {
				return start, -1, nil
			}
			d.i = j + 1
			return start, j, nil
		}
		if c == '\\' {
			return start, -1, nil
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
		if c < 0x20 {
			d.i = j
			return 0, 0, d.fail("control character in string")
		}
	}
	d.i = len(d.b)
	return 0, 0, d.fail("unterminated string")
}

func (d *jsonDec) strSlow(start int) ([]byte, error) {
	out := d.scratch[:0]
	j := start
	for j < len(d.b) {
		c := d.b[j]
		switch {
		case c == '"':
			d.i = j + 1
			d.scratch = out
			return out, nil
		case c < 0x20:
			d.i = j
			return nil, d.fail("control character in string")
		case c == '\\':
			if j+1 >= len(d.b) {
				d.i = j
				return nil, d.fail("unterminated escape")
			}
			e := d.b[j+1]
			j += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := hex4(d.b[j:])
				if !ok {
					d.i = j
					return nil, d.fail("bad \\u escape")
				}
				j += 4
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if j+6 <= len(d.b) && d.b[j] == '\\' && d.b[j+1] == 'u' {
						if v, ok := hex4(d.b[j+2:]); ok {
							r2 = v
						}
					}
					if p := utf16.DecodeRune(r, r2); p != utf8.RuneError {
						r = p
						j += 6
					} else {
						r = utf8.RuneError
					}
				}
				out = utf8.AppendRune(out, r)
			default:
				d.i = j - 1
				return nil, d.fail("bad escape")
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			j++
		default:
			r, size := utf8.DecodeRune(d.b[j:])
			if r == utf8.RuneError && size == 1 {
				out = append(out, "\ufffd"...)
			} else {
				out = append(out, d.b[j:j+size]...)
			}
			j += size
		}
	}
	d.i = len(d.b)
	d.scratch = out
	return nil, d.fail("unterminated string")
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// number reads a JSON number and returns its text.
func (d *jsonDec) number() ([]byte, error) {
	start := d.i
	b := d.b
	i := d.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		d.i = i
		return nil, d.fail("bad number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			d.i = i
			return nil, d.fail("bad number fraction")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			d.i = i
			return nil, d.fail("bad number exponent")
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	d.i = i
	return b[start:i], nil
}

// literal consumes the literal word (true, false, null).
func (d *jsonDec) literal(word string) error {
	if len(d.b)-d.i < len(word) || string(d.b[d.i:d.i+len(word)]) != word {
		return d.fail("bad literal")
	}
	d.i += len(word)
	return nil
}

// skip reads and validates one value of any type.
func (d *jsonDec) skip() error {
	switch c := d.next(); {
	case c == '"':
		_, err := d.str()
		return err
	case c == '{' || c == '[':
		d.depth++
		if d.depth > maxJSONDepth {
			return d.fail("nested too deep")
		}
		d.i++
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		if d.next() == end {
			d.i++
			d.depth--
			return nil
		}
		for {
			if c == '{' {
				d.ws()
				if _, err := d.str(); err != nil {
					return err
				}
				if err := d.expect(':'); err != nil {
					return err
				}
			}
			if err := d.skip(); err != nil {
				return err
			}
			switch d.next() {
			case ',':
				d.i++
			case end:
				d.i++
				d.depth--
				return nil
			default:
				return d.fail("expected , or end of container")
			}
		}
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := d.number()
		return err
	default:
		return d.fail("expected a value")
	}
}

// parseInt parses a decimal integer without sign slack or fraction and
// checks it against [lo, hi].
func parseInt(b []byte, lo, hi int64) (int64, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg = true
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
		if v < 0 {
			return 0, false
		}
	}
	if neg {
		v = -v
	}
	return v, v >= lo && v <= hi
}

// intField reads an integer field given as a JSON number or as a string of
// digits.
func (d *jsonDec) intField(name string, lo, hi int64) (int64, error) {
	var text []byte
	var err error
	if d.next() == '"' {
		text, err = d.str()
	} else {
		text, err = d.number()
	}
	if err != nil {
		return 0, err
	}
	v, ok := parseInt(text, lo, hi)
	if !ok {
		return 0, d.fail(name + " is not an integer in range")
	}
	return v, nil
}

// decodeJSONHeader decodes a JSON header into c. Unknown keys are skipped
// (after validation), language may be a string or a Java LanguageCode
// number, remark and extFields may be null or absent, ext values that are
// not strings are kept as their JSON text (null values are dropped).
// Duplicate keys: the last one wins.
func decodeJSONHeader(h []byte, c *Command) error {
	d := jsonDec{b: h, s: string(h)}
	if err := d.expect('{'); err != nil {
		return err
	}
	if d.next() == '}' {
		d.i++
		return d.end()
	}
	for {
		d.ws()
		key, err := d.str()
		if err != nil {
			return err
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		switch string(key) {
		case "code":
			// Java's code is an int: RocketMQ 5 numbers some requests
			// above int16 (200050 POP_MESSAGE). Such a code is kept aside
			// (Command.wideCode) for the server to refuse.
			v, err := d.intField("code", math.MinInt32, math.MaxInt32)
			if err != nil {
				return err
			}
			c.Code, c.wideCode = int16(v), 0
			if v != int64(int16(v)) {
				c.Code, c.wideCode = 0, int32(v)
			}
		case "version":
			v, err := d.intField("version", math.MinInt16, math.MaxInt16)
			if err != nil {
				return err
			}
			c.Version = int16(v)
		case "opaque":
			v, err := d.intField("opaque", math.MinInt32, math.MaxInt32)
			if err != nil {
				return err
			}
			c.Opaque = int32(v)
		case "flag":
			v, err := d.intField("flag", math.MinInt32, math.MaxInt32)
			if err != nil {
				return err
			}
			c.Flag = int32(v)
		case "language":
			switch ch := d.next(); {
			case ch == '"':
				s, err := d.strVal()
				if err != nil {
					return err
				}
				c.Language = s
			case ch == 'n':
				if err := d.literal("null"); err != nil {
					return err
				}
				c.Language = ""
			default:
				v, err := d.intField("language", math.MinInt64, math.MaxInt64)
				if err != nil {
					return err
				}
				c.Language = languageName(v)
			}
		case "remark":
			if d.next() == 'n' {
				if err := d.literal("null"); err != nil {
					return err
				}
				c.Remark = ""
				break
			}
			s, err := d.strVal()
			if err != nil {
				return err
			}
			c.Remark = s
		case "extFields":
			if err := d.extFields(c); err != nil {
				return err
			}
		default:
			if err := d.skip(); err != nil {
				return err
			}
		}
		switch d.next() {
		case ',':
			d.i++
		case '}':
			d.i++
			return d.end()
		default:
			return d.fail("expected , or }")
		}
	}
}

func (d *jsonDec) end() error {
	d.ws()
	if d.i != len(d.b) {
		return d.fail("data after the header object")
	}
	return nil
}

// extFields reads the extFields value: null or an object.
func (d *jsonDec) extFields(c *Command) error {
	switch d.next() {
	case 'n':
		if err := d.literal("null"); err != nil {
			return err
		}
		c.ExtFields = nil
		c.ext = c.ext[:0]
		return nil
	case '{':
		d.i++
	default:
		return d.fail("extFields is not an object")
	}
	c.ExtFields = nil
	c.ext = c.ext[:0]
	if d.next() == '}' {
		d.i++
		return nil
	}
	for {
		d.ws()
		key, err := d.strVal()
		if err != nil {
			return err
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		var val string
		drop := false
		switch d.next() {
		case '"':
			v, err := d.strVal()
			if err != nil {
				return err
			}
			val = v
		case 'n':
			if err := d.literal("null"); err != nil {
				return err
			}
			drop = true
		default:
			start := d.i
			if err := d.skip(); err != nil {
				return err
			}
			val = d.s[start:d.i]
		}
		if c.ext == nil {
			c.ext = make([]extPair, 0, 16)
		}
		c.ext = append(c.ext, extPair{key: key, value: val, null: drop})
		switch d.next() {
		case ',':
			d.i++
		case '}':
			d.i++
			return nil
		default:
			return d.fail("expected , or } in extFields")
		}
	}
}
