package auth

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestCollectReusesTheLastOrderSafely: one macState serves requests whose
// fields come in the last request's order, in another order, with
// duplicate keys and with other counts; each time collect gives exactly
// the fields sorted by key with the last of equal keys kept.
func TestCollectReusesTheLastOrderSafely(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 14))
	keys := []string{"a", "b", "topic", "queueId", "AccessKey", "Signature", "properties", "bornTimestamp", "flag", "c", "d", "e"}
	s := getMac()
	defer putMac(s)
	var last pairFields
	for round := range 3000 {
		var f pairFields
		switch r.IntN(4) {
		case 0, 1: // the last layout, new values
			for _, p := range last {
				f = append(f, extPair{key: p.key, value: p.value + "'"})
			}
		case 2: // a shuffle of distinct keys
			for _, i := range r.Perm(len(keys))[:1+r.IntN(len(keys))] {
				f = append(f, extPair{key: keys[i], value: keys[i] + "v"})
			}
		default: // with duplicates
			for range 1 + r.IntN(20) {
				k := keys[r.IntN(4)]
				f = append(f, extPair{key: k, value: k + string(rune('0'+r.IntN(10)))})
			}
		}
		last = f
		s.collect(f)
		want := reference(f)
		got := make([][2]string, len(s.sorted))
		for i, at := range s.sorted {
			got[i] = [2]string{s.pairs[at].key, s.pairs[at].value}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: fields %v collected as %v, want %v", round, f, got, want)
		}
	}
}

// reference sorts f's fields by key, keeping the last of equal keys.
func reference(f pairFields) [][2]string {
	last := map[string]string{}
	for _, p := range f {
		last[p.key] = p.value
	}
	var out [][2]string
	for k, v := range last {
		out = append(out, [2]string{k, v})
	}
	slices.SortFunc(out, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return out
}
