// Package rmq is the typed layer of the RocketMQ 4.x remoting protocol: one
// table of request and response codes (codes.go), and for every request
// Petrel serves or sends a header struct and body struct with
// Decode…(*remoting.Command) (T, error) and Encode…, so that the broker's
// front, the name server, the operator CLI and the load generator share one
// definition of each message and its round-trip and fuzz tests live here.
//
// remoting frames commands; rmq gives their ext fields and bodies types.
// Decoders refuse a missing required field and a malformed number with a
// *FieldError that names the field (the front sends its Error text to the
// client as the remark); an absent optional field is its zero value.
//
// Wire structs are not the meta store's persisted structs: a change to
// what Petrel keeps on disk never changes what it says on the wire, and the
// reverse.
//
// Files go by request family:
//
//	codes.go     request and response codes
//	fields.go    ext field reading (FieldError) and writing
//	body.go      JSON body decoding (BodyError)
//	topic.go     17, 215, 216, 21, 206: topic config and topic list
//	group.go     200, 201, 207: subscription group config
//	route.go     105: topic route data
//	cluster.go   106: cluster info
//	register.go  103, 104, 322: broker registration (Java's and Petrel's delta/zlib form)
//	kv.go        100, 101, 102, 219: name server KV config
//	stats.go     202, 203, 208: topic stats, consumer connections, consume stats
//	runtime.go   28: broker runtime info
//	send.go      10, 310, 320: send headers (V1, V2, batch); the 4.x transaction flag and
//	             delay properties (Prepared, PropertiesDelay)
//	pull.go      PULL_MESSAGE and its answer
//	offset.go    consumer offsets, queue min/max, search by time
//	offsets.go   maps keyed by message queue (OffsetTable, MessageQueue)
//	client.go    heartbeat (SubscriptionData), unregister, consumer list,
//	             queue locks, consumer-ids-changed notice
//	query.go     query by key, view by offset
//	retry.go     send back, Petrel's resend from DLQ and cancel delayed
//	txn.go       end transaction, check transaction state
//	reset.go     reset offsets (to the broker and to its consumers)
//	pop.go       200050, 200051, 200053: pop, ack, change invisible time, the
//	             extra info (POP_CK) a client sends back; Petrel's forward to DLQ
//	popmore.go   200052, 200054, 200055, 200151: peek, notification, polling
//	             info, batch ack (BatchAckMessageRequestBody, fastjson's bit set)
//	reply.go     324, 325, 326: request-reply codes and properties, the push
//	             to the requester (PushReplyRequest)
package rmq
