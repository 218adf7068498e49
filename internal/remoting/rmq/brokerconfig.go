package rmq

// Broker configuration and drains (RocketMQ's AdminBrokerProcessor and
// the name server's DefaultRequestProcessor; the admin client is
// MQClientAPIImpl):
//
//	26  GET_BROKER_CONFIG          -> ext version (data version JSON), body properties
//	25  UPDATE_BROKER_CONFIG       body properties -> 0
//	205 WIPE_WRITE_PERM_OF_BROKER  ext brokerName (name server) -> ext wipeTopicCount
//	327 ADD_WRITE_PERM_OF_BROKER   ext brokerName (name server) -> ext addTopicCount
//
// A properties body is what Java's MixAll.properties2String writes and
// Properties.load reads: one "key=value" per line. The decoder reads the
// part of Java's format that admin tools write: lines ending in \n or
// \r\n (a lone \r too), blank lines and comment lines (first non-blank
// character # or !) skipped, the key ending at the first unescaped '=',
// ':' or blank, blanks around the separator dropped, and the escapes
// \t \n \r \f \uXXXX and backslash before any other character (that
// character). A line ending in an odd number of backslashes continues on
// the next one, whose leading blanks are dropped. A repeated key keeps
// its last value, as in Java.

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/petrelmq/petrel/internal/remoting"
)

// The request codes of this file.
const (
	CodeUpdateBrokerConfig    int16 = 25
	CodeGetBrokerConfig       int16 = 26
	CodeWipeWritePermOfBroker int16 = 205
	CodeAddWritePermOfBroker  int16 = 327
)

const (
	propertiesBody           = "Properties"
	maxPropertiesKeyBytes    = 256
	maxPropertiesValueBytes  = 16 << 10
	maxPropertiesBodyBytes   = 256 << 10
	maxPropertiesCount       = 1024
	wipeTopicCountField      = "wipeTopicCount"
	addTopicCountField       = "addTopicCount"
	brokerConfigVersionField = "version"
	writePermBrokerNameField = "brokerName"
)

// Property is one key and value of a properties body.
type Property struct {
	Key, Value string
}

// EncodeProperties writes props as "key=value\n" lines in the order
// given, escaping what Properties.load would read otherwise (backslash,
// line breaks; in keys also '=', ':', blanks, and a leading # or !).
func EncodeProperties(props []Property) []byte {
	var sb strings.Builder
	for _, p := range props {
		sb.WriteString(escapeProperty(p.Key, true))
		sb.WriteByte('=')
		sb.WriteString(escapeProperty(p.Value, false))
		sb.WriteByte('\n')
	}
	return []byte(sb.String())
}

