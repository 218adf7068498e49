package message

import (
	"encoding/binary"
	"fmt"
)

// A SEND_BATCH_MESSAGE (code 320) body is a concatenation of items, each
// laid out as below (big-endian). Unlike a stored record, TOTALSIZE is
// reliable and is used to walk the items; clients write 0 in MAGICCODE and
// BODYCRC.
//
//	offset  size   field
//	     0     4   TOTALSIZE          item length, these 4 bytes included
//	     4     4   MAGICCODE          0
//	     8     4   BODYCRC            0
//	    12     4   FLAG               user flag
//	    16   4+n   BODYLENGTH, BODY
//	     .   2+n   PROPERTIESLENGTH (signed), PROPERTIES
const (
	batchBodyAt     = 20
	minBatchItemLen = batchBodyAt + 2
)

// BatchItem is one message of a SEND_BATCH_MESSAGE body. The topic, queue
// and the other send-header fields are shared by all items of a batch.
type BatchItem struct {
	Flag       int32
	Body       []byte
	Properties string // encoded, as in Message.Properties
}

// DecodeBatch walks a SEND_BATCH_MESSAGE body and calls fn for each item in
// order. The Body of an item aliases body (with its capacity cut at its
// end); fn must copy it to keep it past the bytes' lifetime.
//
// An empty body has no items and returns nil. When an item is malformed
// (lengths that disagree, an item running past the end of the body, a
// non-zero MAGICCODE or BODYCRC) DecodeBatch returns an error wrapping
// ErrCorrupt that names the item's index and byte offset; items before it
// have already been passed to fn. When fn returns an error DecodeBatch stops
// and returns that error unchanged. It never panics.
//
// Only the framing is checked: the item's properties are not parsed (see
// Message.Validate for the rules a stored message must meet).
func DecodeBatch(body []byte, fn func(item BatchItem) error) error {
	be := binary.BigEndian
	for i, off := 0, 0; off < len(body); i++ {
		rest := body[off:]
		if len(rest) < minBatchItemLen {
			return batchError(i, off, "%d bytes left, an item takes at least %d", len(rest), minBatchItemLen)
		}
		total := int64(int32(be.Uint32(rest)))
		if total < minBatchItemLen {
			return batchError(i, off, "TOTALSIZE %d is below the minimum item length %d", total, minBatchItemLen)
		}
		if total > int64(len(rest)) {
			return batchError(i, off, "TOTALSIZE %d runs past the end of the body (%d bytes left)", total, len(rest))
		}
		if magic := be.Uint32(rest[4:]); magic != 0 {
			return batchError(i, off, "MAGICCODE is 0x%08X, want 0", magic)
		}
		if crc := be.Uint32(rest[8:]); crc != 0 {
			return batchError(i, off, "BODYCRC is 0x%08X, want 0", crc)
		}
		bodyLen := int64(int32(be.Uint32(rest[16:])))
		if bodyLen < 0 || batchBodyAt+bodyLen+2 > total {
			return batchError(i, off, "BODYLENGTH %d does not fit in TOTALSIZE %d", bodyLen, total)
		}
		propsAt := batchBodyAt + bodyLen + 2
		propsLen := int64(int16(be.Uint16(rest[propsAt-2:])))
		if propsLen < 0 {
			return batchError(i, off, "PROPERTIESLENGTH %d is negative", propsLen)
		}
		if propsAt+propsLen != total {
			return batchError(i, off, "fields take %d bytes but TOTALSIZE is %d", propsAt+propsLen, total)
		}
		item := BatchItem{
			Flag:       int32(be.Uint32(rest[12:])),
			Body:       rest[batchBodyAt : batchBodyAt+bodyLen : batchBodyAt+bodyLen],
			Properties: string(rest[propsAt:total]),
		}
		if err := fn(item); err != nil {
			return err
		}
		off += int(total)
	}
	return nil
}

func batchError(item, off int, format string, args ...any) error {
	return fmt.Errorf("%w: batch item %d at byte %d: %s", ErrCorrupt, item, off, fmt.Sprintf(format, args...))
}

// EncodeBatch returns the SEND_BATCH_MESSAGE body of items, as clients
// write it; DecodeBatch(EncodeBatch(items)) yields items again. It panics if
// an item's properties are longer than MaxPropertiesLen, which the layout
// cannot express.
func EncodeBatch(items []BatchItem) []byte {
	n := 0
	for i, it := range items {
		if len(it.Properties) > MaxPropertiesLen {
			panic(fmt.Sprintf("message: batch item %d has %d bytes of properties, the limit is %d", i, len(it.Properties), MaxPropertiesLen))
		}
		n += minBatchItemLen + len(it.Body) + len(it.Properties)
	}
	be := binary.BigEndian
	b := make([]byte, 0, n)
	for _, it := range items {
		b = be.AppendUint32(b, uint32(minBatchItemLen+len(it.Body)+len(it.Properties)))
		b = be.AppendUint32(b, 0) // MAGICCODE
		b = be.AppendUint32(b, 0) // BODYCRC
		b = be.AppendUint32(b, uint32(it.Flag))
		b = be.AppendUint32(b, uint32(len(it.Body)))
		b = append(b, it.Body...)
		b = be.AppendUint16(b, uint16(len(it.Properties)))
		b = append(b, it.Properties...)
	}
	return b
}
