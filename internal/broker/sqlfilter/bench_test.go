package sqlfilter

import "testing"

var benchExprs = []struct{ name, expr string }{
	{"simple", "a > 5 AND b = 'x'"},
	{"tags", "TAGS IN ('TagA', 'TagB', 'TagC')"},
	{"between_double", "c BETWEEN 1.5 AND 9.5 OR a < 0"},
	{"complex", "(a > 5 AND b IN ('x', 'y')) OR (c >= 2.5 AND d IS NOT NULL AND TAGS NOT CONTAINS 'debug')"},
}

func BenchmarkMatch(b *testing.B) {
	m := map[string]string{"a": "7", "b": "x", "c": "3.25", "TAGS": "TagB", "KEYS": "k1", "UNIQ_KEY": "0A0B0C"}
	prop := func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	for _, c := range benchExprs {
		e := mustCompile(b, c.expr)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				e.Match(prop)
			}
		})
	}
}

func BenchmarkCompile(b *testing.B) {
	for _, c := range benchExprs {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Compile(c.expr); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
