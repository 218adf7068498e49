package rmq

import "encoding/json"

// Java's fastjson writes a map keyed by numbers with bare number keys
// ({0:"127.0.0.1:10911"}), which is not JSON: Apache RocketMQ's name
// server answers routes (105) and cluster info (106) so. quoteNumberKeys
// makes such a body JSON before it is unmarshalled.

// quoteNumberKeys returns body with every object key written as a bare
// number put in quotes; a body without one is returned as it is, without
// a copy. Text inside strings is left alone. The result is at most twice
// the body's length plus two, so it is bounded by what the peer sent.
func quoteNumberKeys(body []byte) []byte {
	var out []byte // nil until the first bare key
	copied := 0    // body[:copied] is in out
	inString, escaped := false, false
	// afterOpen: the last token outside strings was '{' or ',', so a key
	// may start here (a number in an array is followed by ',' or ']',
	// never by ':', so only a ':' after it makes it a key).
	afterOpen := false
	for i := 0; i < len(body); i++ {
		c := body[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString, afterOpen = true, false
		case c == '{' || c == ',':
			afterOpen = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		case afterOpen && (c == '-' || (c >= '0' && c <= '9')):
			afterOpen = false
			j := i + 1
			for j < len(body) && body[j] >= '0' && body[j] <= '9' {
				j++
			}
			k := j
			for k < len(body) && (body[k] == ' ' || body[k] == '\t' || body[k] == '\n' || body[k] == '\r') {
				k++
			}
			if k < len(body) && body[k] == ':' {
				if out == nil {
					out = make([]byte, 0, len(body)+16)
				}
				out = append(out, body[copied:i]...)
				out = append(out, '"')
				out = append(out, body[i:j]...)
				out = append(out, '"')
				copied = j
			}
			i = j - 1
		default:
			afterOpen = false
		}
	}
	if out == nil {
		return body
	}
	return append(out, body[copied:]...)
}

// UnmarshalFastJSON is json.Unmarshal for a body Java's fastjson may have
// written: bare number keys are read as quoted ones.
func UnmarshalFastJSON(body []byte, v any) error {
	return json.Unmarshal(quoteNumberKeys(body), v)
}
