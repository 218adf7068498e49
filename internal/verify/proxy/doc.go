// Package proxy is the in-process TCP fault proxy of `petrel verify`. Every
// link between a client and a process (and between processes) is one
// Link: a listener on 127.0.0.1:0 that forwards each connection it accepts
// to the link's target address. A Net is the set of links of a run, made on
// demand by Dial (or Link) and named "from→to", where from is the name of
// the client or process and to is the real address.
//
// A link is in one Fault at a time:
//
//   - Pass forwards bytes as they come.
//   - Drop closes new connections at once; on open ones the bytes are read
//     and discarded (a FIN still passes).
//   - Blackhole accepts new connections and holds them (the target is not
//     dialled); on open ones bytes, and a FIN, are held, not forwarded.
//   - Delay forwards every chunk Delay ± Jitter (uniform, seeded) after it
//     was read, keeping the order of each direction.
//   - Reset resets open connections (RST: linger 0, on both sides) and new
//     ones at once.
//
// A fault applies at once to the open connections of the link and to the
// connections accepted while it holds. Going back to Pass (Heal) releases
// the held bytes in order; a held new connection then dials its target.
// If the target cannot be dialled, the client's connection is reset, and
// a Net.Dial (which waits for the target's dial) fails with its error.
//
// Memory is bounded: each direction of each connection holds at most the
// window (WithWindow, default 256 KiB) of read-ahead; when that is full it
// stops reading, and TCP's flow control stops the writer. Buffers come from
// size-classed pools, so the pass path does not allocate per chunk.
//
// Driving it:
//
//	n := proxy.NewNet(logger, proxy.WithSeed(seed))
//	defer n.Close()
//	cl := remoting.NewClient(remoting.ClientOptions{Network: n.Client("producer-0")})
//	l, _ := n.Link("broker-a", namesrvAddr) // a process's link: give it l.Addr()
//	n.Set(func(from, to string) bool { return from == "producer-0" }, proxy.Fault{Mode: proxy.Blackhole})
//	n.Heal()
//
// Goroutines: each link runs an accept loop; each connection runs a reader
// and a writer per direction. All are in one group that Net.Close waits
// on. Net, Link and the Network of Client are safe for concurrent use.
package proxy
