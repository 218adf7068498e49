// Package netx is the network seam: the listeners and dialers of the
// servers and clients are injected as a Network, so that tests can run a
// name server, brokers and clients in one process and cut them apart.
//
// Two implementations sit side by side:
//
//   - TCP, the real network over package net ("tcp"). Nil Network fields
//     in the configurations of remoting, namesrv and daemon mean TCP.
//   - Mem, an in-memory network of named hosts. Mem.Host(name) is the
//     Network of one host: what it dials comes from that host, so the
//     links between hosts can be partitioned, healed, slowed and reset.
//
// # The in-memory network
//
// An address is "host:port". A host listens on its own name only (an
// empty host or an unspecified IP in Listen means the host itself; port 0
// picks a free port).
// A connection is a pair of bounded byte queues, one per direction
// (DefaultBufferBytes each, like a socket's buffers): Write returns once
// its bytes are queued and waits while the queue is full; Read returns
// what is queued. Both honour deadlines (os.ErrDeadlineExceeded, a
// net.Error whose Timeout is true) and Close (net.ErrClosed on the closed
// end; io.EOF on the other once the queued bytes are read). Errors are
// *net.OpError values with Net "mem", so errors.Is works as with TCP:
// syscall.ECONNREFUSED (nothing listens), syscall.ECONNRESET (Reset),
// syscall.EPIPE (writing to a peer that closed), ErrUnreachable.
//
// Faults are per link, a link being the unordered pair of two hosts:
//
//   - Partition blackholes the link in both directions, like a cable pulled
//     out: the bytes written on its connections (and their closes) stay
//     queued and are not delivered, so a peer notices only through its own
//     timeouts, as with TCP; a dial across the link fails at once with
//     ErrUnreachable. Heal delivers what was queued, in order, and lets
//     dials through again.
//   - SetLatency delays every byte written afterwards by the given time.
//   - Reset drops the link's connections: both ends fail with
//     syscall.ECONNRESET from then on.
//
// The twin uses the time package for deadlines and latency, so it also
// runs inside a testing/synctest bubble, where real sockets cannot.
// Everything is safe for concurrent use.
package netx
