// Package sqlfilter parses and evaluates Apache RocketMQ's SQL92 message
// filter: the expressions a consumer subscribes with when its expression
// type is "SQL92", which the broker evaluates against each message's
// properties on pull. It accepts the texts RocketMQ accepts (its
// SelectorParser.jj grammar and the checks of its expression factories)
// and gives each message the same verdict RocketMQ's evaluator does; the
// few deliberate differences are listed at the end.
//
// Compile parses once; Match evaluates without allocating and is safe for
// concurrent use; String renders a canonical text that compiles back to
// the same expression.
//
//	e, err := sqlfilter.Compile("a > 5 AND TAGS IN ('TagA', 'TagB')")
//	ok := e.Match(func(key string) (string, bool) { v, ok := props[key]; return v, ok })
//
// # Grammar
//
// Loosest binding first; every binary level is left-associative:
//
//	expr       = and { OR and }
//	and        = equality { AND equality }
//	equality   = comparison { ( "=" | "<>" ) comparison | IS [ NOT ] NULL }
//	comparison = unary { ( ">" | ">=" | "<" | "<=" ) unary
//	                   | [ NOT ] BETWEEN unary AND unary
//	                   | [ NOT ] IN "(" string { "," string } ")"
//	                   | [ NOT ] ( CONTAINS | STARTSWITH | ENDSWITH ) string }
//	unary      = "+" unary | "-" unary | NOT unary | primary
//	primary    = string | integer | decimal | TRUE | FALSE | NULL
//	           | identifier | "(" expr ")"
//
// Note where NOT sits: as a prefix it binds tighter than every comparison,
// as in RocketMQ, so "NOT a = 'x'" is "(NOT a) = 'x'" — a boolean compared
// with a string, which never matches. Write "NOT (a = 'x')" or "a <> 'x'".
// The infix forms (a NOT IN (...), a NOT BETWEEN ...) are one operator.
//
// Tokens:
//
//   - Keywords, in any case: NOT AND OR BETWEEN IN IS NULL TRUE FALSE
//     CONTAINS STARTSWITH ENDSWITH. A property cannot have one of these
//     names.
//   - Identifiers (property names): a letter, '_' or '$', then letters,
//     digits, '_' or '$'; ASCII only, case-sensitive. A '.' is not allowed
//     (RocketMQ has no way to name a property such as "user.id"). TAGS is
//     the message tag (TagsKey).
//   - Strings: in single quotes; a quote inside is doubled, as in the
//     example below.
//   - Integers: 0 or a digit string without a leading zero, with an
//     optional L suffix, at most 9223372036854775807. Decimals: 1.5, 5.,
//     .5, 1e3, 1.5E-3. A leading '-' is the negation operator.
//   - Operators: = <> > >= < <= ( ) , + -. There is no '!=' and no '=='.
//   - Whitespace: space, tab, CR, LF, form feed. Comments: "/* ... */" and
//     "--" to the end of the line (only if a line end follows; otherwise
//     "--" is two minus signs, as in RocketMQ).
//
// For example:
//
//	TAGS IN ('TagA', 'TagB') AND price >= 10.5 AND name <> 'it''s'
//	  AND region IS NOT NULL /* comment */ AND NOT (level BETWEEN 1 AND 3)
//
// Checks at compile time (as RocketMQ): the whole expression and each
// operand of AND, OR and prefix NOT must be a condition (a comparison,
// TRUE, FALSE, NULL, or a bare property); ordering operators and BETWEEN
// take no string, boolean or NULL literal and no condition; "=" and "<>"
// take no NULL literal, and TRUE or FALSE literal on the left cannot be
// compared with a number or string literal on the right; IN needs a
// property on its left; BETWEEN with two literal bounds needs low <= high
// (a negated bound such as -1 is not a literal to RocketMQ, so "a BETWEEN
// 5 AND -1" is accepted and never matches).
//
// # Evaluation
//
// Property values are strings; a missing property is NULL (unknown).
// Literals are strings, 64-bit integers, doubles and booleans. Evaluation
// is three-valued (TRUE, FALSE, NULL) and a message matches only if the
// result is TRUE. In detail, following RocketMQ's expression classes:
//
//   - Comparing a string property with a number parses the string as the
//     literal's type: as a Java long for an integer literal (so "5.0" is
//     not a valid operand of a = 5 while it is of a = 5.0), as a Java
//     double for a decimal (surrounding blanks allowed, "NaN", "Infinity",
//     hexadecimal and a trailing d/f accepted). Integers compare with
//     doubles as doubles, and doubles order as Java's Double.compare (NaN
//     above everything). Two properties ordered with < > etc. are both
//     parsed as doubles; two properties compared with = compare as strings.
//   - A property compared with TRUE or FALSE is TRUE exactly when it
//     spells "true" in any case. A property used alone as a condition is
//     never TRUE (NULL if missing, else FALSE), as in RocketMQ.
//   - If a string does not parse as the number it is compared with,
//     RocketMQ throws and the message does not match, whatever the rest of
//     the expression says — unless AND/OR had already decided without
//     evaluating that comparison (left to right, short-circuit). This
//     package reproduces that: such an error is a fourth value that
//     propagates through NOT, AND and OR and makes Match false. So
//     "NOT (a > 5)" does not match a message whose a is "abc".
//   - NULL: an ordering comparison with NULL is NULL; NOT NULL is NULL;
//     FALSE AND NULL is FALSE, TRUE OR NULL is TRUE, otherwise AND/OR with
//     NULL is NULL. "a = 'x'" and "a <> 'x'" are NULL when a is missing,
//     but RocketMQ's equality is asymmetric: 'x' = a is FALSE (and
//     'x' <> a TRUE) when a is missing; two missing properties are equal.
//     IN and NOT IN are NULL for a missing property.
//   - CONTAINS, STARTSWITH, ENDSWITH and their NOT forms are FALSE, never
//     NULL, for a missing property or a non-string operand, and FALSE for
//     an empty search string; so "a NOT CONTAINS 'x'" does not match a
//     message without a, while "NOT (a CONTAINS 'x')" does.
//   - BETWEEN is ">= low AND <= high"; NOT BETWEEN is "< low OR > high".
//
// # Differences from RocketMQ
//
//   - RocketMQ ignores whatever follows the longest valid prefix
//     ("a = 1 b" is "a = 1", "a = 1)" is accepted); Compile rejects it.
//   - RocketMQ parses a property compared with an integer literal that
//     fits in 32 bits as a Java int, so "a > 5" throws (no match) for
//     a = "3000000000"; here every integer comparison is 64-bit.
//   - RocketMQ rejects a decimal literal equal to zero (0.0, 1e-400) as
//     "less than Double.MIN_VALUE"; Compile accepts it.
//   - Java's Long.valueOf also takes non-ASCII Unicode digits; this
//     package takes ASCII digits only.
//
// # Limits
//
// Expressions longer than MaxLength bytes or nested (parentheses and
// prefix operators) deeper than MaxDepth are refused with ErrLimit, so
// hostile input costs bounded memory and stack.
package sqlfilter
