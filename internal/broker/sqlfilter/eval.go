package sqlfilter

import (
	"math"
	"strconv"
	"strings"
)

// kind is the type of a value during evaluation.
type kind uint8

const (
	// kNull is SQL's unknown: a missing property, the NULL literal, or a
	// comparison with either of them.
	kNull kind = iota
	kBool
	kInt // Java Integer/Long: integer literals
	kDbl // Java Double: decimal literals
	kStr // properties and string literals
	// kErr is an evaluation error (a string that does not parse as the
	// number it is compared with). In RocketMQ it is an exception that
	// aborts the whole evaluation, so the message does not match; here it
	// propagates through every operator that evaluates it.
	kErr
)

// value is the result of evaluating a node. It is passed by value so that
// evaluation does not allocate.
type value struct {
	k kind
	b bool
	i int64
	f float64
	s string
}

var (
	vNull  = value{k: kNull}
	vErr   = value{k: kErr}
	vTrue  = value{k: kBool, b: true}
	vFalse = value{k: kBool, b: false}
)

func boolValue(b bool) value {
	if b {
		return vTrue
	}
	return vFalse
}

// op is the operator of a node.
type op uint8

const (
	opConst      op = iota + 1 // val
	opProp                     // name
	opNeg                      // -a
	opNot                      // NOT a
	opBoolCast                 // a property used as a condition
	opAnd                      // a AND b
	opOr                       // a OR b
	opEq                       // a = b
	opNe                       // a <> b
	opGt                       // a > b
	opGe                       // a >= b
	opLt                       // a < b
	opLe                       // a <= b
	opIsNull                   // a IS NULL, a IS NOT NULL (not)
	opBetween                  // a BETWEEN b AND c, a NOT BETWEEN b AND c (not)
	opIn                       // a IN (list), a NOT IN (list) (not)
	opContains                 // a CONTAINS 'x', a NOT CONTAINS 'x' (not)
	opStartsWith               // a STARTSWITH 'x', a NOT STARTSWITH 'x' (not)
	opEndsWith                 // a ENDSWITH 'x', a NOT ENDSWITH 'x' (not)
)

// inSetMin is the IN-list length from which a map is used for look-ups.
const inSetMin = 8

// node is one operator or operand of a compiled expression. Nodes are
// immutable after Compile.
type node struct {
	op  op
	not bool // the NOT form of IS NULL, BETWEEN, IN and the string operators
	// negLit marks a numeric constant written as a minus sign applied to a
	// literal (-5): RocketMQ keeps that as a negation, not a constant, so
	// the checks made for constants do not apply to it.
	negLit bool
	off    int // byte offset of the node's first token, for errors

	val  value  // opConst
	name string // opProp
	str  string // string operators: the search text

	a, b, c *node // operands; c is BETWEEN's upper bound

	list []string            // opIn, in written order
	set  map[string]struct{} // opIn with at least inSetMin entries
}

