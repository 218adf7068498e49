package sqlfilter

import (
	"errors"
	"fmt"
)

// ErrSyntax is wrapped by every error Compile returns for an expression
// that is not valid SQL92 filter text: a lexical or grammar error, or one
// of the checks RocketMQ makes while it builds the expression (a NULL
// compared with '=', a string ordered with '>', BETWEEN bounds in the wrong
// order, an integer literal beyond int64, ...). The concrete error is a
// *SyntaxError that names the position.
var ErrSyntax = errors.New("sqlfilter: syntax error")

// ErrLimit is wrapped by the error Compile returns for an expression longer
// than MaxLength bytes or nested deeper than MaxDepth. The message names
// the limit.
var ErrLimit = errors.New("sqlfilter: limit exceeded")

// SyntaxError describes an invalid expression. It wraps ErrSyntax.
type SyntaxError struct {
	// Pos is the 1-based position of the offending token, counted in
	// characters (runes) from the start of the expression; one past the
	// last character for "end of input".
	Pos int
	// Msg says what was expected and what was found.
	Msg string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("sqlfilter: syntax error at position %d: %s", e.Pos, e.Msg)
}

// Unwrap returns ErrSyntax.
func (e *SyntaxError) Unwrap() error { return ErrSyntax }
