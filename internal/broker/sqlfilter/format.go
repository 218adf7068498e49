package sqlfilter

import (
	"strconv"
	"strings"
)

// Binding levels of the grammar, loosest first; format puts parentheses
// only where a node sits in a slot that needs a tighter level, so that the
// text parses back to the same tree and nests no deeper than the input did.
const (
	lvlOr = iota + 1
	lvlAnd
	lvlEquality   // = <> IS NULL
	lvlComparison // > >= < <= BETWEEN IN CONTAINS STARTSWITH ENDSWITH
	lvlUnary      // NOT, -, literals, properties
)

// opText spells the binary and string operators.
var opText = [...]string{
	opGt: ">", opGe: ">=", opLt: "<", opLe: "<=",
	opContains: "CONTAINS", opStartsWith: "STARTSWITH", opEndsWith: "ENDSWITH",
}

func level(n *node) int {
	switch n.op {
	case opOr:
		return lvlOr
	case opAnd:
		return lvlAnd
	case opEq, opNe, opIsNull:
		return lvlEquality
	case opGt, opGe, opLt, opLe, opBetween, opIn, opContains, opStartsWith, opEndsWith:
		return lvlComparison
	case opBoolCast:
		return level(n.a)
	}
	return lvlUnary
}

// format renders n as canonical filter text.
func format(n *node) string {
	var b strings.Builder
	write(&b, n, lvlOr)
	return b.String()
}

func write(b *strings.Builder, n *node, min int) {
	if level(n) < min {
		b.WriteByte('(')
		write(b, n, lvlOr)
		b.WriteByte(')')
		return
	}
	not := ""
	if n.not {
		not = "NOT "
	}
	switch n.op {
	case opConst:
		writeConst(b, n)
	case opProp:
		b.WriteString(n.name)
	case opBoolCast:
		write(b, n.a, min)
	case opNeg:
		var inner strings.Builder
		write(&inner, n.a, lvlUnary)
		b.WriteByte('-')
		if strings.HasPrefix(inner.String(), "-") {
			b.WriteByte(' ') // "--" would start a comment
		}
		b.WriteString(inner.String())
	case opNot:
		b.WriteString("NOT ")
		write(b, n.a, lvlUnary)
	case opOr:
		write(b, n.a, lvlOr)
		b.WriteString(" OR ")
		write(b, n.b, lvlAnd)
	case opAnd:
		write(b, n.a, lvlAnd)
		b.WriteString(" AND ")
		write(b, n.b, lvlEquality)
	case opEq, opNe:
		write(b, n.a, lvlEquality)
		if n.op == opEq {
			b.WriteString(" = ")
		} else {
			b.WriteString(" <> ")
		}
		write(b, n.b, lvlComparison)
	case opIsNull:
		write(b, n.a, lvlEquality)
		b.WriteString(" IS " + not + "NULL")
	case opGt, opGe, opLt, opLe:
		write(b, n.a, lvlComparison)
		b.WriteString(" " + opText[n.op] + " ")
		write(b, n.b, lvlUnary)
	case opBetween:
		write(b, n.a, lvlComparison)
		b.WriteString(" " + not + "BETWEEN ")
		write(b, n.b, lvlUnary)
		b.WriteString(" AND ")
		write(b, n.c, lvlUnary)
	case opIn:
		write(b, n.a, lvlComparison)
		b.WriteString(" " + not + "IN (")
		for i, s := range n.list {
			if i > 0 {
				b.WriteString(", ")
			}
			writeString(b, s)
		}
		b.WriteByte(')')
	case opContains, opStartsWith, opEndsWith:
		write(b, n.a, lvlComparison)
		b.WriteString(" " + not + opText[n.op] + " ")
		writeString(b, n.str)
	}
}

func writeConst(b *strings.Builder, n *node) {
	v := n.val
	switch v.k {
	case kNull:
		b.WriteString("NULL")
	case kBool:
		if v.b {
			b.WriteString("TRUE")
		} else {
			b.WriteString("FALSE")
		}
	case kStr:
		writeString(b, v.s)
	case kInt:
		// Literals are never negative; negLit constants are -literal.
		if n.negLit {
			b.WriteByte('-')
			b.WriteString(strconv.FormatUint(uint64(-v.i), 10))
		} else {
			b.WriteString(strconv.FormatInt(v.i, 10))
		}
	case kDbl:
		f := v.f
		if n.negLit {
			b.WriteByte('-')
			f = -f
		}
		// Keep a point or an exponent: 5.0 and 5 compare differently.
		s := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		b.WriteString(s)
	}
}

func writeString(b *strings.Builder, s string) {
	b.WriteByte('\'')
	b.WriteString(strings.ReplaceAll(s, "'", "''"))
	b.WriteByte('\'')
}
