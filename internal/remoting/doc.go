// Package remoting is the RocketMQ 4.x remoting transport: the frame and
// header codec, a TCP server that runs the requests of a connection
// concurrently and answers them by opaque, and a client that keeps one
// connection per address. It holds no broker or name-server logic: those
// register a Handler per request code.
//
// # Frame
//
// All integers are big-endian.
//
//	offset  size  field
//	     0     4  LENGTH       bytes that follow: 4 + HEADERLEN + body length
//	     4     1  SERIALIZE    0 = JSON, 1 = ROCKETMQ binary
//	     5     3  HEADERLEN    header length (≤ 16 MiB - 1)
//	     8     H  HEADER       JSON object or ROCKETMQ binary header
//	   8+H     .  BODY         raw bytes up to LENGTH; the length is implied
//
// LENGTH is checked against the frame limit (DefaultMaxFrameBytes, 16 MiB)
// as soon as the prefix is read, so an oversized frame is never buffered.
// A reader allocates a frame's buffer as its bytes arrive (4 KiB, then
// doubling), so a declared length costs nothing until it is sent.
//
// # JSON header
//
// Written compact with keys in this order, every ext value a JSON string,
// ext keys sorted, strings escaped HTML-safe like encoding/json:
//
//	{"code":10,"language":"GO","version":401,"opaque":2,"flag":0,"remark":"","extFields":{"topic":"TopicTest"}}
//
// Read leniently, as Java and Go peers write it: language a string or a
// Java LanguageCode number; remark and extFields null or absent; integer
// fields as numbers or digit strings; unknown keys (Java's
// "serializeTypeCurrentRPC") skipped; ext values that are not strings kept
// as their JSON text, null ext values dropped. Anything else that is not
// valid JSON of that shape is ErrMalformed.
//
// # ROCKETMQ binary header
//
//	size  field
//	   2  CODE
//	   1  LANGUAGE   Java LanguageCode (JAVA 0 ... GO 9 ...)
//	   2  VERSION
//	   4  OPAQUE
//	   4  FLAG
//	 4+R  REMARK     length (int32), UTF-8 bytes
//	 4+E  EXT        length (int32), then E bytes of entries:
//	                 key length (int16), key, value length (int32), value
//
// The ext block must end exactly at HEADERLEN. Binary headers are decoded
// from any peer and encoded only for responses to binary requests.
//
// # Connections
//
// Each Conn has one reader goroutine and one writer goroutine. Senders
// encode their frame in their own goroutine and queue it; the writer writes
// everything queued with one writev, so frames are never interleaved. A
// request runs its Handler in a goroutine of its own, at most
// MaxInFlightPerConn at a time per connection (the reader stops reading
// while the limit is reached); responses go out in completion order and
// are matched by opaque.
//
// Requests of codes registered with HandleBatch (sends) run on no
// goroutine of their own: the reader gathers the consecutive ones it
// decodes from its buffer and hands them to their BatchHandler in one call
// before it may block (no whole frame buffered, no handler slot free, the
// write queue over its bound), before any other frame, or at the batch
// bounds (MaxBatchRequests, MaxBatchBodyBytes), so that the broker sees
// what one socket read brought as one batch.
//
// On a Server's connections the reader also writes: before it may block,
// once its batch is handed on, it writes what was queued while it was busy
// itself, unless the writer is writing; frames queued while it is busy do
// not wake the writer. A
// Client's reader only reads, so that two of our processes never both
// wait to write to a peer that is itself waiting to write.
//
// Requests we send (Invoke) take opaques from a
// process-wide atomic counter and wait for the response with that opaque;
// a response nobody waits for is dropped.
//
// A frame over the limit or a malformed frame is logged once at Warn and
// closes that connection only. Closing a connection at once fails its
// pending Invoke calls with ErrConnClosed, cancels the context of its
// running handlers and stops reading; once those handlers have returned,
// their responses and everything else queued are flushed (bounded by a
// write deadline), the socket closes and OnConnClose runs. So a handler
// that answers when its ctx is cancelled is still heard on Server.Close.
// Responses sent later with Conn.Respond (deferred answers) must be queued
// before Close.
//
// # Limits
//
// A Server bounds what its peers can make it hold (ServerOptions.Limits;
// each hit is logged at Warn, rate-limited, and counted in Server.Stats):
//
//   - read budget: the bytes of frames being read plus requests whose
//     handlers run, per connection and over the server; a reader waits for
//     room rather than allocate past it, and closes its connection if the
//     wait outlasts the frame timeout;
//   - frame timeout: a frame whose first byte arrived must be whole in
//     FrameReadTimeout; idle timeout: a connection that sends no frame for
//     IdleTimeout (RocketMQ's 120 s channel idle), or takes none of a write
//     of its answers for that long, is closed;
//   - connections, in total and per source address: one more is closed as
//     soon as it is accepted;
//   - write queue: while more than ConnWriteQueueBytes of answers wait for a
//     peer that does not read them, its connection is not read until half
//     are written (the reader then also leaves large queues to the writer
//     instead of blocking in a write itself).
//
// A JSON header may carry a code that does not fit int16 (Java's code is
// an int; RocketMQ 5 numbers some requests above 32767, e.g. 200050
// POP_MESSAGE): a request with one goes to the handler Server.HandleWide
// registered for its code (Command.FullCode reads it), or is answered
// REQUEST_CODE_NOT_SUPPORTED; NewWideRequest builds one (JSON header
// only); a response with one is a malformed frame.
//
// Every goroutine belongs to a Server or a Client; their Close waits for
// all of them.
package remoting
