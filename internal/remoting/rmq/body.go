package rmq

import (
	"encoding/json"
	"errors"
	"fmt"
)

// BodyError is a JSON body that does not decode. Its Error text names
// the body and the field and is fit for a client (no Go error chain).
type BodyError struct {
	Body    string // the Java class name of the body, e.g. "SubscriptionGroupConfig"
	Problem string // what is wrong, e.g. "retryMaxTimes must be a JSON number in range, not string"
}

func (e *BodyError) Error() string { return e.Body + " body: " + e.Problem }

// decodeJSON unmarshals body into v, or returns a *BodyError for name.
// Bare number keys, as Java's fastjson writes them, are read as quoted.
func decodeJSON(body []byte, name string, v any) error {
	if err := json.Unmarshal(quoteNumberKeys(body), v); err != nil {
		return &BodyError{Body: name, Problem: jsonProblem(err, name)}
	}
	return nil
}

// mustJSON marshals one of this package's plain wire structs, which
// cannot fail (no channels, funcs or cyclic values).
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("rmq: encode %T: %v", v, err))
	}
	return b
}

// jsonProblem says what is wrong with a body in words fit for a client:
// the field and the type it needs, or where the syntax broke.
func jsonProblem(err error, name string) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "the body"
		}
		return fmt.Sprintf("%s must be a JSON %s, not %s", field, jsonKind(te.Type.Kind().String()), te.Value)
	case errors.As(err, &se):
		return fmt.Sprintf("the body is not valid JSON (at byte %d)", se.Offset)
	}
	return "the body is not a " + name + " JSON object"
}

func jsonKind(k string) string {
	switch k {
	case "bool":
		return "boolean"
	case "string":
		return "string"
	case "slice":
		return "array"
	case "map", "struct", "ptr":
		return "object"
	}
	return "number in range"
}
