// Package message holds Petrel's message model and the stored-record codec.
//
// A stored record is byte for byte RocketMQ's V1 stored-message layout, so a
// pull response body is a plain concatenation of records read from the
// commit log. All integers are big-endian.
//
//	offset  size     field
//	     0     4     TOTALSIZE        whole record length, these 4 bytes included
//	     4     4     MAGICCODE        0xDAA320A7 (BlankMagic 0xCBD43194 marks segment-end filler)
//	     8     4     BODYCRC          CRC-32 (IEEE) of the body & 0x7FFFFFFF
//	    12     4     QUEUEID
//	    16     4     FLAG             user flag
//	    20     8     QUEUEOFFSET      logical offset in the consume queue
//	    28     8     PHYSICALOFFSET   commit-log offset of this record
//	    36     4     SYSFLAG          bit 0x10: born host IPv6, bit 0x20: store host IPv6
//	    40     8     BORNTIMESTAMP    ms since the epoch
//	    48   8|20    BORNHOST         IPv4 (4) or IPv6 (16) address, then port (4)
//	     .     8     STORETIMESTAMP   ms since the epoch
//	     .   8|20    STOREHOST
//	     .     4     RECONSUMETIMES
//	     .     8     PREPAREDTRANSACTIONOFFSET
//	     .   4+n     BODYLENGTH, BODY
//	     .   1+n     TOPICLENGTH (unsigned), TOPIC
//	     .   2+n     PROPERTIESLENGTH (signed, so ≤ 32767), PROPERTIES
//
// PROPERTIES is "key 0x01 value 0x02" repeated; see EncodeProperties.
//
// Check accepts only records that EncodeTo could have written (see its
// doc), so Decode followed by Encode reproduces them byte for byte.
//
// DecodeBatch and EncodeBatch handle the body of a SEND_BATCH_MESSAGE
// request, whose items have their own short layout (see batch.go).
//
// DecodeTrace and AppendTrace handle the body of a message-trace message
// (RocketMQ's enableMsgTrace records: Pub, SubBefore, SubAfter,
// EndTransaction), text records laid out as trace.go draws them.
//
// The package imports none of Petrel's packages. Decoding functions never
// panic on arbitrary input; Record accessors assume a record that passed
// Check.
package message
