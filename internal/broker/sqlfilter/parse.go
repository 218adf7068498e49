package sqlfilter

import (
	"fmt"
	"unicode/utf8"
)

// parser is a recursive-descent parser over the tokens of one expression.
// Its functions follow the productions of RocketMQ's SelectorParser.jj and
// make the checks RocketMQ's expression factories make, so that the same
// texts are accepted and build the same trees. It reports errors by
// panicking with a parseFailure, which Compile recovers.
type parser struct {
	src   string
	toks  []token
	i     int
	depth int
}

// parseFailure carries a Compile error through a panic.
type parseFailure struct{ err error }

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) peekAt(k int) token {
	if j := p.i + k; j < len(p.toks) {
		return p.toks[j]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

// pos converts a byte offset to a 1-based character position.
func (p *parser) pos(off int) int {
	return utf8.RuneCountInString(p.src[:off]) + 1
}

func (p *parser) fail(off int, format string, args ...any) {
	panic(parseFailure{&SyntaxError{Pos: p.pos(off), Msg: fmt.Sprintf(format, args...)}})
}

// unexpected reports the token after a complete operand that cannot
// continue the expression; want says what could have come instead.
func (p *parser) unexpected(want string) {
	t := p.peek()
	if t.kind == kwNot {
		n := p.peekAt(1)
		p.fail(n.off, "expected BETWEEN, IN, CONTAINS, STARTSWITH or ENDSWITH after NOT, found %s", n.describe())
	}
	p.fail(t.off, "expected %s, found %s", want, t.describe())
}

// parseTop parses a whole expression: orExpression, then the end of the
// input. (RocketMQ ignores what follows the longest valid prefix; we
// reject it.)
func (p *parser) parseTop() *node {
	x := p.parseOr()
	if p.peek().kind != tEOF {
		if p.peek().kind == tRParen {
			p.fail(p.peek().off, "found ')' without a matching '('")
		}
		p.unexpected("an operator or end of input")
	}
	return p.asBool(x)
}

// orExpression: andExpression (OR andExpression)*
func (p *parser) parseOr() *node {
	l := p.parseAnd()
	for p.peek().kind == kwOr {
		p.next()
		r := p.parseAnd()
		l = &node{op: opOr, a: p.asBool(l), b: p.asBool(r), off: l.off}
	}
	return l
}

// andExpression: equalityExpression (AND equalityExpression)*
func (p *parser) parseAnd() *node {
	l := p.parseEquality()
	for p.peek().kind == kwAnd {
		p.next()
		r := p.parseEquality()
		l = &node{op: opAnd, a: p.asBool(l), b: p.asBool(r), off: l.off}
	}
	return l
}

// equalityExpression: comparisonExpression
//
//	( "=" comparisonExpression | "<>" comparisonExpression
//	| IS NULL | IS NOT NULL )*
func (p *parser) parseEquality() *node {
	l := p.parseComparison()
	for {
		t := p.peek()
		switch t.kind {
		case tEq, tNe:
			p.next()
			r := p.parseComparison()
			o := opEq
			if t.kind == tNe {
				o = opNe
			}
			p.checkEqualOperand(l, t)
			p.checkEqualOperand(r, t)
			if isPlainConst(l) && isPlainConst(r) && l.val.k == kBool && r.val.k != kBool {
				p.fail(t.off, "%s cannot be compared with %s", short(l), short(r))
			}
			l = &node{op: o, a: l, b: r, off: l.off}
		case kwIs:
			p.next()
			not := false
			if p.peek().kind == kwNot {
				p.next()
				not = true
			}
			if n := p.next(); n.kind != kwNull {
				if not {
					p.fail(n.off, "expected NULL after IS NOT, found %s", n.describe())
				}
				p.fail(n.off, "expected NULL or NOT NULL after IS, found %s", n.describe())
			}
			l = &node{op: opIsNull, not: not, a: l, off: l.off}
		default:
			return l
		}
	}
}

// comparisonExpression: unaryExpr
//
//	( (">" | ">=" | "<" | "<=") unaryExpr
//	| [NOT] (CONTAINS | STARTSWITH | ENDSWITH) stringLiteral
//	| [NOT] BETWEEN unaryExpr AND unaryExpr
//	| [NOT] IN "(" stringLiteral ("," stringLiteral)* ")" )*
func (p *parser) parseComparison() *node {
	l := p.parseUnary()
	for {
		t := p.peek()
		not := false
		k := t.kind
		if k == kwNot {
			switch p.peekAt(1).kind {
			case kwContains, kwStartsWith, kwEndsWith, kwBetween, kwIn:
				p.next()
				not = true
				k = p.peek().kind
			default:
				return l
			}
		}
		switch k {
		case tGt, tGe, tLt, tLe:
			p.next()
			r := p.parseUnary()
			o := orderOp(k)
			p.checkOrderOperand(l, t)
			p.checkOrderOperand(r, t)
			l = &node{op: o, a: l, b: r, off: l.off}
		case kwContains, kwStartsWith, kwEndsWith:
			kw := p.next()
			s := p.next()
			if s.kind != tString {
				p.fail(s.off, "expected a string literal after %s, found %s", kw.describe(), s.describe())
			}
			o := stringOp(k)
			l = &node{op: o, not: not, a: l, str: s.str, off: l.off}
		case kwBetween:
			kw := p.next()
			lo := p.parseUnary()
			if a := p.next(); a.kind != kwAnd {
				p.fail(a.off, "expected AND between the bounds of BETWEEN, found %s", a.describe())
			}
			hi := p.parseUnary()
			p.checkOrderOperand(l, kw)
			p.checkOrderOperand(lo, kw)
			p.checkOrderOperand(hi, kw)
			if !not && isPlainConst(lo) && isPlainConst(hi) {
				if c, _ := javaCompare(hi.val, lo.val); c < 0 {
					p.fail(lo.off, "bounds of BETWEEN are reversed: %s is greater than %s", short(lo), short(hi))
				}
			}
			l = &node{op: opBetween, not: not, a: l, b: lo, c: hi, off: l.off}
		case kwIn:
			kw := p.next()
			if l.op != opProp {
				p.fail(kw.off, "IN needs a property name on its left, found %s", short(l))
			}
			l = &node{op: opIn, not: not, a: l, list: p.parseInList(), off: l.off}
			if len(l.list) >= inSetMin {
				l.set = make(map[string]struct{}, len(l.list))
				for _, s := range l.list {
					l.set[s] = struct{}{}
				}
			}
		default:
			return l
		}
	}
}

// parseInList parses "(" stringLiteral ("," stringLiteral)* ")" after IN.
func (p *parser) parseInList() []string {
	if t := p.next(); t.kind != tLParen {
		p.fail(t.off, "expected '(' after IN, found %s", t.describe())
	}
	var list []string
	for {
		t := p.next()
		if t.kind != tString {
			p.fail(t.off, "expected a string literal in the IN list, found %s", t.describe())
		}
		list = append(list, t.str)
		switch t := p.next(); t.kind {
		case tComma:
		case tRParen:
			return list
		default:
			p.fail(t.off, "expected ',' or ')' in the IN list, found %s", t.describe())
		}
	}
}

// unaryExpr: "+" unaryExpr | "-" unaryExpr | NOT unaryExpr | primaryExpr
func (p *parser) parseUnary() *node {
	t := p.peek()
	switch t.kind {
	case tPlus:
		p.next()
		p.enter(t)
		defer p.leave()
		return p.parseUnary()
	case tMinus:
		p.next()
		p.enter(t)
		defer p.leave()
		x := p.parseUnary()
		if isPlainConst(x) && (x.val.k == kInt || x.val.k == kDbl) {
			// Fold the sign into the literal, but remember that
			// RocketMQ sees a negation here.
			v := x.val
			v.i, v.f = -v.i, -v.f
			return &node{op: opConst, val: v, negLit: true, off: t.off}
		}
		return &node{op: opNeg, a: x, off: t.off}
	case kwNot:
		p.next()
		p.enter(t)
		defer p.leave()
		x := p.parseUnary()
		return &node{op: opNot, a: p.asBool(x), off: t.off}
	}
	return p.parsePrimary()
}

// enter counts one more level of nesting, opened by t: a parenthesis or a
// prefix operator. It bounds the parser's recursion and the tree's depth.
func (p *parser) enter(t token) {
	p.depth++
	if p.depth > MaxDepth {
		panic(parseFailure{fmt.Errorf("%w: expression nests deeper than %d levels at position %d", ErrLimit, MaxDepth, p.pos(t.off))})
	}
}

func (p *parser) leave() { p.depth-- }

// primaryExpr: literal | identifier | "(" orExpression ")"
func (p *parser) parsePrimary() *node {
	t := p.next()
	switch t.kind {
	case tString:
		return &node{op: opConst, val: value{k: kStr, s: t.str}, off: t.off}
	case tInt:
		return &node{op: opConst, val: value{k: kInt, i: t.ival}, off: t.off}
	case tFloat:
		return &node{op: opConst, val: value{k: kDbl, f: t.fval}, off: t.off}
	case kwTrue:
		return &node{op: opConst, val: vTrue, off: t.off}
	case kwFalse:
		return &node{op: opConst, val: vFalse, off: t.off}
	case kwNull:
		return &node{op: opConst, val: vNull, off: t.off}
	case tIdent:
		return &node{op: opProp, name: t.text, off: t.off}
	case tLParen:
		p.enter(t)
		defer p.leave()
		x := p.parseOr()
		if p.peek().kind != tRParen {
			p.unexpected(fmt.Sprintf("')' to close '(' at position %d", p.pos(t.off)))
		}
		p.next()
		return x
	}
	idx := p.i - 1 // index of t
	if t.kind == tEOF {
		idx = len(p.toks) - 1
	}
	if idx == 0 {
		p.fail(t.off, "expected an expression, found %s", t.describe())
	}
	p.fail(t.off, "expected a value after %s, found %s", p.toks[idx-1].describe(), t.describe())
	return nil
}

func orderOp(k tokKind) op {
	switch k {
	case tGt:
		return opGt
	case tGe:
		return opGe
	case tLt:
		return opLt
	}
	return opLe
}

func stringOp(k tokKind) op {
	switch k {
	case kwContains:
		return opContains
	case kwStartsWith:
		return opStartsWith
	}
	return opEndsWith
}

// asBool is RocketMQ's asBooleanExpression: a condition stays as it is, a
// property becomes a cast (TRUE only if the value is a boolean, which a
// property never is), anything else is an error.
func (p *parser) asBool(x *node) *node {
	if isBoolExpr(x) {
		return x
	}
	if x.op == opProp {
		return &node{op: opBoolCast, a: x, off: x.off}
	}
	p.fail(x.off, "expected a condition, found %s, which is not TRUE or FALSE", short(x))
	return nil
}

// checkEqualOperand rejects the NULL literal as an operand of = or <>.
func (p *parser) checkEqualOperand(x *node, t token) {
	if isPlainConst(x) && x.val.k == kNull {
		if t.kind == tNe {
			p.fail(x.off, "NULL cannot be compared with '<>': use IS NOT NULL")
		}
		p.fail(x.off, "NULL cannot be compared with '=': use IS NULL")
	}
}

// checkOrderOperand rejects operands of >, >=, <, <= and BETWEEN that
// RocketMQ rejects: literals other than numbers, and conditions.
func (p *parser) checkOrderOperand(x *node, t token) {
	if isPlainConst(x) {
		if x.val.k != kInt && x.val.k != kDbl {
			p.fail(x.off, "%s cannot be compared with %s: only numbers can be ordered", short(x), t.describe())
		}
		return
	}
	if isBoolExpr(x) {
		p.fail(x.off, "a condition cannot be compared with %s", t.describe())
	}
}

// isPlainConst reports whether x is what RocketMQ treats as a constant: a
// literal, not a negated one.
func isPlainConst(x *node) bool { return x.op == opConst && !x.negLit }

// isBoolExpr reports whether x is what RocketMQ calls a BooleanExpression:
// a condition, or the literals TRUE, FALSE and NULL.
func isBoolExpr(x *node) bool {
	switch x.op {
	case opConst:
		return !x.negLit && (x.val.k == kBool || x.val.k == kNull)
	case opProp, opNeg:
		return false
	}
	return true
}

// short renders x for an error message.
func short(x *node) string {
	return truncate(format(x), 40)
}
