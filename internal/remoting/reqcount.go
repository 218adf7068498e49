package remoting

import (
	"sync"
	"sync/atomic"
)

// requestCounts counts the requests a server read, by code: codes below
// directCodes in an array (every RocketMQ code but the wide 200xxx ones),
// up to maxOtherCodes distinct others in a map, and the rest together, so
// that a peer sending every code cannot grow it.
type requestCounts struct {
	direct [directCodes]atomic.Uint64

	mu      sync.Mutex
	other   map[int32]uint64
	overRun uint64 // requests of codes beyond maxOtherCodes distinct others
}

const (
	directCodes   = 1024
	maxOtherCodes = 64
)

// OtherRequestCode is the code RequestCounts reports the requests of
// codes it does not count one by one under (a peer sent more than
// maxOtherCodes distinct codes at or above 1024).
const OtherRequestCode int32 = -1

func (r *requestCounts) add(code int32) {
	if code >= 0 && code < directCodes {
		r.direct[code].Add(1)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.other[code]; ok || len(r.other) < maxOtherCodes {
		if r.other == nil {
			r.other = make(map[int32]uint64)
		}
		r.other[code]++
		return
	}
	r.overRun++
}

func (r *requestCounts) snapshot() map[int32]uint64 {
	out := make(map[int32]uint64)
	for i := range r.direct {
		if n := r.direct[i].Load(); n > 0 {
			out[int32(i)] = n
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for c, n := range r.other {
		out[c] = n
	}
	if r.overRun > 0 {
		out[OtherRequestCode] = r.overRun
	}
	return out
}

// RequestCounts is how many requests of each code the server has read
// since it started (those a Guard refused included); codes never seen are
// absent. OtherRequestCode holds the requests of the codes beyond the
// distinct ones it keeps.
func (s *Server) RequestCounts() map[int32]uint64 { return s.reqs.snapshot() }
