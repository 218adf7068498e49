package rmq

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/petrelmq/petrel/internal/remoting"
)

// FieldError is a request header field that is missing or does not parse.
// Its Error text is a sentence for the client: the front sends it as the
// remark (it carries no internal cause).
type FieldError struct {
	Field string // the ext key, as the client sent it
	Value string // what was sent; "" when Missing
	// Want says what the field must be ("a 32-bit integer", "true or
	// false", ...); empty when Missing.
	Want    string
	Missing bool
}

func (e *FieldError) Error() string {
	if e.Missing {
		return fmt.Sprintf("request header field %s is missing; send it", e.Field)
	}
	v := e.Value
	if len(v) > 64 {
		v = v[:64] + "..."
	}
	hint := ""
	switch {
	case strings.Contains(e.Want, "integer"):
		hint = "; send it as decimal digits"
	case e.Want == wantBool:
		hint = "; send true or false"
	}
	return fmt.Sprintf("request header field %s is %q, not %s%s", e.Field, v, e.Want, hint)
}

// wantBool is FieldError.Want of a strict boolean field.
const wantBool = "true or false"

// fields reads a command's ext fields, remembering the first that is
// missing or malformed: decoders read every field, then return f.err.
// It reads through Ext, which also finds the fields of requests given to
// a remoting BatchHandler and of lazily decoded responses (no ExtFields
// map: the fields stay listed as received).
type fields struct {
	c   *remoting.Command
	err *FieldError
}

func (f *fields) fail(e *FieldError) {
	if f.err == nil {
		f.err = e
	}
}

// result is the decode error: nil, or the first *FieldError.
func (f *fields) result() error {
	if f.err == nil {
		return nil
	}
	return f.err
}

// str returns an optional string field.
func (f *fields) str(name string) string { return f.c.Ext(name) }

// need returns a required string field (missing when absent or empty).
func (f *fields) need(name string) string {
	v := f.c.Ext(name)
	if v == "" {
		f.fail(&FieldError{Field: name, Missing: true})
	}
	return v
}

func (f *fields) i32(name string) int32     { return int32(f.num(name, f.c.Ext(name), 32, false)) }
func (f *fields) needI32(name string) int32 { return int32(f.num(name, f.c.Ext(name), 32, true)) }
func (f *fields) i64(name string) int64     { return f.num(name, f.c.Ext(name), 64, false) }
func (f *fields) needI64(name string) int64 { return f.num(name, f.c.Ext(name), 64, true) }
func (f *fields) boolean(name string) bool  { return parseBool(f.c.Ext(name)) }

// num parses a decimal field of the given width. An absent optional field
// is 0.
func (f *fields) num(name, v string, bits int, required bool) int64 {
	if v == "" {
		if required {
			f.fail(&FieldError{Field: name, Missing: true})
		}
		return 0
	}
	x, ok := parseDecimal(v, bits)
	if !ok {
		f.fail(&FieldError{Field: name, Value: v, Want: fmt.Sprintf("a %d-bit integer", bits)})
		return 0
	}
	return x
}

// parseDecimal is strconv.ParseInt(v, 10, bits) with a fast path for what
// clients send, an optional minus and at most 18 digits (no overflow is
// possible): the pull header alone carries eight numbers.
func parseDecimal(v string, bits int) (int64, bool) {
	d := v
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 {
		x, err := strconv.ParseInt(v, 10, bits)
		return x, err == nil
	}
	var x int64
	for i := 0; i < len(d); i++ {
		c := d[i] - '0'
		if c > 9 {
			x, err := strconv.ParseInt(v, 10, bits)
			return x, err == nil
		}
		x = x*10 + int64(c)
	}
	if len(d) < len(v) {
		x = -x
	}
	if bits < 64 && (x < -1<<(bits-1) || x > 1<<(bits-1)-1) {
		return 0, false
	}
	return x, true
}

// parseNum is num for decoders that walk the fields themselves (EachExt,
// one pass on the hot path).
func (f *fields) parseNum(name, v string, bits int) int64 { return f.num(name, v, bits, false) }

// strictBool returns an optional boolean field that must be "true" or
// "false" when present (absent is false).
func (f *fields) strictBool(name string) bool {
	switch v := f.c.Ext(name); v {
	case "", "false":
		return false
	case "true":
		return true
	default:
		f.fail(&FieldError{Field: name, Value: v, Want: wantBool})
		return false
	}
}

// needBool returns a required boolean field, read as Java reads it
// (parseBool).
func (f *fields) needBool(name string) bool { return parseBool(f.need(name)) }

// parseBool is Java's Boolean.parseBoolean: "true" in any case is true,
// anything else false.
func parseBool(v string) bool { return strings.EqualFold(v, "true") }

// itoa formats an integer field.
func itoa[T int | int32 | int64](v T) string { return strconv.FormatInt(int64(v), 10) }

// btoa formats a boolean field as Java does.
func btoa(v bool) string { return strconv.FormatBool(v) }
