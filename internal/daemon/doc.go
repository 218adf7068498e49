// Package daemon assembles Petrel's roles from their parts so that the
// command line stays thin and tests can run a whole broker or name server
// in-process: a NameServer is the route table behind a remoting listener; a
// Broker is the store, the broker core, its remoting front (and, with
// GRPCListen, the RocketMQ 5.x gRPC front) and the registrar that keeps
// every name server informed. With BrokerConfig.Controller (ctlmode.go) the
// controller, not the configuration, owns a broker's role.
package daemon
