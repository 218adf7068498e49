package sqlfilter

import "fmt"

// Limits on what Compile accepts, so that a hostile subscription cannot
// cost much memory or stack.
const (
	// MaxLength is the longest expression, in bytes.
	MaxLength = 4096
	// MaxDepth is the deepest nesting of parentheses and the unary
	// operators NOT, - and +.
	MaxDepth = 64
)

// TagsKey is the property that holds a message's tag. A filter refers to
// the tag as TAGS (TAGS = 'TagA', TAGS IN ('TagA', 'TagB')); the prop
// function given to Match must answer it, as RocketMQ's message
// properties do.
const TagsKey = "TAGS"

// Expr is a compiled filter expression. It is immutable and safe for
// concurrent use.
type Expr struct {
	root *node
}

// Compile parses a SQL92 filter expression. On failure the error wraps
// ErrSyntax (a *SyntaxError naming the 1-based position and what was
// expected) or ErrLimit (the expression is longer than MaxLength or nests
// deeper than MaxDepth).
func Compile(expr string) (*Expr, error) {
	if len(expr) > MaxLength {
		return nil, fmt.Errorf("%w: expression is %d bytes, longer than the limit of %d bytes", ErrLimit, len(expr), MaxLength)
	}
	p := &parser{src: expr}
	toks, lerr := lex(expr)
	if lerr != nil {
		return nil, &SyntaxError{Pos: p.pos(lerr.off), Msg: lerr.msg}
	}
	p.toks = toks
	root, err := p.run()
	if err != nil {
		return nil, err
	}
	return &Expr{root: root}, nil
}

func (p *parser) run() (root *node, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(parseFailure)
			if !ok {
				panic(r)
			}
			err = f.err
		}
	}()
	return p.parseTop(), nil
}

// Match reports whether a message whose properties prop looks up passes
// the filter: whether the expression evaluates to TRUE. prop returns a
// property's value and whether the message has it; for TagsKey it returns
// the message's tag. A condition on a missing property is unknown, and
// unknown is not TRUE (so a NOT of it does not match either); a property
// that does not parse as the number it is compared with makes the message
// not match, as it does in RocketMQ. Match calls prop only from its own
// goroutine, before it returns, and does not allocate.
func (e *Expr) Match(prop func(key string) (string, bool)) bool {
	v := e.root.eval(prop)
	return v.k == kBool && v.b
}

// String returns the expression in canonical form: keywords in capitals,
// single spaces, parentheses only where needed, and literals normalized.
// Compile accepts it, and the result matches the same messages.
func (e *Expr) String() string { return format(e.root) }