func escapeProperty(s string, key bool) string {
	var sb strings.Builder
	for i, r := range s {
		switch r {
		case '\\':
			sb.WriteString(`\\`)
		case '\n':
			sb.WriteString(`\n`)
		case '\r':
			sb.WriteString(`\r`)
		case '\t':
			sb.WriteString(`\t`)
		case '\f':
			sb.WriteString(`\f`)
		case '=', ':', ' ':
			if key || (r == ' ' && i == 0) {
				sb.WriteByte('\\')
			}
			sb.WriteRune(r)
		case '#', '!':
			if key && i == 0 {
				sb.WriteByte('\\')
			}
			sb.WriteRune(r)
		default:
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// DecodeProperties reads a properties body (see the file comment) into
// its properties in the order of their first occurrence (a repeated key
// takes its last value). It refuses, with
// a *BodyError, a body over 256 KiB, more than 1024 keys, a key over 256
// bytes or a value over 16 KiB, an empty key, a malformed \u escape and
// text that is not UTF-8.
func DecodeProperties(body []byte) ([]Property, error) {
	if len(body) > maxPropertiesBodyBytes {
		return nil, &BodyError{Body: propertiesBody, Problem: fmt.Sprintf("%d bytes, over the limit of %d", len(body), maxPropertiesBodyBytes)}
	}
	if !utf8.Valid(body) {
		return nil, &BodyError{Body: propertiesBody, Problem: "not UTF-8 text"}
	}
	var out []Property
	index := map[string]int{}
	for line := range logicalLines(string(body)) {
		k, v, err := splitProperty(line)
		if err != nil {
			return nil, &BodyError{Body: propertiesBody, Problem: err.Error()}
		}
		if k == "" && v == "" && strings.TrimLeft(line, " \t\f") == "" {
			continue
		}
		switch {
		case k == "":
			return nil, &BodyError{Body: propertiesBody, Problem: fmt.Sprintf("line %q has no key", clip(line))}
		case len(k) > maxPropertiesKeyBytes:
			return nil, &BodyError{Body: propertiesBody, Problem: fmt.Sprintf("key %q... is over the limit of %d bytes", clip(k), maxPropertiesKeyBytes)}
		case len(v) > maxPropertiesValueBytes:
			return nil, &BodyError{Body: propertiesBody, Problem: fmt.Sprintf("the value of %s is over the limit of %d bytes", k, maxPropertiesValueBytes)}
		}
		if i, ok := index[k]; ok {
			out[i].Value = v // the last value wins, as in Java
			continue
		}
		if len(out) == maxPropertiesCount {
			return nil, &BodyError{Body: propertiesBody, Problem: fmt.Sprintf("more than %d keys", maxPropertiesCount)}
		}
		index[k] = len(out)
		out = append(out, Property{k, v})
	}
	return out, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40]
	}
	return s
}

// logicalLines yields the lines of s that are neither blank nor comments,
// continuation lines joined (their leading blanks dropped, the joining
// backslash removed).
func logicalLines(s string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		var cur strings.Builder
		joining := false
		for len(s) > 0 {
			i := strings.IndexAny(s, "\r\n")
			var line string
			if i < 0 {
				line, s = s, ""
			} else {
				line = s[:i]
				if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
					i++
				}
				s = s[i+1:]
			}
			trimmed := strings.TrimLeft(line, " \t\f")
			if !joining && (trimmed == "" || trimmed[0] == '#' || trimmed[0] == '!') {
				continue
			}
			cur.WriteString(trimmed)
			if n := len(trimmed) - len(strings.TrimRight(trimmed, `\`)); n%2 == 1 {
				str := cur.String()
				cur.Reset()
				cur.WriteString(str[:len(str)-1])
				joining = true
				continue
			}
			joining = false
			if !yield(cur.String()) {
				return
			}
			cur.Reset()
		}
		if joining && cur.Len() > 0 {
			yield(cur.String())
		}
	}
}

// splitProperty splits one logical line (leading blanks removed) into its
// unescaped key and value.
func splitProperty(line string) (key, value string, err error) {
	end := len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			end = i
			break
		}
	}
	rest := line[end:]
	rest = strings.TrimLeft(rest, " \t\f")
	if len(rest) > 0 && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	if key, err = unescapeProperty(line[:end]); err != nil {
		return "", "", err
	}
	if value, err = unescapeProperty(rest); err != nil {
		return "", "", err
	}
	return key, value, nil
}

func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			sb.WriteByte(c)
			continue
		}
		i++
		if i == len(s) {
			break // a trailing lone backslash: dropped, as Java does
		}
		switch s[i] {
		case 't':
			sb.WriteByte('\t')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 'f':
			sb.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("escape %q is not \\u and four hex digits", clip(s[i-1:]))
			}
			n, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("escape %q is not \\u and four hex digits", s[i-1:i+5])
			}
			sb.WriteRune(rune(n))
			i += 4
		default:
			sb.WriteByte(s[i])
		}
	}
	return sb.String(), nil
}

// EncodeGetBrokerConfig is a 26 request.
func EncodeGetBrokerConfig() *remoting.Command {
	return remoting.NewRequest(CodeGetBrokerConfig, nil, nil)
}

// EncodeGetBrokerConfigResponse answers a 26: the configuration as a
// properties body and ext version, the data version of the
// configuration as JSON ({"counter":N,"timestamp":T}, Java's
// DataVersion).
func EncodeGetBrokerConfigResponse(req *remoting.Command, props []Property, version DataVersion) *remoting.Command {
	resp := remoting.NewResponse(req, RespSuccess, "")
	resp.SetExt(brokerConfigVersionField, string(mustJSON(version)))
	resp.Body = EncodeProperties(props)
	return resp
}

// EncodeUpdateBrokerConfig is a 25 request with props as its body.
func EncodeUpdateBrokerConfig(props []Property) *remoting.Command {
	return remoting.NewRequest(CodeUpdateBrokerConfig, nil, EncodeProperties(props))
}

// WritePermRequest is the header of 205 and 327: the broker name whose
// queues lose or regain write permission in the name server's routes.
type WritePermRequest struct {
	BrokerName string
}

// DecodeWritePermRequest reads the header of 205 or 327 (brokerName is
// required, at most 255 bytes).
func DecodeWritePermRequest(c *remoting.Command) (WritePermRequest, error) {
	f := fields{c: c}
	h := WritePermRequest{BrokerName: f.need(writePermBrokerNameField)}
	if err := f.result(); err != nil {
		return h, err
	}
	if len(h.BrokerName) > 255 {
		return h, &FieldError{Field: writePermBrokerNameField, Value: h.BrokerName, Want: "a broker name of at most 255 bytes"}
	}
	return h, nil
}

// EncodeWipeWritePerm is a 205 request.
func EncodeWipeWritePerm(h WritePermRequest) *remoting.Command {
	return remoting.NewRequest(CodeWipeWritePermOfBroker, map[string]string{writePermBrokerNameField: h.BrokerName}, nil)
}

// EncodeAddWritePerm is a 327 request.
func EncodeAddWritePerm(h WritePermRequest) *remoting.Command {
	return remoting.NewRequest(CodeAddWritePermOfBroker, map[string]string{writePermBrokerNameField: h.BrokerName}, nil)
}

// EncodeWritePermResponse answers a 205 (ext wipeTopicCount) or a 327
// (ext addTopicCount) with the number of topics whose queue data
// changed.
func EncodeWritePermResponse(req *remoting.Command, topics int) *remoting.Command {
	field := wipeTopicCountField
	if req.Code == CodeAddWritePermOfBroker {
		field = addTopicCountField
	}
	return remoting.NewResponse(req, RespSuccess, "").SetExt(field, itoa(topics))
}

// DecodeWritePermResponse reads the topic count of a 205 answer
// (wipe true) or a 327 answer.
func DecodeWritePermResponse(c *remoting.Command, wipe bool) (int32, error) {
	f := fields{c: c}
	field := addTopicCountField
	if wipe {
		field = wipeTopicCountField
	}
	n := f.needI32(field)
	return n, f.result()
}

// ClipKey shortens a key a peer sent to 64 bytes for a remark that names
// it (a refused setting), so that the answer stays small.
func ClipKey(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
