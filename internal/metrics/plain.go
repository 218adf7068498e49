package metrics

import (
	"bytes"
	"math"
	"strconv"
)

// plainNumbers rewrites the sample values of a text exposition (format
// 0.0.4) that client_golang prints in exponent notation (1.7648e+09,
// 3.5e-05) as plain decimals (1764800000, 0.000035), which the format
// allows and people and scripts read more easily. Comments, names, label
// values and timestamps are left as they are, and so are NaN and ±Inf.
// It returns a new slice; in is not changed.
func plainNumbers(in []byte) []byte {
	out := make([]byte, 0, len(in)+len(in)/8)
	for len(in) > 0 {
		line := in
		rest := []byte(nil)
		if i := bytes.IndexByte(in, '\n'); i >= 0 {
			line, rest = in[:i+1], in[i+1:]
		}
		in = rest
		out = appendPlainLine(out, line)
	}
	return out
}

// appendPlainLine appends one line, its value rewritten when it is a
// sample line whose value has an exponent.
func appendPlainLine(out, line []byte) []byte {
	if len(line) == 0 || line[0] == '#' {
		return append(out, line...)
	}
	start := valueStart(line)
	if start < 0 {
		return append(out, line...)
	}
	end := start
	for end < len(line) && line[end] != ' ' && line[end] != '\n' {
		end++
	}
	v := line[start:end]
	if bytes.IndexAny(v, "eE") < 0 {
		return append(out, line...)
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return append(out, line...)
	}
	out = append(out, line[:start]...)
	out = strconv.AppendFloat(out, f, 'f', -1, 64)
	return append(out, line[end:]...)
}

// valueStart returns where the value of a sample line begins: after the
// metric name and its label set (whose quoted values may hold spaces,
// braces and escaped quotes); -1 when the line has no value.
func valueStart(line []byte) int {
	i := 0
	for i < len(line) && line[i] != '{' && line[i] != ' ' {
		i++
	}
	if i < len(line) && line[i] == '{' {
		inQuote := false
		for i++; i < len(line); i++ {
			c := line[i]
			switch {
			case inQuote && c == '\\':
				i++
			case c == '"':
				inQuote = !inQuote
			case !inQuote && c == '}':
				i++
				goto labelsDone
			}
		}
		return -1
	}
labelsDone:
	for i < len(line) && line[i] == ' ' {
		i++
	}
	if i >= len(line) || line[i] == '\n' {
		return -1
	}
	return i
}
