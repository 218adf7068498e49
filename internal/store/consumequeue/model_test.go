package consumequeue

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/petrelmq/petrel/internal/vfs"
)

// model is the naive queue: a slice indexed by logical offset, plus the
// first stored offset (files before it are gone) and the minimum.
type model struct {
	per   int64
	ents  []Entry // index = logical offset; below start: not stored
	start int64
	min   int64
}

func (m *model) max() int64           { return int64(len(m.ents)) }
func (m *model) fileOf(i int64) int64 { return i - i%m.per }
func (m *model) stored(i int64) Entry { return m.ents[i] }
func (m *model) setMin(v int64)       { m.min = v }
func (m *model) emptyQueue() bool     { return m.min == m.max() }
func (m *model) firstReal(from int64, pred func(Entry) bool) int64 {
	for i := from; i < m.max(); i++ {
		if !m.ents[i].blank() && pred(m.ents[i]) {
			return i
		}
	}
	return m.max()
}

func (m *model) last() (int64, Entry, bool) {
	for i := m.max() - 1; i >= m.start; i-- {
		if !m.ents[i].blank() {
			return i, m.ents[i], true
		}
	}
	return 0, Entry{}, false
}

// append returns the error class Append must return.
func (m *model) append(logical int64, e Entry) error {
	max := m.max()
	if logical < max {
		if logical < m.min {
			return ErrBelowMin
		}
		if m.ents[logical] != e {
			return ErrMismatch
		}
		return nil
	}
	if e.Size <= 0 || e.Offset < 0 {
		return ErrInvalid
	}
	_, last, hasLast := m.last()
	if logical == max {
		if hasLast && e.Offset <= last.Offset {
			return ErrInvalid
		}
		m.ents = append(m.ents, e)
		return nil
	}
	if !m.emptyQueue() {
		return ErrGap
	}
	if base := m.fileOf(logical); hasLast || base != m.fileOf(max) {
		m.ents = make([]Entry, base, logical+1) // blanks below start are never read
		m.start = base
	}
	for int64(len(m.ents)) < logical {
		m.ents = append(m.ents, Entry{})
	}
	m.ents = append(m.ents, e)
	m.min = logical
	return nil
}

func (m *model) truncate(physEnd int64) {
	t := m.firstReal(m.start, func(e Entry) bool { return e.Offset >= physEnd })
	m.ents = m.ents[:t]
	m.min = min(m.min, t)
}

// deleteBefore returns how many files retention may remove: the queue
// removes that many, or one fewer when the file of the last entry is only in
// its buffer (the last file created stays). The model does not track files,
// so it takes the number actually removed, got.
func (m *model) deleteBefore(physMin int64, got int) (want int) {
	if m.max() > 0 {
		lastFile := m.fileOf(m.max() - 1)
		for s := m.start; s < lastFile; s += m.per {
			if e := m.ents[s+m.per-1]; !e.blank() && e.end() > physMin {
				break
			}
			want++
		}
	}
	if got == want || got == want-1 {
		m.start += int64(got) * m.per
	}
	m.min = max(m.min, m.start)
	m.min = max(m.min, m.firstReal(m.min, func(e Entry) bool { return e.Offset >= physMin }))
	return want
}

func (m *model) reopen() {
	m.min = m.firstReal(m.start, func(Entry) bool { return true })
}

func TestQueueMatchesModel(t *testing.T) {
	for seed := int64(0); seed < 40; seed++ {
		per := []int64{1, 2, 7, 50}[seed%4]
		var fsys vfs.FS = vfs.NewMem()
		dir := "/m"
		if seed == 3 {
			fsys, dir = vfs.OS, t.TempDir()
		}
		t.Run(fmt.Sprintf("seed%d-per%d", seed, per), func(t *testing.T) {
			runModel(t, rand.New(rand.NewSource(seed)), fsys, dir, per, 1500)
		})
	}
}

