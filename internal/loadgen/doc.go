// Package loadgen is Petrel's load generator: it drives a running broker
// over the RocketMQ remoting protocol with Petrel's own remoting client (not
// an official client, so the client is not the bottleneck), or its RocketMQ
// 5.x gRPC front with Petrel's own lean gRPC client, and measures
// throughput and latency. The `petrel bench` command is a thin shell over
// Produce, Consume and Receive.
//
// # Scenarios
//
// Produce asks a name server for the topic's route (GET_ROUTEINFO_BY_TOPIC,
// 105), creating the topic first on every master of the cluster
// (UPDATE_AND_CREATE_TOPIC, 17, ProduceConfig.Queues queues) when the name
// server has no route. It then sends single messages with SEND_MESSAGE_V2
// (310), round-robin over the writable queues, with up to InFlight requests
// outstanding (InFlight workers, each with one request in flight: the
// window of an async producer). Each message carries a UNIQ_KEY (32
// uppercase hex digits: a per-run prefix and the message's sequence number)
// and WAIT=true, like the real clients; the first 8 bytes of each body hold
// the sequence number, big-endian, the rest is filler. Every worker uses
// one connection per broker, shared with the others (Conns > 1 spreads the
// workers over that many connections per broker). With Rate > 0 sends are
// paced: message i is not sent before start + i/Rate, and its latency runs
// from that due time (or its send, if earlier), so that a sender that falls
// behind counts its backlog.
//
// Mode picks how sends are made: ModeAsync (the default, above), ModeSync
// (InFlight worker goroutines, each sending and waiting for its answer, a
// GracePeriod at most) or ModeOneway (oneway frames: the broker stores
// without answering; a send counts once its frame is written, and latency
// is the time to the write). With Batch > 1 each send is a
// SEND_BATCH_MESSAGE (320) of Batch messages, each item with its own
// UNIQ_KEY and sequence number (the last batch may be shorter); message
// counts and bytes count messages, latencies count requests.
//
// While a run lasts, the configs' Progress callback gets the figures so
// far every ProgressInterval (default 1 s); FormatProgress turns two
// consecutive reports into a progress line with the rates in between.
// Result.Summary is the result for scripts (JSON).
//
// Consume announces a consumer group with a heartbeat (34, subscription
// "*"), starts each queue at the group's committed offset
// (QUERY_CONSUMER_OFFSET, 14) or, when there is none or FromStart is set,
// at the queue's minimum offset (31), then pulls every queue concurrently,
// one outstanding long-polling PULL_MESSAGE (11) per queue, PullBatch
// messages per pull, committing the offset reached with each pull (sysFlag
// bit 0) and once more at the end (UPDATE_CONSUMER_OFFSET, 15). Every
// stored record of a pull body is checked (message.Check: lengths, magic,
// body CRC) and counted.
//
// # gRPC
//
// With ProduceConfig.GRPC set, Produce talks to the gRPC front
// (apache.rocketmq.v2.MessagingService, the generated stubs of the 5.x
// client module, not its client library) at that address, over TLS that
// accepts any certificate (the front's is self-signed) or, with
// GRPCPlaintext, without TLS. Like the official Go client it sends the
// headers x-mq-client-id, x-mq-language (GO), x-mq-protocol (v2) and
// x-mq-client-version with every call, asks QueryRoute first (the
// route's endpoint, checked like any address, is where it sends; a route
// query never creates a topic, so for an unknown one it sends to the
// address given and its first send creates the topic where the broker
// auto-creates topics), sends
// its Settings (PRODUCER, publishing the topic) on a Telemetry stream and
// waits for the answer, keeps the stream open for the run and sends a
// Heartbeat every 10 s. InFlight senders then each loop one SendMessage
// of Batch messages (NORMAL, a UNIQ_KEY-style message id as above, the
// sequence number in the body), spread over Conns HTTP/2 connections;
// ModeSync and ModeAsync run alike, ModeOneway is refused.
//
// Receive is a simple-consumer load over the gRPC front: QueryRoute,
// Settings (SIMPLE_CONSUMER of Group, subscription "*" of Topic, the
// long-polling timeout LongPoll), then Concurrency receivers each loop a
// ReceiveMessage of up to Batch (≤ 32) messages, invisible for Invisible,
// held by the server up to LongPoll when there is nothing, and one
// AckMessage with all the messages it got. A receiver reserves what it
// asks for from Count and gives back what did not come, so a run never
// receives more than Count (nothing is left received but unacknowledged).
// Result.Msgs counts acknowledged messages and Result.Latency holds the
// AckMessage latencies; secs runs to the last acknowledgement. Both gRPC
// runs set Result.Protocol to ProtocolGRPC.
//
// # Bounds
//
// A run stops by itself: after Count messages, after Duration, or when the
// caller's context ends; in-flight requests then get a grace period
// (GracePeriod) before they are abandoned. A run also stops after MaxErrors
// failed requests. Unless AllowRemote is set, every address used — the name
// servers and the broker addresses a route names — must be a loopback
// address. Latencies go into one fixed-size Histogram per worker (about
// 30 KB each, allocated up front), merged at the end.
//
// # Result line
//
// Result.Line formats a run in the line format of the peer benchmarks
// (../shared/peers), so figures can be set side by side:
//
//	petrel produce 1024B msgs=N secs=S msgs/s=X MB/s=Y p50_us=.. p90_us=.. p99_us=.. p999_us=.. max_us=.. errors=E
//	petrel consume 1024B msgs=N secs=S msgs/s=X MB/s=Y errors=E
//	petrel receive 1024B msgs=N secs=S msgs/s=X MB/s=Y p50_us=.. (ack latency) .. errors=E
//
// MB/s counts body bytes only, in 10^6 bytes per second; secs runs from the
// first request to the last answer (produce) or to the moment Count
// messages were received (consume). The size is the body size (consume:
// the mean body size received).
package loadgen
