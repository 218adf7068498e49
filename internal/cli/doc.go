// Package cli implements Petrel's operator commands (cluster, topic,
// group, send, consume, message, dlq, user, acl): each asks the name servers for
// brokers and routes and talks to the brokers over the RocketMQ 4.x
// remoting protocol, with RocketMQ's admin request codes where they exist,
// so the commands also work against RocketMQ brokers for what those serve.
// cmd/petrel wires the methods of CLI to cobra commands and adds nothing.
//
// Every command writes to Config.Out, as an aligned table (the default) or
// as JSON (Config.Output "json"): one indented document for the
// one-shot commands, one object per line for the streaming ones (send,
// consume). The JSON field names are those of the exported result types
// (BrokerStatus, TopicInfo, TopicDescription, GroupDescription, ...) and
// are documented for users in docs/cli.md; change them together.
//
// Errors wrap ErrUsage, ErrUnreachable, ErrNotFound or ErrRefused and say
// what failed and what to do; an unreachable name server names the address
// and suggests `petrel server`.
//
// With Config.AccessKey and SecretKey every request is signed as the
// official clients sign (authwire.Signer), for servers run with --auth; a
// NO_PERMISSION answer adds what to do (pass credentials, or check the
// user's secret and ACL). With Config.TLS every connection is TLS; a
// handshake that fails, or a connection a TLS-enforcing server closes,
// says which of --tls, --tls-ca, --tls-insecure to change (security.go).
// The user and ACL commands (user.go, acl.go) send RocketMQ 5.3's
// management requests 3001-3010 to every live master, or to one broker.
//
// Maps keyed by message queue (topic stats 202, consume stats 208, reset
// offset 222) come in fastjson's form, {{"brokerName":..}:value,...},
// which is not JSON; rmq's decoders read it and the array form
// [[{queue},value],...].
package cli
