// Package namesrv is Petrel's name server: which broker serves which topic.
//
// It owns three things:
//
//   - Table (route.go), a pure state machine — no goroutines, sockets or
//     clock — holding the live broker processes, each master's topics, and
//     the KV configuration. Callers pass the time in.
//   - Server (namesrv.go), the Table behind the remoting transport: the
//     RocketMQ 4.x name server requests, broker expiry on a clock-driven scan
//     (Options.ScanInterval, default 10 s; a broker silent for longer than
//     Options.BrokerTTL, default 120 s, is dropped), and dropping a broker
//     at once when the connection it registered on closes.
//   - Registrar (registrar.go), the broker side: keeps one broker registered
//     with every name server, independently of each other.
//
// # Requests
//
//	100 PUT_KV_CONFIG          ext namespace, key, value
//	101 GET_KV_CONFIG          ext namespace, key -> ext value; 22 if absent
//	102 DELETE_KV_CONFIG       ext namespace, key
//	103 REGISTER_BROKER        full (Java) or delta (Petrel), see below
//	104 UNREGISTER_BROKER      ext brokerName, brokerAddr, clusterName, brokerId
//	105 GET_ROUTEINFO_BY_TOPIC ext topic -> route JSON; 17 TOPIC_NOT_EXIST if none
//	106 GET_BROKER_CLUSTER_INFO -> {"brokerAddrTable":{..},"clusterAddrTable":{..}}
//	206 GET_ALL_TOPIC_LIST_FROM_NAMESERVER -> {"topicList":[..]}
//	205 WIPE_WRITE_PERM_OF_BROKER ext brokerName -> ext wipeTopicCount (a drain, writeperm.go)
//	216 DELETE_TOPIC_IN_NAMESRV ext topic
//	219 GET_KVLIST_BY_NAMESPACE ext namespace -> {"table":{..}}; 22 if empty
//	322 QUERY_DATA_VERSION     ext as 104, body data version -> ext changed, body held version
//	327 ADD_WRITE_PERM_OF_BROKER ext brokerName -> ext addTopicCount (ends a drain)
//
// # Routes
//
// A topic's route lists the queue data of every live master (broker id 0)
// that has the topic, sorted by broker name, and, for each such broker
// name, the addresses of all its live processes (slaves contribute
// addresses only; a broker name whose master is gone has no queue data).
// The JSON is compact and exactly what the Go client parses:
//
//	{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.5:10911","1":"10.0.0.6:10911"},"brokerName":"broker-a","cluster":"c"}],
//	 "filterServerTable":{},
//	 "queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"writeQueueNums":4,"topicSysFlag":0}],
//	 "orderTopicConf":"broker-a:4"}        <- only when KV ORDER_TOPIC_CONFIG/<topic> is set
//
// brokerAddrs is never absent and never holds whitespace; queueDatas is
// always an array.
//
// # Registration
//
// Full registration is Java's: ext brokerName, brokerAddr, clusterName,
// haServerAddr, brokerId, compressed (only "false" is read), bodyCrc32
// (CRC-32 of the body masked to 31 bits; "0" or absent skips the check);
// body
//
//	{"topicConfigSerializeWrapper":{"topicConfigTable":{"<topic>":{"topicName","readQueueNums",
//	  "writeQueueNums","perm","topicFilterType","topicSysFlag","order"}},"dataVersion":{"timestamp","counter"}},
//	 "filterServerList":[]}
//
// It replaces all the name server knows about that broker process, unless
// the name server holds that process (same address) at a newer data
// version — counter lower and timestamp not later than the held one: a
// registration delayed in the network — which is ignored (answered code 0
// with the held version; nothing changes). A broker restarted with a fresh
// topic table registers with a later timestamp and is taken. The
// answer (code 0) carries ext masterAddr and haServerAddr (of the master,
// for a slave), ext dataVersion (Petrel) and, when the ORDER_TOPIC_CONFIG
// namespace is not empty, body {"table":{..}}.
//
// Delta registration is a Petrel extension of code 103, so that a broker
// with 100,000 topics does not send a 15 MB frame every 30 s. Extra ext:
//
//	petrelDelta  "true"
//	baseVersion  {"timestamp":T,"counter":C}: the version this name server last acknowledged
//
// and body
//
//	{"dataVersion":{"timestamp":T2,"counter":C2},"topicConfigTable":{<added or changed topics>},"removedTopics":[..]}
//
// The name server applies it only when it holds the broker process, from the
// same address, at exactly baseVersion; then it answers code 0 with ext
// dataVersion = the new version. Otherwise (name server restarted, broker
// expired or dropped, versions diverged) it changes nothing and answers
// code 1 with ext petrelNeedFull "true" and a remark; the broker then sends a
// full registration. A heartbeat is a delta with no changes (about 460 bytes
// on the wire); the Registrar sends a full registration every
// RegistrarOptions.FullEvery heartbeats (default 10) as a safety net.
//
// The Registrar holds each topic with the data version it was read at and
// keeps the newer of two states of a topic, so topic changes handed in by
// concurrent goroutines in any order (Apply, O(1) each) and whole tables
// (Update, Options.Snapshot before each periodic full registration) never
// move a topic back. A change marks its topic pending for every name server;
// one registration carries every change made while the previous one was in
// flight. WaitPublished returns once every name server acknowledged the
// changes made before the call (or failed a registration carrying them).
//
// Either body may be zlib-compressed, marked by ext petrelZlib "true"
// (bodyCrc32 covers the compressed bytes); the Registrar compresses bodies
// over 64 KiB, which keeps a 100,000-topic full registration well under
// the 16 MiB frame limit. A Java broker never sends these ext fields and
// ignores them in answers.
//
// # Concurrency
//
// Table is not safe for concurrent use; Server guards it with one mutex
// that is never held across I/O. Registrar runs one goroutine per name
// server; Close stops them and unregisters.
package namesrv
