// Package nemesis decides and applies the faults of a `petrel verify` run.
//
// Plan is pure: from a seed, the fault kinds, an interval and the run's
// duration it lays out one fault every interval, the kinds taken in
// seeded shuffled rounds (so each kind comes equally often), each aimed at
// a target drawn by the seed among the processes its kind hits (Kind.Aim:
// any process, a broker, a group's master, a slave; PlanTargets takes the
// list per kind), and held for a seeded time. The same
// arguments always give the same plan, so a failing run can be replayed
// with its --seed.
//
// Run applies a plan through a Target (the lead's glue over the cluster
// and the fault proxy) on an injected clock, and writes each fault's start
// and end to the history: a Fault line before Inject, a Heal line after
// Heal. A fault is always healed, even when its inject failed (a kill of
// a process that already died still needs the restart) and when the run's
// context ends while the fault is on.
package nemesis
