package remoting

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
)

// binaryFixedBytes is the size of the ROCKETMQ header before the remark:
// code 2, language 1, version 2, opaque 4, flag 4, remark length 4.
const binaryFixedBytes = 17

// decodeBinaryHeader decodes a ROCKETMQ binary header (see doc.go). The
// ext block must end exactly at the end of the header. With lazy the ext
// fields are listed for Ext instead of filling ExtFields.
func decodeBinaryHeader(h []byte, c *Command, lazy bool) error {
	if len(h) < binaryFixedBytes+4 {
		return fmt.Errorf("%w: binary header of %d bytes is shorter than %d", ErrMalformed, len(h), binaryFixedBytes+4)
	}
	be := binary.BigEndian
	c.Code = int16(be.Uint16(h[0:]))
	c.Language = languageName(int64(h[2]))
	c.Version = int16(be.Uint16(h[3:]))
	c.Opaque = int32(be.Uint32(h[5:]))
	c.Flag = int32(be.Uint32(h[9:]))
	remarkLen := int64(int32(be.Uint32(h[13:])))
	p := binaryFixedBytes
	if remarkLen < 0 || remarkLen > int64(len(h)-p-4) {
		return fmt.Errorf("%w: binary remark length %d does not fit the header", ErrMalformed, remarkLen)
	}
	c.Remark = string(h[p : p+int(remarkLen)])
	p += int(remarkLen)
	extLen := int64(int32(be.Uint32(h[p:])))
	p += 4
	if extLen != int64(len(h)-p) {
		return fmt.Errorf("%w: binary ext length %d, but %d bytes remain in the header", ErrMalformed, extLen, len(h)-p)
	}
	ext := h[p:]
	if err := checkBinaryExt(ext); err != nil {
		return err
	}
	c.ExtFields, c.ext, c.bext = nil, nil, ""
	if len(ext) == 0 {
		return nil
	}
	// One string for the block; keys and values are its substrings.
	c.bext = string(ext)
	if !lazy {
		c.materialize()
	}
	return nil
}

// checkBinaryExt checks that a binary ext block is a sequence of whole
// fields: key length (2 bytes), key, value length (4 bytes), value.
func checkBinaryExt(ext []byte) error {
	be := binary.BigEndian
	for q := 0; q < len(ext); {
		if len(ext)-q < 2 {
			return fmt.Errorf("%w: binary ext key length cut at byte %d", ErrMalformed, q)
		}
		kl := int(int16(be.Uint16(ext[q:])))
		q += 2
		if kl < 0 || kl > len(ext)-q {
			return fmt.Errorf("%w: binary ext key length %d does not fit", ErrMalformed, kl)
		}
		q += kl
		if len(ext)-q < 4 {
			return fmt.Errorf("%w: binary ext value length cut at byte %d", ErrMalformed, q)
		}
		vl := int64(int32(be.Uint32(ext[q:])))
		q += 4
		if vl < 0 || vl > int64(len(ext)-q) {
			return fmt.Errorf("%w: binary ext value length %d does not fit", ErrMalformed, vl)
		}
		q += int(vl)
	}
	return nil
}

// nextBinaryExt reads the field at q of a block checkBinaryExt accepted
// and returns where the next one starts.
func nextBinaryExt(block string, q int) (key, value string, next int) {
	kl := int(block[q])<<8 | int(block[q+1])
	key = block[q+2 : q+2+kl]
	q += 2 + kl
	vl := int(block[q])<<24 | int(block[q+1])<<16 | int(block[q+2])<<8 | int(block[q+3])
	q += 4
	return key, block[q : q+vl], q + vl
}

// eachBinaryExt calls fn for each field of a block checkBinaryExt
// accepted, in order.
func eachBinaryExt(block string, fn func(key, value string)) {
	for q := 0; q < len(block); {
		var k, v string
		k, v, q = nextBinaryExt(block, q)
		fn(k, v)
	}
}

