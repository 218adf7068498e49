// Package daemon assembles Petrel's roles from their parts so that the
// command line stays thin and tests can run a whole broker or name server
// in-process: a NameServer is the route table behind a remoting listener; a
// Broker is the store, the broker core, its remoting front (and, with
// GRPCListen, the RocketMQ 5.x gRPC front) and the registrar that keeps
// every name server informed. With BrokerConfig.Controller (ctlmode.go) the
// controller, not the configuration, owns a broker's role.
//
// Security (security.go) is what issue 18 adds to every port: with an
// Auth, the broker's, name server's and controller's remoting servers get
// authwire's guard and the HTTP listener HTTP Basic, over one directory
// per process (the init user until a broker's store is attached, then the
// broker's users); the init user's credentials sign the process's own
// requests; a tlsx.Server wraps the listeners in the TLS mode and, when
// enforcing, the dials of the links between Petrel processes. The gRPC
// listener is always TLS (or plaintext when asked): it serves that
// tlsx.Server's certificate, reloaded with it, unless given its own.
package daemon