// eval evaluates n against a message's properties, following RocketMQ's
// expression classes (filter/expression) operator by operator, including
// the order in which operands are evaluated, so that where RocketMQ throws
// (kErr here) or yields null is the same.
func (n *node) eval(prop func(string) (string, bool)) value {
	switch n.op {
	case opConst:
		return n.val
	case opProp:
		s, ok := prop(n.name)
		if !ok {
			return vNull
		}
		return value{k: kStr, s: s}
	case opNeg:
		v := n.a.eval(prop)
		switch v.k {
		case kErr:
			return vErr
		case kInt:
			return value{k: kInt, i: -v.i}
		case kDbl:
			return value{k: kDbl, f: -v.f}
		}
		return vNull
	case opNot:
		v := n.a.eval(prop)
		if v.k == kBool {
			return boolValue(!v.b)
		}
		return v // null or error
	case opBoolCast:
		v := n.a.eval(prop)
		switch v.k {
		case kNull, kErr, kBool:
			return v
		}
		return vFalse // a string is never TRUE
	case opAnd:
		l := n.a.eval(prop)
		if l.k == kErr || l.k == kBool && !l.b {
			return l
		}
		r := n.b.eval(prop)
		if r.k == kErr || r.k == kBool && !r.b {
			return r
		}
		if l.k != kBool || r.k != kBool {
			return vNull
		}
		return vTrue
	case opOr:
		l := n.a.eval(prop)
		if l.k == kErr || l.k == kBool && l.b {
			return l
		}
		r := n.b.eval(prop)
		if r.k == kErr || r.k == kBool && r.b {
			return r
		}
		if l.k != kBool || r.k != kBool {
			return vNull
		}
		return vFalse
	case opEq, opNe:
		v := evalEqual(n.a.eval(prop), n.b, prop)
		if n.op == opNe && v.k == kBool {
			v.b = !v.b
		}
		return v
	case opGt, opGe, opLt, opLe:
		return compareWith(n.op, n.a.eval(prop), n.b, prop)
	case opIsNull:
		v := n.a.eval(prop)
		if v.k == kErr {
			return vErr
		}
		return boolValue((v.k == kNull) != n.not)
	case opBetween:
		v := n.a.eval(prop)
		if v.k == kErr {
			return vErr
		}
		if !n.not {
			// v >= low AND v <= high
			l := compareWith(opGe, v, n.b, prop)
			if l.k == kErr || l.k == kBool && !l.b {
				return l
			}
			r := compareWith(opLe, v, n.c, prop)
			if r.k == kErr || r.k == kBool && !r.b {
				return r
			}
			if l.k != kBool || r.k != kBool {
				return vNull
			}
			return vTrue
		}
		// v < low OR v > high
		l := compareWith(opLt, v, n.b, prop)
		if l.k == kErr || l.k == kBool && l.b {
			return l
		}
		r := compareWith(opGt, v, n.c, prop)
		if r.k == kErr || r.k == kBool && r.b {
			return r
		}
		if l.k != kBool || r.k != kBool {
			return vNull
		}
		return vFalse
	case opIn:
		v := n.a.eval(prop)
		if v.k != kStr {
			return vNull
		}
		var found bool
		if n.set != nil {
			_, found = n.set[v.s]
		} else {
			for _, s := range n.list {
				if s == v.s {
					found = true
					break
				}
			}
		}
		return boolValue(found != n.not)
	case opContains, opStartsWith, opEndsWith:
		if n.str == "" {
			return vFalse // RocketMQ: an empty search never matches
		}
		v := n.a.eval(prop)
		if v.k == kErr {
			return vErr
		}
		if v.k != kStr {
			return vFalse // null too: these operators never yield null
		}
		var hit bool
		switch n.op {
		case opContains:
			hit = strings.Contains(v.s, n.str)
		case opStartsWith:
			hit = strings.HasPrefix(v.s, n.str)
		default:
			hit = strings.HasSuffix(v.s, n.str)
		}
		return boolValue(hit != n.not)
	}
	panic("sqlfilter: unknown operator") // a broken invariant of Compile
}

// evalEqual is RocketMQ's '=': both operands are evaluated; if exactly one
// is null the result is null when it is the left one and FALSE when it is
// the right one (sic); two nulls are equal.
func evalEqual(l value, rn *node, prop func(string) (string, bool)) value {
	if l.k == kErr {
		return vErr
	}
	r := rn.eval(prop)
	if r.k == kErr {
		return vErr
	}
	if l.k == kNull || r.k == kNull {
		switch {
		case l.k == r.k:
			return vTrue
		case l.k == kNull:
			return vNull
		}
		return vFalse
	}
	c, ok := javaCompare(l, r)
	if !ok {
		return vErr
	}
	return boolValue(c == 0)
}

// compareWith is RocketMQ's '>', '>=', '<' and '<=' with the left operand
// already evaluated: a null left operand yields null without evaluating
// the right one. Two strings are both parsed as doubles.
func compareWith(o op, l value, rn *node, prop func(string) (string, bool)) value {
	if l.k == kNull || l.k == kErr {
		return l
	}
	r := rn.eval(prop)
	if r.k == kNull || r.k == kErr {
		return r
	}
	var c int
	if l.k == kStr && r.k == kStr {
		lf, ok1 := parseJavaDouble(l.s)
		rf, ok2 := parseJavaDouble(r.s)
		if !ok1 || !ok2 {
			return vErr
		}
		c = compareDouble(lf, rf)
	} else {
		var ok bool
		if c, ok = javaCompare(l, r); !ok {
			return vErr
		}
	}
	switch o {
	case opGt:
		return boolValue(c > 0)
	case opGe:
		return boolValue(c >= 0)
	case opLt:
		return boolValue(c < 0)
	}
	return boolValue(c <= 0)
}

