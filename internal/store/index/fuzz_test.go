package index

import (
	"encoding/binary"
	"flag"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path"
	"path/filepath"
	"testing"

	"github.com/petrelmq/petrel/internal/vfs"
)

var updateSeeds = flag.Bool("update-fuzz-seeds", false, "rewrite testdata/fuzz/FuzzIndexFile from index files made by the code")

// Fuzz modes (bits of the second argument).
const (
	fuzzFixCRC   = 1 << iota // make both header copies and the entries CRC check
	fuzzNameHdr              // name the file after header copy 0's BeginPhys
	fuzzFollowed             // put a valid file after it, so it is opened as sealed
)

// fixCRCs makes the header copies of an index file check, so that the
// fuzzer gets past them to the slots and entries.
func fixCRCs(b []byte) {
	for i := 0; i < 2; i++ {
		if len(b) < i*hdrCopyBytes+hdrUsedBytes {
			return
		}
		h := b[i*hdrCopyBytes:]
		copy(h[0:4], hdrMagic[:])
		binary.BigEndian.PutUint16(h[4:], hdrVersion)
		slots := binary.BigEndian.Uint32(h[16:])
		count := binary.BigEndian.Uint32(h[24:])
		start := entriesOffset(slots)
		if end := start + int64(count)*entryBytes; slots <= maxSlots && count <= maxEntries && end <= int64(len(b)) {
			binary.BigEndian.PutUint32(h[28:], crc32.Checksum(b[start:end], castagnoli))
		}
		binary.BigEndian.PutUint32(h[72:], crc32.Checksum(h[:72], castagnoli))
	}
}

// oneEntryFile is a valid, flushed index file at base with one entry.
func oneEntryFile(base int64) []byte {
	const slots = 2
	b := make([]byte, fileBytes(slots, 2))
	e := b[entriesOffset(slots):]
	h := hashKey("T", "k0")
	putEntry(e, entry{hash: h, phys: base, delta: 0})
	hd := header{seq: 1, slotCount: slots, entryCap: 2, count: 1, beginPhys: base, endPhys: base, baseTime: 5, minTime: 5, maxTime: 5}
	hd.entriesCRC = crc32.Checksum(e[:entryBytes], castagnoli)
	hd.encode(b)
	return b
}

// FuzzIndexFile opens arbitrary bytes as an index file, as the newest file
// (recovered from its entries) or as a sealed one (walked through its slot
// table), then queries, adds, truncates, reopens. Nothing may panic or loop.
func FuzzIndexFile(f *testing.F) {
	for _, s := range seedFiles(f) {
		for _, mode := range []byte{0, fuzzFixCRC | fuzzNameHdr, fuzzFixCRC | fuzzNameHdr | fuzzFollowed} {
			f.Add(s, mode)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, mode byte) {
		if len(data) > 1<<20 {
			return
		}
		data = append([]byte(nil), data...)
		if mode&fuzzFixCRC != 0 {
			fixCRCs(data)
		}
		base := int64(0)
		if mode&fuzzNameHdr != 0 && len(data) >= 40 {
			base = max(0, int64(binary.BigEndian.Uint64(data[32:])))
		}
		fsys := vfs.NewMem()
		fsys.MkdirAll(testDir)
		write := func(base int64, b []byte) {
			fl, err := fsys.Create(path.Join(testDir, fileName(base)))
			if err != nil {
				t.Fatal(err)
			}
			fl.WriteAt(b, 0)
			fl.Close()
		}
		write(base, data)
		if mode&fuzzFollowed != 0 && base < math.MaxInt64/2 {
			write(math.MaxInt64/2, oneEntryFile(math.MaxInt64/2))
		}
		exercise(t, fsys)
		exercise(t, fsys) // reopen what the first round left
	})
}

// exercise opens the index in fsys and uses every operation; errors are
// fine, panics and hangs are not.
func exercise(t *testing.T, fsys *vfs.MemFS) {
	x, err := Open(fsys, testDir, Options{SlotsPerFile: 4, EntriesPerFile: 8})
	if err != nil {
		return
	}
	defer x.Close()
	query := func() {
		for _, k := range []string{"k0", "k1", "k2", "k3"} {
			for _, r := range [][2]int64{{math.MinInt64, math.MaxInt64}, {0, 1 << 40}, {5, 5}} {
				got, err := x.Query("T", k, r[0], r[1], 16)
				if err == nil && len(got) > 16 {
					t.Fatalf("%d results, max 16", len(got))
				}
			}
		}
	}
	query()
	maxOff := x.MaxPhysOffset()
	if maxOff < math.MaxInt64-10 {
		for i := range int64(10) {
			x.Add("T", []byte(fmt.Sprint("k", i%4)), maxOff+1+i, 5+i)
		}
		query()
		if got, err := x.Query("T", "k3", math.MinInt64, math.MaxInt64, 100); err == nil && x.MaxPhysOffset() == maxOff+10 {
			found := false
			for _, o := range got {
				found = found || o == maxOff+4
			}
			if !found {
				t.Fatalf("entry just added not found: %v", got)
			}
		}
	}
	x.Flush()
	x.Truncate(maxOff/2 + 1)
	query()
	x.DeleteBefore(maxOff / 3)
	query()
}

// seedFiles returns index files made by the code: a sealed one, an active
// one, one whose newest header is torn, and a few broken ones. With
// -update-fuzz-seeds they are also written to the seed corpus.
func seedFiles(tb testing.TB) [][]byte {
	fsys := vfs.NewMem()
	fsys.MkdirAll(testDir)
	x, err := Open(fsys, testDir, Options{SlotsPerFile: 4, EntriesPerFile: 8})
	if err != nil {
		tb.Fatal(err)
	}
	for i := range 12 {
		x.Add("T", []byte(fmt.Sprint("k", i%4)), int64(100*i), int64(1000+i))
		if i == 9 {
			x.Flush()
		}
	}
	x.Close()
	read := func(base int64) []byte {
		fl, err := fsys.Open(path.Join(testDir, fileName(base)))
		if err != nil {
			tb.Fatal(err)
		}
		defer fl.Close()
		n, _ := fl.Size()
		b := make([]byte, n)
		fl.ReadAt(b, 0)
		return b
	}
	sealed, active := read(0), read(800)
	torn := append([]byte(nil), active...)
	copy(torn[hdrCopyBytes+20:], "garbage")
	seeds := [][]byte{sealed, active, torn, oneEntryFile(7), sealed[:headerBytes], {}, []byte("PIDX")}
	if *updateSeeds {
		dir := filepath.Join("testdata", "fuzz", "FuzzIndexFile")
		os.MkdirAll(dir, 0o755)
		for i, s := range seeds {
			for _, mode := range []byte{0, fuzzFixCRC | fuzzNameHdr | fuzzFollowed} {
				body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nbyte(%q)\n", s, mode)
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%d-%d", i, mode)), []byte(body), 0o644); err != nil {
					tb.Fatal(err)
				}
			}
		}
	}
	return seeds
}