func runModel(t *testing.T, r *rand.Rand, fsys vfs.FS, dir string, per int64, ops int) {
	q := open(t, fsys, dir, int(per))
	defer func() { q.Close() }()
	m := &model{per: per}
	phys := int64(0) // commit-log cursor: offsets only grow
	newEntry := func() Entry {
		phys += int64(r.Intn(3)) // sometimes a gap (other queues' records)
		e := Entry{Offset: phys, Size: int32(1 + r.Intn(200)), TagHash: r.Int63n(5)}
		phys += int64(e.Size)
		return e
	}
	randPhys := func() int64 { return r.Int63n(phys + 50) }
	var history []string
	defer func() {
		if t.Failed() {
			n := max(0, len(history)-15)
			t.Logf("last ops:\n%v", history[n:])
		}
	}()
	errClass := func(err error) error {
		for _, c := range []error{ErrBelowMin, ErrGap, ErrMismatch, ErrInvalid} {
			if errors.Is(err, c) {
				return c
			}
		}
		return err
	}

	for op := range ops {
		k := r.Intn(100)
		switch {
		case k < 50: // append at the end
			e := newEntry()
			at := m.max()
			history = append(history, fmt.Sprintf("Append(%d, %v)", at, e))
			want := m.append(at, e)
			if got := q.Append(at, e); errClass(got) != want {
				t.Fatalf("op %d: Append = %v, want %v", op, got, want)
			}
		case k < 56: // replay, sometimes changed
			if m.max() == 0 {
				continue
			}
			i := r.Int63n(m.max())
			e := m.ents[i]
			if r.Intn(3) == 0 {
				e.TagHash++
			}
			history = append(history, fmt.Sprintf("Replay(%d, %v)", i, e))
			want := m.append(i, e)
			if got := q.Append(i, e); errClass(got) != want {
				t.Fatalf("op %d: Append(%d) = %v, want %v", op, i, got, want)
			}
		case k < 60: // beyond the end: gap or restart
			i := m.max() + 1 + r.Int63n(3*per)
			e := newEntry()
			history = append(history, fmt.Sprintf("Append(%d, %v) ahead", i, e))
			want := m.append(i, e)
			if got := q.Append(i, e); errClass(got) != want {
				t.Fatalf("op %d: Append(%d) = %v, want %v", op, i, got, want)
			}
		case k < 61: // invalid
			want := m.append(m.max(), Entry{Offset: phys, Size: 0})
			if got := q.Append(m.max(), Entry{Offset: phys, Size: 0}); errClass(got) != want {
				t.Fatalf("op %d: invalid Append = %v, want %v", op, got, want)
			}
		case k < 80: // read
			from := m.min - 3 + r.Int63n(m.max()-m.min+7)
			dst := make([]Entry, r.Intn(3*int(per)+5))
			n, err := q.Read(from, dst)
			switch {
			case from < m.min:
				if !errors.Is(err, ErrBelowMin) {
					t.Fatalf("op %d: Read(%d) below min %d = %d, %v", op, from, m.min, n, err)
				}
			case err != nil:
				t.Fatalf("op %d: Read(%d): %v", op, from, err)
			default:
				want := max(0, min(int64(len(dst)), m.max()-from))
				if int64(n) != want {
					t.Fatalf("op %d: Read(%d, %d) = %d entries, want %d", op, from, len(dst), n, want)
				}
				for j := range n {
					if dst[j] != m.ents[from+int64(j)] {
						t.Fatalf("op %d: entry %d = %v, want %v", op, from+int64(j), dst[j], m.ents[from+int64(j)])
					}
				}
			}
		case k < 85:
			history = append(history, "Flush")
			if err := q.Flush(); err != nil {
				t.Fatal(err)
			}
		case k < 88:
			p := randPhys()
			history = append(history, fmt.Sprintf("Truncate(%d)", p))
			m.truncate(p)
			if err := q.Truncate(p); err != nil {
				t.Fatal(err)
			}
		case k < 92:
			p := randPhys() / 2
			history = append(history, fmt.Sprintf("DeleteBefore(%d)", p))
			got, err := q.DeleteBefore(p)
			want := m.deleteBefore(p, got)
			if err != nil || (got != want && got != want-1) {
				t.Fatalf("op %d: DeleteBefore(%d) = %d, %v; want %d", op, p, got, err, want)
			}
		case k < 95:
			history = append(history, "Reopen")
			if err := q.Close(); err != nil {
				t.Fatal(err)
			}
			q = open(t, fsys, dir, int(per))
			m.reopen()
		default:
			ts := r.Int63n(phys/100 + 2)
			storeTime := func(e Entry) (int64, error) { return e.Offset / 100, nil }
			got, err := q.Search(ts, storeTime)
			want := m.firstReal(m.min, func(e Entry) bool { return e.Offset/100 >= ts })
			if err != nil || got != want {
				t.Fatalf("op %d: Search(%d) = %d, %v; want %d", op, ts, got, err, want)
			}
		}
		if q.MinOffset() != m.min || q.MaxOffset() != m.max() {
			t.Fatalf("op %d (%s): [Min, Max) = [%d, %d), model [%d, %d)",
				op, history[len(history)-1], q.MinOffset(), q.MaxOffset(), m.min, m.max())
		}
		goff, ge, gok := q.Last()
		woff, we, wok := m.last()
		if goff != woff || ge != we || gok != wok {
			t.Fatalf("op %d: Last = %d %v %v, model %d %v %v", op, goff, ge, gok, woff, we, wok)
		}
	}
}
