// Package interop holds the end-to-end interoperability tests of Petrel
// against the official Apache RocketMQ Go clients
// (github.com/apache/rocketmq-client-go/v2, and the 5.x gRPC client
// github.com/apache/rocketmq-clients/golang/v5 in grpc_*_test.go).
//
// The package has no code outside its tests. It is its own Go module so that
// the client and its dependencies stay out of Petrel's main go.mod.
//
// Each test builds nothing itself: TestMain builds ./cmd/petrel once per run
// (or uses the binary named by PETREL_BIN), and every test starts its own
// `petrel server` process on free loopback ports with its own data directory:
//
//	petrel server --data-dir DIR --namesrv-listen 127.0.0.1:N --broker-listen 127.0.0.1:B --grpc-listen 127.0.0.1:G --flush sync
//
// The tests then talk to it only over the network: with the official client,
// and, for the requests that client cannot send (QUERY_MESSAGE, code 12) or to
// look at the server's state (routes, committed offsets), with a small
// hand-written remoting client (remoting_test.go) that speaks the RocketMQ 4.x
// frame format: 4-byte frame length, 4-byte header length, JSON header, body.
//
// Waits are condition waits with deadlines (see waitFor and the collector),
// never sleeps used as synchronisation.
package interop
