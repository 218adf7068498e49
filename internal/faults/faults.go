// Package faults holds the test-only broker faults that `petrel verify`
// uses to prove that it can fail: a broker that acknowledges sends it does
// not store (lose-ack), one that hands out the messages of a pull answer in
// reverse order (reorder), and a commit log whose writes and syncs are
// slow while a switch is on (slow-disk).
//
// This package is the pure part: the spec, read from the environment
// variable PETREL_TEST_FAULTS, the deterministic decisions and the
// slow-disk wrapper of a vfs.FS. It is wired into the broker, the daemon
// and `petrel version` only by files built with the tag verifyfault; the
// normal binary links none of it (their untagged twins are no-ops that do
// not import this package).
//
// Spec syntax: entries separated by commas, e.g.
//
//	lose-ack=1000,reorder,slow-disk=50ms
//
//	lose-ack=N   acknowledge 1 in N sends (the N-th, 2N-th, ...) with
//	             SEND_OK and a plausible offset without storing them
//	reorder      reverse the records of every pull answer holding ≥ 2
//	slow-disk=D  while switched on (SIGUSR1; SIGUSR2 switches it off),
//	             every commit-log write and sync takes D longer
package faults

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// EnvVar is the environment variable the tagged build reads its spec from.
const EnvVar = "PETREL_TEST_FAULTS"

// Fault names in a spec.
const (
	NameLoseAck  = "lose-ack"
	NameReorder  = "reorder"
	NameSlowDisk = "slow-disk"
)

// MaxSlowDisk bounds slow-disk=D: a longer delay would only make the
// broker look dead, which the kill and pause faults already do.
const MaxSlowDisk = 10 * time.Second

// Spec says which faults are on. The zero Spec has none.
type Spec struct {
	// LoseAck > 0 loses 1 in LoseAck sends; 0 loses none.
	LoseAck int
	// Reorder reverses the records of each pull answer that holds ≥ 2.
	Reorder bool
	// SlowDisk > 0 is the delay added to each commit-log write and sync
	// while the slow-disk switch is on; 0: no slow-disk hook.
	SlowDisk time.Duration
}

// IsZero reports whether s has no fault.
func (s Spec) IsZero() bool { return s == Spec{} }

// String is s in the syntax Parse reads ("" for the zero Spec).
func (s Spec) String() string {
	var parts []string
	if s.LoseAck > 0 {
		parts = append(parts, NameLoseAck+"="+strconv.Itoa(s.LoseAck))
	}
	if s.Reorder {
		parts = append(parts, NameReorder)
	}
	if s.SlowDisk > 0 {
		parts = append(parts, NameSlowDisk+"="+s.SlowDisk.String())
	}
	return strings.Join(parts, ",")
}

// Parse reads a spec (see the package doc). Blank entries are ignored, so
// "" is the zero Spec. Errors name the entry and say what is allowed.
func Parse(s string) (Spec, error) {
	var spec Spec
	seen := make(map[string]bool)
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, value, hasValue := strings.Cut(entry, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if seen[name] {
			return Spec{}, fmt.Errorf("faults: %s is given twice in %q; give each fault once", name, s)
		}
		seen[name] = true
		switch name {
		case NameLoseAck:
			if !hasValue || value == "" {
				return Spec{}, fmt.Errorf("faults: %s needs a value: %s=N loses 1 in N sends, e.g. %s=1000", name, name, name)
			}
			n, err := strconv.Atoi(value)
			if err != nil || n < 1 {
				return Spec{}, fmt.Errorf("faults: %s=%s: N must be a whole number ≥ 1 (1 in N sends is lost)", name, value)
			}
			spec.LoseAck = n
		case NameReorder:
			if hasValue {
				return Spec{}, fmt.Errorf("faults: %s takes no value (got %q)", name, entry)
			}
			spec.Reorder = true
		case NameSlowDisk:
			if !hasValue || value == "" {
				return Spec{}, fmt.Errorf("faults: %s needs a value: %s=D adds D to each commit-log write and sync, e.g. %s=50ms", name, name, name)
			}
			d, err := time.ParseDuration(value)
			if err != nil || d <= 0 || d > MaxSlowDisk {
				return Spec{}, fmt.Errorf("faults: %s=%s: D must be a duration above 0 and at most %s, e.g. 50ms", name, value, MaxSlowDisk)
			}
			spec.SlowDisk = d
		default:
			return Spec{}, fmt.Errorf("faults: unknown fault %q in %q; known: %s=N, %s, %s=D", name, s, NameLoseAck, NameReorder, NameSlowDisk)
		}
	}
	return spec, nil
}

