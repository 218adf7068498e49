// Package brokerfront is the broker's RocketMQ 4.x remoting front: one
// handler per request code that turns a command's ext fields and body into a
// typed broker request, calls the broker, and turns the result back into a
// response command. It holds no broker state beyond the mapping from
// connections to the numeric ids the broker knows them by.
//
// Files go by request family, each opening with what the clients send and
// expect (see ../../../../shared/docs/remoting-protocol.md in the repository
// layout, or the summary in each file):
//
//	send.go       10 SEND_MESSAGE, 310 SEND_MESSAGE_V2, 320 SEND_BATCH_MESSAGE
//	pull.go       11 PULL_MESSAGE (long polling)
//	offset.go     14, 15, 29, 30, 31 consumer offsets and queue offsets
//	client.go     34 HEART_BEAT, 38 GET_CONSUMER_LIST_BY_GROUP, 41/42 queue locks, 40 to clients
//	admin.go      17, 215 topics; 201 subscription groups
//	query.go      12 QUERY_MESSAGE, 33 VIEW_MESSAGE_BY_ID
//	inspect.go    28, 202, 203, 208, 222 (and 220 to clients): what the operator CLI reads and resets
//	pop.go        200050 POP_MESSAGE, 200051 ACK_MESSAGE, 200053 CHANGE_MESSAGE_INVISIBLETIME,
//	              10104 Petrel's forward to DLQ (RocketMQ 5's pop consumers)
//	popmore.go    200052 PEEK_MESSAGE, 200054 NOTIFICATION, 200055 POLLING_INFO,
//	              200151 BATCH_ACK_MESSAGE (the rest of RocketMQ 5's pop requests)
//	reply.go      324 SEND_REPLY_MESSAGE, 325 SEND_REPLY_MESSAGE_V2 (and 326 to requesters)
//
// Every ext value sent to a client is a string (clients reject numbers), and
// every answer carries the fields a client reads even when it is an error.
package brokerfront