// javaCompare compares two non-null values the way RocketMQ's
// ComparisonExpression.__compare does with string conversion on: values of
// different types are converted towards each other (integer to double; a
// string to the number, or boolean, it is compared with), a failed
// conversion is an error (ok false), and otherwise unrelated types compare
// as "less than".
func javaCompare(l, r value) (c int, ok bool) {
	if l.k == r.k {
		switch l.k {
		case kStr:
			return strings.Compare(l.s, r.s), true
		case kInt:
			return compareInt(l.i, r.i), true
		case kDbl:
			return compareDouble(l.f, r.f), true
		case kBool:
			return compareBool(l.b, r.b), true
		}
		return -1, true
	}
	switch l.k {
	case kBool:
		if r.k == kStr {
			return 0, false // a ClassCastException in RocketMQ
		}
		return -1, true
	case kInt:
		switch r.k {
		case kDbl:
			return compareDouble(float64(l.i), r.f), true
		case kStr:
			ri, ok := parseJavaLong(r.s)
			if !ok {
				return 0, false
			}
			return compareInt(l.i, ri), true
		}
		return -1, true
	case kDbl:
		switch r.k {
		case kInt:
			return compareDouble(l.f, float64(r.i)), true
		case kStr:
			rf, ok := parseJavaDouble(r.s)
			if !ok {
				return 0, false
			}
			return compareDouble(l.f, rf), true
		}
		return -1, true
	case kStr:
		switch r.k {
		case kBool:
			return compareBool(strings.EqualFold(l.s, "true"), r.b), true
		case kInt:
			li, ok := parseJavaLong(l.s)
			if !ok {
				return 0, false
			}
			return compareInt(li, r.i), true
		case kDbl:
			lf, ok := parseJavaDouble(l.s)
			if !ok {
				return 0, false
			}
			return compareDouble(lf, r.f), true
		}
	}
	return -1, true
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}

// compareDouble is Java's Double.compare: -0.0 is less than 0.0, NaN
// equals itself and is greater than every other value.
func compareDouble(a, b float64) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	ab, bb := javaDoubleBits(a), javaDoubleBits(b)
	switch {
	case ab == bb:
		return 0
	case ab < bb:
		return -1
	}
	return 1
}

func javaDoubleBits(f float64) int64 {
	if f != f {
		return 0x7ff8000000000000 // Java's canonical NaN
	}
	return int64(math.Float64bits(f))
}

// parseJavaLong parses s as Java's Long.valueOf does: an optional sign and
// decimal digits, nothing else, within int64. (Java also takes non-ASCII
// Unicode digits; this takes ASCII ones only.)
func parseJavaLong(s string) (int64, bool) {
	neg := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if len(s) == 0 {
		return 0, false
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<63-d)/10 {
			return 0, false // beyond 2^63, so beyond any int64
		}
		v = v*10 + d
	}
	if neg {
		return -int64(v), true // -(1<<63) wraps to MinInt64, as wanted
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// parseJavaDouble parses s as Java's Double.valueOf does: surrounding
// characters up to ' ' are trimmed; then an optional sign and either
// "NaN", "Infinity", a decimal number (digits with an optional point and
// an optional exponent) or a hexadecimal one (0x1.8p3), optionally
// followed by one of f, F, d, D. It does not allocate for valid input.
func parseJavaDouble(s string) (float64, bool) {
	for len(s) > 0 && s[0] <= ' ' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] <= ' ' {
		s = s[:len(s)-1]
	}
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	rest := s[i:]
	switch rest {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		if neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	if len(rest) > 1 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'X') {
		return parseJavaHexDouble(s, i+2)
	}
	digits := 0
	for i < len(s) && isDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		n := expLen(s, i)
		if n == 0 {
			return 0, false
		}
		i += n
	}
	return finishJavaDouble(s, i)
}

// parseJavaHexDouble parses the hexadecimal form; s[i:] follows "0x":
// hexdigits with an optional point (at least one digit), then a binary
// exponent [pP][+-]?[0-9]+, which Java requires.
func parseJavaHexDouble(s string, i int) (float64, bool) {
	digits := 0
	for i < len(s) && isHexDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isHexDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 || i >= len(s) || s[i] != 'p' && s[i] != 'P' {
		return 0, false
	}
	i++
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	expDigits := 0
	for i < len(s) && isDigit(s[i]) {
		i++
		expDigits++
	}
	if expDigits == 0 {
		return 0, false
	}
	return finishJavaDouble(s, i)
}

// finishJavaDouble accepts an optional type suffix at s[i] and converts
// s[:i], whose syntax has been checked.
func finishJavaDouble(s string, i int) (float64, bool) {
	if i < len(s) {
		switch s[i] {
		case 'f', 'F', 'd', 'D':
		default:
			return 0, false
		}
		if i+1 != len(s) {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(s[:i], 64)
	if err != nil {
		// The syntax was checked, so this is a range error: f is ±Inf
		// or 0, which is what Java yields too.
		return f, true
	}
	return f, true
}

func isHexDigit(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
