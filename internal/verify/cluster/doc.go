// Package cluster starts and stops the Petrel processes of a `petrel
// verify` run on this machine: each on its own free 127.0.0.1 ports and its
// own data directory, with its output in a log file, and every one of them
// torn down by PID at the end.
//
// A Topology says which processes a run has. "single" is one `petrel
// server` (a name server and a broker in one process).
// "groups=G,replicas=R,namesrv=K" is K `petrel namesrv` processes
// (namesrv-0, ...) and G broker groups (broker-a, broker-b, ...) of R
// `petrel broker` processes each: broker-a-0 the master (--broker-id 0,
// serving replication on its own --ha-listen port), broker-a-1.. its
// slaves. Every broker registers with every name server (directly); a
// slave's --ha-master is the address Options.HALink gives (verify: a
// fault-proxy link to the master's replication listener, so that one
// slave's replication can be cut). Start returns once every process is
// ready (a broker's /readyz, a name server's port) and every slave is in
// sync with its master.
//
// Options.Security starts every process with --auth and an init user
// (in a 0600 file, not on the command line) and/or --tls-mode enforcing
// with a certificate GenerateCerts made; the cluster's own probes and
// controller queries then sign as that user and verify the CA.
//
// Driving it:
//
//	c, err := cluster.Start(ctx, topo, cluster.Options{Bin: bin, Dir: dir})
//	defer c.Close()
//	c.Kill("broker-a-0")            // SIGKILL, waits for the exit
//	c.Start(ctx, "broker-a-0")      // same ports, same data dir; waits for /readyz
//	c.Pause("broker-a-0")           // SIGSTOP ... c.Resume: SIGCONT
//
// Invariants: a process keeps its ports and data directory for the whole
// run, across restarts; every child runs in its own process group (a
// Ctrl-C at the terminal reaches the verify process only, which then tears
// the children down) and is reaped by a goroutine of this package, so none
// is left a zombie; on Linux a child is also killed when the verify process
// dies. An exit nobody asked for (a crash) is logged, kept for Exits, and
// makes a pending Start or WaitReady fail with the process's name, exit
// status and the tail of its log.
//
// A Cluster is safe for concurrent use. Operations on one process are
// serialised; Close interrupts them.
package cluster
