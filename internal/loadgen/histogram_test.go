package loadgen

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestHistogramBucketsAreContiguousAndCoverTheirRange(t *testing.T) {
	prevHi := int64(-1)
	for i := range numBuckets {
		lo, hi := bucketRange(i)
		if lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, want %d", i, lo, prevHi+1)
		}
		if bucketOf(lo) != i || bucketOf(hi) != i {
			t.Fatalf("bucket %d = [%d, %d] but bucketOf gives %d and %d", i, lo, hi, bucketOf(lo), bucketOf(hi))
		}
		if lo >= exactBelow && float64(hi-lo+1)/float64(lo) > 1.0/subBuckets+1e-12 {
			t.Fatalf("bucket %d = [%d, %d] is wider than 1/%d of its value", i, lo, hi, subBuckets)
		}
		prevHi = hi
	}
	if prevHi != 1<<63-1 {
		t.Fatalf("last bucket ends at %d, want MaxInt64", prevHi)
	}
}

func TestHistogramQuantilesWithinBucketPrecision(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	parts := []*Histogram{NewHistogram(), NewHistogram(), NewHistogram()}
	var all []time.Duration
	for i := range 50_000 {
		// Log-uniform between 1 µs and 100 ms, like send latencies.
		d := time.Duration(float64(time.Microsecond) * math.Pow(10, r.Float64()*5))
		all = append(all, d)
		parts[i%len(parts)].Record(d)
	}
	h := NewHistogram()
	for _, p := range parts {
		h.Merge(p)
	}
	slices.Sort(all)
	if h.Count() != uint64(len(all)) {
		t.Fatalf("count %d, want %d", h.Count(), len(all))
	}
	if h.Max() != all[len(all)-1] {
		t.Fatalf("max %v, want %v", h.Max(), all[len(all)-1])
	}
	for _, q := range []float64{0, 0.5, 0.9, 0.99, 0.999, 1} {
		rank := max(int(math.Ceil(q*float64(len(all)))), 1)
		want := all[rank-1]
		got := h.Quantile(q)
		if diff := math.Abs(float64(got-want)) / float64(want); diff > 1.0/subBuckets {
			t.Errorf("quantile %v = %v, exact %v (off by %.2f%%)", q, got, want, diff*100)
		}
	}
}

func TestHistogramEmptyAndNegative(t *testing.T) {
	h := NewHistogram()
	if h.Quantile(0.5) != 0 || h.Max() != 0 || h.Count() != 0 {
		t.Fatalf("empty histogram: p50 %v max %v count %d", h.Quantile(0.5), h.Max(), h.Count())
	}
	h.Merge(NewHistogram())
	h.Record(-5)
	h.Record(3)
	if h.Quantile(0.5) != 0 || h.Quantile(1) != 3 || h.Max() != 3 {
		t.Fatalf("p50 %v p100 %v max %v, want 0 3 3", h.Quantile(0.5), h.Quantile(1), h.Max())
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	h := NewHistogram()
	if n := testing.AllocsPerRun(1000, func() { h.Record(1234567) }); n != 0 {
		t.Fatalf("Record allocates %v times", n)
	}
}
