package metrics

import (
	"testing"
)

func TestPlainNumbersRewritesExponentValuesOnly(t *testing.T) {
	cases := []struct{ in, want string }{
		{"go_memstats_alloc_bytes 1.3265912e+07\n", "go_memstats_alloc_bytes 13265912\n"},
		{"go_gc_duration_seconds{quantile=\"0\"} 3.5657e-05\n", "go_gc_duration_seconds{quantile=\"0\"} 0.000035657\n"},
		{"petrel_broker_start_time_seconds 1.7648e+09\n", "petrel_broker_start_time_seconds 1764800000\n"},
		{"go_gc_gomemlimit_bytes 9.223372036854776e+18\n", "go_gc_gomemlimit_bytes 9223372036854776000\n"},
		// A label value with a space, a brace and an escaped quote; the
		// bucket bound stays as client_golang wrote it.
		{"x_bucket{le=\"5e-05\",a=\"b } \\\"c 1e+3\"} 2e+03 1700000000000\n", "x_bucket{le=\"5e-05\",a=\"b } \\\"c 1e+3\"} 2000 1700000000000\n"},
		{"# HELP x 1e+06 is a help text\n", "# HELP x 1e+06 is a help text\n"},
		{"# TYPE x counter\n", "# TYPE x counter\n"},
		{"x 42\n", "x 42\n"},
		{"x 0.5\n", "x 0.5\n"},
		{"x +Inf\n", "x +Inf\n"},
		{"x NaN\n", "x NaN\n"},
		{"x{le=\"+Inf\"} 1e+00", "x{le=\"+Inf\"} 1"},
		{"broken{a=\"1e+5\n", "broken{a=\"1e+5\n"},
		{"", ""},
	}
	for _, c := range cases {
		if got := string(plainNumbers([]byte(c.in))); got != c.want {
			t.Errorf("plainNumbers(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzPlainNumbers(f *testing.F) {
	f.Add([]byte("a{b=\"c\"} 1.5e+07 123\n# HELP a x\nb 2e-05\n"))
	f.Add([]byte("x{a=\"\\\"}\"} 1e+3"))
	f.Fuzz(func(t *testing.T, in []byte) {
		out := plainNumbers(in)
		// Only sample values change: the line count stays the same.
		if a, b := countLines(in), countLines(out); a != b {
			t.Fatalf("lines %d -> %d", a, b)
		}
	})
}

func countLines(b []byte) int {
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}
