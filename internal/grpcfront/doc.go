// Package grpcfront serves RocketMQ 5.x clients: the gRPC service
// apache.rocketmq.v2.MessagingService (generated package
// github.com/apache/rocketmq-clients/golang/v5/protocol/v2) translated to
// broker calls. It holds no message state; what it keeps is the client
// sessions (Settings, the Telemetry stream, liveness).
//
// # Transport
//
// TLS by default: the official Go client v5.1.2 always dials TLS and
// accepts any certificate. Without Config.TLSCert/TLSKey, a self-signed
// ECDSA certificate is generated into Config.CertDir (grpc-tls.crt,
// grpc-tls.key) on first start and reused afterwards. Config.Plaintext
// serves without TLS, for clients that can dial plaintext. Every outcome
// is carried in-band in a Status (code 20000 is OK): the handlers never
// return gRPC errors, which the Go client mishandles (Unavailable drops
// the whole connection).
//
// # Files
//
//	server.go   Config, New, Serve, Shutdown
//	session.go  Heartbeat, Telemetry (Settings handshake, check-backs), NotifyClientTermination, expiry
//	route.go    QueryRoute, QueryAssignment, names and namespaces
//	send.go     SendMessage: normal, FIFO, delay, transactional
//	txn.go      EndTransaction; the transaction id
//	receive.go  ReceiveMessage, AckMessage, ChangeInvisibleDuration, ForwardMessageToDeadLetterQueue
//	forward.go  on a slave: the same, forwarded to the master over remoting
//	sendfwd.go  on a slave: SendMessage and EndTransaction, forwarded likewise
//	checkrelay.go on a slave: its producers registered with the master, check-backs relayed
//	convert.go  stored record -> gRPC message
//	validate.go message id, tag, key, group and property checks
//	codes.go    broker error kinds -> status codes
//	auth.go     authentication and authorization (Config.Auth)
//
// # Authentication
//
// With Config.Auth every call is authenticated by the client's signature
// (the "authorization" metadata, an HMAC-SHA1 of "x-mq-date-time") and
// authorized by its user's policies as RocketMQ's proxy authorizes it
// (auth.go has the table: Pub on the topics sent to, Sub on the group and
// topic consumed, ...). A refusal is the call's response with status
// UNAUTHORIZED (40100) or FORBIDDEN (40300); a Telemetry stream without a
// valid signature gets that status and ends, and refused Settings are
// answered with a status alone and not applied. Without Config.Auth the
// signature the clients always send is ignored.
//
// # Sessions
//
// A client is known from its first Settings on a Telemetry stream, keyed
// by its x-mq-client-id header. Each known client gets a connection id
// from the broker (broker.RegisterConn; the broker routes its transaction
// check-backs to the session) under which it is registered in the
// broker's client table with broker.Heartbeat:
// producers under their publishing topics, simple consumers under their
// group (consume type CONSUME_POP). The producer group of a 5.x
// transactional message is its topic, as in the Java proxy: a half
// message carries PGROUP=<topic>, and the broker's check-back goes to a
// producer that lists the topic. Heartbeats and Settings refresh both the
// session and the broker registration. A Heartbeat from an unknown client
// is answered UNRECOGNIZED_CLIENT_TYPE, on which the client sends its
// Settings again. The session ends, with broker.ConnClosed, when its
// Telemetry stream ends, on NotifyClientTermination and on Shutdown; after
// Config.ClientExpiry without Heartbeat or Telemetry traffic the broker
// expires its registration and the session is forgotten. Limits:
// 100,000 known clients (Settings from another one are answered
// TOO_MANY_REQUESTS), 64 queued commands per Telemetry stream (a
// check-back that does not fit is not sent; the broker checks again
// later), 1024 messages per SendMessage, 1024 entries per AckMessage, 32
// messages per receive.
//
// The server's Settings reply: producers get max_body_size = the
// broker's MaxMessageBytes (never 0), validate_message_type and Java's
// default back-off; simple consumers get fifo, receive_batch_size 32, the
// long-polling timeout they asked for (20 s when none) and a back-off
// policy whose max_attempts is the group's RetryMaxTimes + 1.
//
// # Groups
//
// Consumer groups are the broker's subscription groups (created on a
// consumer's first Settings, or by UPDATE_AND_CREATE_SUBSCRIPTIONGROUP /
// `petrel group create`). A group consumes in order (FIFO) when its
// config has consumeMessageOrderly (or the older attribute
// consumeMessageOrderly=true, FIFOAttribute); its maximum delivery
// attempts are RetryMaxTimes + 1, after which the broker moves a message
// to %DLQ%<group>; its groupRetryPolicy is the consumers' back-off. Both
// are read on every receive, and a change of the config (the broker's
// OnGroupChanged) pushes new Settings to the group's connected consumers
// over their Telemetry streams.
//
// # Topics and names
//
// A resource with a namespace is stored as "namespace%name". QueryRoute
// lists queues 0..n-1 (n = the topic's larger queue count) as READ_WRITE
// at one endpoint: Config.Advertise, else the address the client used.
// An unknown topic is TOPIC_NOT_FOUND with RocketMQ's text, also when the
// broker auto-creates topics: RocketMQ's proxy never creates a topic on a
// route query. A send creates an unknown topic by the broker's rule (the
// auto-create template, 4 queues; never %RETRY% or %DLQ% topics). A topic
// accepts every message type unless its attribute message.type names one
// (broker.AcceptedTypes; the broker checks each send's type).
//
// # Sending
//
// A message becomes a typed broker send (send.go) and the broker applies
// the policy. It picks the queue: FIFO messages by their message group
// (the ShardingKey, broker.ShardQueue: FNV-1a modulo the write queues),
// others round robin. The client's message id is stored as UNIQ_KEY, so
// the broker's dedup window answers a retried send with the original
// result. Delays use the broker's timer (Delay; stored as
// TIMER_DELIVER_MS) and its MaxTimerDelay; transactional messages are the
// broker's half messages (Transactional; stored with TRAN_MSG). Every send's
// transaction id is its message id, as RocketMQ's proxy answers; a half
// is found by it (see txn.go). Deliveries hand __SHARDINGKEY and
// __transactionId__ back as user properties, as RocketMQ's do.
//
// # Receiving
//
// ReceiveMessage pops from the whole topic for the group (the request's
// queue id is ignored), waiting up to min(the client's long-polling
// timeout, the call's deadline minus half the request timeout); Shutdown
// answers waiting receives with MESSAGE_NOT_FOUND. Invisible durations of
// a receive must lie in 1 s..12 h. Receipt handles are the broker's,
// passed through; a message's delivery attempt and handle are in its
// system properties. AckMessage acknowledges its entries concurrently (32
// at a time), so that they share the broker's pop-state fsyncs instead of
// paying one each.
//
// On a slave the pop state is the master's: with Config.Master, a front
// whose broker is a slave forwards receives, acks, changes of invisible
// time and forwards to the dead-letter queue to its master over remoting
// (RocketMQ 5's POP_MESSAGE and its kin) and answers with the master's
// answer; an unreachable master is HA_NOT_AVAILABLE (forward.go). Sends
// and transaction ends go to the master likewise (SEND_MESSAGE_V2,
// END_TRANSACTION; sendfwd.go), the master's check-backs of halves sent
// through the slave come back through it (checkrelay.go), and the slave's
// routes list its queues READ_WRITE at its own endpoint (route.go).
package grpcfront
