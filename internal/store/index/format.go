package index

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"strconv"
)

// NOTE: the constants and encoders below are the byte layout drawn in doc.go;
// change them together.
const (
	headerBytes  = 1024 // two header copies
	hdrCopyBytes = 512  // copy i lives at i*hdrCopyBytes
	hdrUsedBytes = 76   // bytes of a copy covered by its CRC, plus the CRC
	slotBytes    = 4
	entryBytes   = 20

	hdrVersion = 1
	flagSealed = 1

	// maxSlots and maxEntries bound what Open accepts from a header and what
	// Options may ask for, so that entry numbers fit in 32 bits and a bad
	// header cannot make us allocate without bound.
	maxSlots   = 1 << 28
	maxEntries = 1 << 28

	nameDigits = 20
)

var (
	hdrMagic   = [4]byte{'P', 'I', 'D', 'X'}
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// header is one decoded header copy.
type header struct {
	sealed     bool
	seq        uint64
	slotCount  uint32
	entryCap   uint32
	count      uint32
	entriesCRC uint32 // CRC-32C of the entries 1..count
	beginPhys  int64
	endPhys    int64
	baseTime   int64
	minTime    int64
	maxTime    int64
}

func (h *header) encode(b []byte) {
	clear(b[:hdrUsedBytes])
	copy(b[0:4], hdrMagic[:])
	binary.BigEndian.PutUint16(b[4:], hdrVersion)
	var flags uint16
	if h.sealed {
		flags |= flagSealed
	}
	binary.BigEndian.PutUint16(b[6:], flags)
	binary.BigEndian.PutUint64(b[8:], h.seq)
	binary.BigEndian.PutUint32(b[16:], h.slotCount)
	binary.BigEndian.PutUint32(b[20:], h.entryCap)
	binary.BigEndian.PutUint32(b[24:], h.count)
	binary.BigEndian.PutUint32(b[28:], h.entriesCRC)
	binary.BigEndian.PutUint64(b[32:], uint64(h.beginPhys))
	binary.BigEndian.PutUint64(b[40:], uint64(h.endPhys))
	binary.BigEndian.PutUint64(b[48:], uint64(h.baseTime))
	binary.BigEndian.PutUint64(b[56:], uint64(h.minTime))
	binary.BigEndian.PutUint64(b[64:], uint64(h.maxTime))
	binary.BigEndian.PutUint32(b[72:], crc32.Checksum(b[:72], castagnoli))
}

// decodeHeader decodes a header copy; ok is false when the magic, version
// or CRC do not check. It does not judge the values (see sane).
func decodeHeader(b []byte) (h header, ok bool) {
	if len(b) < hdrUsedBytes || [4]byte(b[0:4]) != hdrMagic ||
		binary.BigEndian.Uint16(b[4:]) != hdrVersion ||
		binary.BigEndian.Uint32(b[72:]) != crc32.Checksum(b[:72], castagnoli) {
		return header{}, false
	}
	flags := binary.BigEndian.Uint16(b[6:])
	h = header{
		sealed:     flags&flagSealed != 0,
		seq:        binary.BigEndian.Uint64(b[8:]),
		slotCount:  binary.BigEndian.Uint32(b[16:]),
		entryCap:   binary.BigEndian.Uint32(b[20:]),
		count:      binary.BigEndian.Uint32(b[24:]),
		entriesCRC: binary.BigEndian.Uint32(b[28:]),
		beginPhys:  int64(binary.BigEndian.Uint64(b[32:])),
		endPhys:    int64(binary.BigEndian.Uint64(b[40:])),
		baseTime:   int64(binary.BigEndian.Uint64(b[48:])),
		minTime:    int64(binary.BigEndian.Uint64(b[56:])),
		maxTime:    int64(binary.BigEndian.Uint64(b[64:])),
	}
	return h, true
}

// sane reports whether h can describe a file named base of size bytes
// holding at least one entry.
func (h *header) sane(base, size int64) bool {
	if h.slotCount < 1 || h.slotCount > maxSlots || h.entryCap < 1 || h.entryCap > maxEntries ||
		h.count < 1 || h.count > h.entryCap || h.beginPhys != base || h.endPhys < h.beginPhys ||
		h.minTime > h.maxTime {
		return false
	}
	return size >= entriesOffset(h.slotCount)+int64(h.count)*entryBytes
}

func entriesOffset(slotCount uint32) int64 {
	return headerBytes + int64(slotCount)*slotBytes
}

// fileBytes is the preallocated size of a file.
func fileBytes(slotCount, entryCap uint32) int64 {
	return entriesOffset(slotCount) + int64(entryCap)*entryBytes
}

// entry is one decoded index entry.
type entry struct {
	hash  uint32
	phys  int64
	delta int32 // store time minus the file's base time, ms
	prev  uint32
}

func putEntry(b []byte, e entry) {
	_ = b[entryBytes-1]
	binary.BigEndian.PutUint32(b[0:], e.hash)
	binary.BigEndian.PutUint64(b[4:], uint64(e.phys))
	binary.BigEndian.PutUint32(b[12:], uint32(e.delta))
	binary.BigEndian.PutUint32(b[16:], e.prev)
}

func getEntry(b []byte) entry {
	_ = b[entryBytes-1]
	return entry{
		hash:  binary.BigEndian.Uint32(b[0:]),
		phys:  int64(binary.BigEndian.Uint64(b[4:])),
		delta: int32(binary.BigEndian.Uint32(b[12:])),
		prev:  binary.BigEndian.Uint32(b[16:]),
	}
}

// deltaFits reports whether ts-base fits an entry's signed 32-bit ms delta,
// without overflowing on extreme values.
func deltaFits(ts, base int64) bool {
	if ts >= base {
		return uint64(ts)-uint64(base) <= math.MaxInt32
	}
	return uint64(base)-uint64(ts) <= -math.MinInt32
}

// FNV-1a, 32 bits.
const (
	fnvOffset = 2166136261
	fnvPrime  = 16777619
)

// hashKey hashes topic, '#', key with FNV-1a without allocating; Add passes
// the key as []byte and Query as string, and both give the same hash.
func hashKey[K ~string | ~[]byte](topic string, key K) uint32 {
	h := uint32(fnvOffset)
	for i := 0; i < len(topic); i++ {
		h ^= uint32(topic[i])
		h *= fnvPrime
	}
	h ^= '#'
	h *= fnvPrime
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= fnvPrime
	}
	return h
}

// fileName is the name of the file whose first entry has offset base.
func fileName(base int64) string {
	return fmt.Sprintf("%020d", base)
}

// parseName returns the base offset of an index file name, or false when
// the name is not one.
func parseName(name string) (int64, bool) {
	if len(name) != nameDigits {
		return 0, false
	}
	for i := 0; i < len(name); i++ {
		if name[i] < '0' || name[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(name, 10, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}
