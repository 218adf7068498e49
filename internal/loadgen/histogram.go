package loadgen

import (
	"math"
	"math/bits"
	"time"
)

// Histogram layout: values below 2·subBuckets nanoseconds have a bucket
// each; above, every power of two is split into subBuckets equal buckets,
// so a bucket is at most 1/subBuckets (1.6 %) of its value wide. Any
// non-negative int64 fits: 128 + 56·64 = 3712 buckets.
const (
	subBits    = 6
	subBuckets = 1 << subBits
	exactBelow = 2 * subBuckets
	numBuckets = exactBelow + (63-subBits-1)*subBuckets
)

// Histogram counts durations in log-linear buckets. Its memory is
// allocated once by NewHistogram; Record never allocates. It is not safe
// for concurrent use: give each goroutine its own and Merge them.
type Histogram struct {
	counts   []uint64
	n        uint64
	min, max int64
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{counts: make([]uint64, numBuckets), min: math.MaxInt64}
}

func bucketOf(v int64) int {
	if v < exactBelow {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - 1 - subBits // ≥ 1
	return exactBelow + (shift-1)*subBuckets + int(v>>shift) - subBuckets
}

// bucketRange is the smallest and largest value of bucket i.
func bucketRange(i int) (lo, hi int64) {
	if i < exactBelow {
		return int64(i), int64(i)
	}
	k := i - exactBelow
	shift := k/subBuckets + 1
	lo = int64(k%subBuckets+subBuckets) << shift
	return lo, lo + 1<<shift - 1
}

// Record adds one duration; negative durations count as 0.
func (h *Histogram) Record(d time.Duration) {
	v := max(int64(d), 0)
	h.counts[bucketOf(v)]++
	h.n++
	h.min = min(h.min, v)
	h.max = max(h.max, v)
}

// Reset empties h, keeping its memory.
func (h *Histogram) Reset() {
	clear(h.counts)
	h.n, h.min, h.max = 0, math.MaxInt64, 0
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
}

// Count is the number of recorded durations.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest recorded duration (0 when empty).
func (h *Histogram) Max() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.max)
}

// Quantile returns the duration at rank ⌈q·n⌉ (q in [0, 1]; clamped), as
// the middle of its bucket clamped to the recorded minimum and maximum, so
// within 1.6 % of the exact value. It returns 0 when the histogram is
// empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := bucketRange(i)
			v := lo + (hi-lo)/2
			return time.Duration(min(max(v, h.min), h.max))
		}
	}
	return time.Duration(h.max)
}