// binaryExtLookup returns the value of the last field named key in a block
// checkBinaryExt accepted (a later field of a key overrides an earlier one,
// as in a decoded map).
func binaryExtLookup(block, key string) (value string, ok bool) {
	for q := 0; q < len(block); {
		var k, v string
		k, v, q = nextBinaryExt(block, q)
		if k == key {
			value, ok = v, true
		}
	}
	return value, ok
}

// appendBinaryHeader appends c's header in the ROCKETMQ binary layout: ext
// fields listed with AppendExt in their order, a map's in key order.
func appendBinaryHeader(dst []byte, c *Command) ([]byte, error) {
	if c.wideCode != 0 {
		return dst, fmt.Errorf("%w: code %d does not fit the binary header", ErrInvalidCommand, c.wideCode)
	}
	start := len(dst)
	be := binary.BigEndian
	dst = be.AppendUint16(dst, uint16(c.Code))
	dst = append(dst, languageCode(c.Language))
	dst = be.AppendUint16(dst, uint16(c.Version))
	dst = be.AppendUint32(dst, uint32(c.Opaque))
	dst = be.AppendUint32(dst, uint32(c.Flag))
	if len(c.Remark) > maxHeaderBytes {
		return dst[:start], fmt.Errorf("%w: remark of %d bytes", ErrInvalidCommand, len(c.Remark))
	}
	dst = be.AppendUint32(dst, uint32(len(c.Remark)))
	dst = append(dst, c.Remark...)
	lenAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	switch {
	case len(c.ExtFields) == 0 && len(c.ext) == 0:
		dst = append(dst, c.bext...) // as received, or empty
	case len(c.ExtFields) == 0 && c.bext == "" && !hasNull(c.ext):
		for _, p := range c.ext {
			var err error
			if dst, err = appendBinaryExt(dst, p.key, p.value); err != nil {
				return dst[:start], err
			}
		}
	default:
		fields := c.ExtFields
		if len(c.ext) > 0 || c.bext != "" {
			merged := &Command{ExtFields: maps.Clone(c.ExtFields), bext: c.bext, ext: c.ext}
			merged.materialize()
			fields = merged.ExtFields
		}
		var stack [32]string
		for _, k := range sortedKeys(stack[:0], fields) {
			var err error
			if dst, err = appendBinaryExt(dst, k, fields[k]); err != nil {
				return dst[:start], err
			}
		}
	}
	extLen := len(dst) - lenAt - 4
	if extLen > maxHeaderBytes {
		return dst[:start], fmt.Errorf("%w: ext block of %d bytes", ErrInvalidCommand, extLen)
	}
	be.PutUint32(dst[lenAt:], uint32(extLen))
	return dst, nil
}

// appendBinaryExt appends one ext field: key length (2 bytes), key, value
// length (4 bytes), value.
func appendBinaryExt(dst []byte, k, v string) ([]byte, error) {
	if len(k) > math.MaxInt16 {
		return dst, fmt.Errorf("%w: binary ext key of %d bytes exceeds %d", ErrInvalidCommand, len(k), math.MaxInt16)
	}
	if len(v) > maxHeaderBytes {
		return dst, fmt.Errorf("%w: ext value of %d bytes", ErrInvalidCommand, len(v))
	}
	be := binary.BigEndian
	dst = be.AppendUint16(dst, uint16(len(k)))
	dst = append(dst, k...)
	dst = be.AppendUint32(dst, uint32(len(v)))
	return append(dst, v...), nil
}

// hasNull reports whether a listed ext field removes a key (a JSON null).
func hasNull(ext []extPair) bool {
	for _, p := range ext {
		if p.null {
			return true
		}
	}
	return false
}

// sortedKeys appends m's keys to dst in ascending order, so that encoded
// headers are deterministic.
func sortedKeys(dst []string, m map[string]string) []string {
	for k := range m {
		dst = append(dst, k)
	}
	slices.Sort(dst)
	return dst
}
