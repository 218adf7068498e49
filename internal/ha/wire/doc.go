// Package wire is the replication protocol between a master and its slaves:
// the slave sends Fetch requests (and Acks), the master answers each Fetch with a FetchResp,
// over one TCP connection per slave. It is pure: byte layouts, bounds and
// framing, no sockets of its own.
//
// # Frames
//
// Every message travels in one frame:
//
//	uint32  length of the payload (big-endian, 1..MaxFrame)
//	uint32  CRC-32C (Castagnoli) of the payload (big-endian)
//	[]byte  payload
//
// ReadFrame refuses a length above MaxFrame before it allocates anything,
// and grows its buffer only as the payload's bytes arrive, so a peer that
// announces a big frame and sends nothing costs no memory.
//
// # Payloads
//
// All integers are big-endian; strings are a uint16 length and that many
// bytes, each bounded (MaxGroup, MaxMessage). A payload opens with the
// layout's version (Version, 1) and the kind of message; a decoder refuses
// another version (ErrVersion) and, for version 1, any byte after the last
// field (a later version that adds fields gets a new version number).
//
// Fetch (kind 1), 48 bytes + group:
//
//	off  size  field
//	  0     1  version = 1
//	  1     1  kind = 1
//	  2     2  len(Group)           ≤ MaxGroup
//	  4     g  Group
//	4+g     8  ReplicaID   int64    ≥ 1
//	12+g    4  Epoch       uint32
//	16+g    8  Offset      int64    ≥ 0
//	24+g    8  Durable     int64    ≥ 0
//	32+g    4  LastEpoch   uint32
//	36+g    4  MaxBytes    int32    ≥ 0
//	40+g    8  MaxWait     int64 nanoseconds ≥ 0
//
// FetchResp (kind 2), 54 bytes + message + data:
//
//	off  size  field
//	  0     1  version = 1
//	  1     1  kind = 2
//	  2     2  Err         uint16 (Code)
//	  4     4  Epoch       uint32
//	  8     8  EpochStart  int64    ≥ 0
//	 16     8  HW          int64    ≥ 0
//	 24     8  LEO         int64    ≥ 0
//	 32     8  LogStart    int64    ≥ 0
//	 40     8  Base        int64    ≥ 0
//	 48     2  len(Message)         ≤ MaxMessage
//	 50     m  Message
//	50+m    4  len(Data)            ≤ MaxData
//	54+m    d  Data
//
// Ack (kind 3), 18 bytes, slave to master, answered by nothing:
//
//	off  size  field
//	  0     1  version = 1
//	  1     1  kind = 3
//	  2     8  Offset      int64    ≥ 0
//	 10     8  Durable     int64    ≥ 0
//
// Auth (kind 4), 32 bytes + group + access key + signature, slave to
// master, the first frame of a connection when the slave has credentials:
//
//	off    size  field
//	  0       1  version = 1
//	  1       1  kind = 4
//	  2       2  len(Group)           ≤ MaxGroup
//	  4       g  Group
//	4+g       2  len(AccessKey)       1..MaxAccessKey
//	6+g       a  AccessKey
//	6+g+a     8  TimeMs      int64    unix milliseconds ≥ 0
//	14+g+a   16  Nonce                random
//	30+g+a    2  len(Sig)             1..MaxSig
//	32+g+a    s  Sig = HMAC-SHA1(secret, "petrel-ha" 0 Group 0 decimal(TimeMs) 0 Nonce)
//
// A master with authentication on refuses a connection whose first frame
// is not a valid Auth of a super user, or whose TimeMs is more than a few
// minutes off its clock, with an Unauthorized FetchResp; one without
// accepts and ignores it. Nothing answers an accepted Auth: the slave's
// Fetch follows at once.
//
// A slave sends an Ack when its fsync has made more bytes durable, between
// its fetches, so the commit point moves without waiting for the next fetch.
//
// An error response (Err ≠ OK) carries no Data; Message says why. A
// Diverging response reuses the fields: Epoch is the largest epoch the
// master and the slave share (0: none), EpochStart its start on the
// master, and Base the offset the slave must cut its log at (lower where
// its own history ends that epoch earlier); HW, LEO and LogStart are the
// master's as in every response.
//
// Data comes last so that the master can write the header and the log bytes
// separately (AppendFetchRespHeader, then FrameWriter or WriteFrameParts):
// the frame's CRC covers both, but the log bytes are never copied into the
// header's buffer (on a TCP connection the two go out in one writev).
// sendfile(2) proper would skip user space, but the CRC needs the bytes
// there anyway.
//
// DecodeFetchResp does not copy Data: it aliases the decoded buffer (for
// ReadFrame's payload, until the buffer is passed to ReadFrame again), so the
// slave appends it to its log, or copies it, first. Encoding into a buffer of
// enough capacity and decoding allocate nothing (bench_test.go), apart from
// a FetchResp's non-empty Message and a Fetch's Group.
//
// The decoders check each field on its own (bounds, signs, lengths) and
// name the field in every error; relations between fields (Durable ≤ Offset,
// Base+len(Data) ≤ LEO, an epoch the master knows) are the receiver's to
// judge. A payload that decodes re-encodes to the same bytes.
package wire