// FromEnv parses the spec in EnvVar as getenv (os.Getenv) reports it; an
// error names the variable.
func FromEnv(getenv func(string) string) (Spec, error) {
	spec, err := Parse(getenv(EnvVar))
	if err != nil {
		return Spec{}, fmt.Errorf("%s: %w", EnvVar, err)
	}
	return spec, nil
}

// OneIn decides 1 in N, deterministically: the N-th, 2N-th, ... call of
// Next reports true. The zero OneIn (or N ≤ 0) never does. Safe for
// concurrent use.
type OneIn struct {
	n     uint64
	calls atomic.Uint64
	hits  atomic.Uint64
}

// NewOneIn returns a OneIn for 1 in n (never, when n ≤ 0).
func NewOneIn(n int) *OneIn {
	o := &OneIn{}
	if n > 0 {
		o.n = uint64(n)
	}
	return o
}

// Next counts one call and reports whether it is the chosen one of its N.
func (o *OneIn) Next() bool {
	if o == nil || o.n == 0 {
		return false
	}
	if o.calls.Add(1)%o.n != 0 {
		return false
	}
	o.hits.Add(1)
	return true
}

// Hits is how many calls of Next reported true.
func (o *OneIn) Hits() uint64 {
	if o == nil {
		return 0
	}
	return o.hits.Load()
}

// recordSizeLen is the 4-byte big-endian TOTALSIZE that starts every
// stored record (and so every record of a pull answer).
const recordSizeLen = 4

// ErrRecords is returned (wrapped) by ReverseRecords for a body that is not
// count well-formed records back to back.
var ErrRecords = errors.New("faults: malformed records")

// ReverseRecords returns the count records of body, stored records back to
// back as a pull answer carries them (each begins with its 4-byte
// big-endian total size), in reverse order, in a new slice of the same
// length. body is not changed.
func ReverseRecords(body []byte, count int) ([]byte, error) {
	if count < 0 {
		return nil, fmt.Errorf("%w: count %d", ErrRecords, count)
	}
	// Find the record boundaries first (at most one per 4 bytes of body,
	// whatever count says).
	starts := make([]int, 0, min(count, len(body)/recordSizeLen)+1)
	off := 0
	for off < len(body) {
		if len(body)-off < recordSizeLen {
			return nil, fmt.Errorf("%w: %d stray bytes at %d", ErrRecords, len(body)-off, off)
		}
		size := int(uint32(body[off])<<24 | uint32(body[off+1])<<16 | uint32(body[off+2])<<8 | uint32(body[off+3]))
		if size < recordSizeLen || size > len(body)-off {
			return nil, fmt.Errorf("%w: record at %d says %d bytes, %d left", ErrRecords, off, size, len(body)-off)
		}
		if len(starts) == count {
			return nil, fmt.Errorf("%w: more than %d records", ErrRecords, count)
		}
		starts = append(starts, off)
		off += size
	}
	if len(starts) != count {
		return nil, fmt.Errorf("%w: %d records, want %d", ErrRecords, len(starts), count)
	}
	starts = append(starts, len(body))
	out := make([]byte, 0, len(body))
	for i := count - 1; i >= 0; i-- {
		out = append(out, body[starts[i]:starts[i+1]]...)
	}
	return out, nil
}
