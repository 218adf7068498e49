// Package checker decides whether a `petrel verify` history (package
// history) shows the broker keeping its promise: every acknowledged
// message arrives, nothing arrives that was never sent, order and delivery
// times hold where the workload asks for them, and the log has no holes.
//
// Check is pure: it reads the slice it is given and nothing else (no I/O,
// no goroutines, no clock), makes one pass over the lines, then one over
// the distinct message ids and one over the drained offsets (about 0.13 s
// of CPU for 200k lines), and its Result is deterministic: counts
// are exact, and every list is sorted (by line order unless said
// otherwise) and cut to Options.MaxItems entries.
//
// # Terms
//
// Line order is the order of the ops in the slice (the order the history
// Writer appended them; Op.Index is what the Result quotes). A message is
// an id. Its send is every Send line of that id: its attributes (Workload,
// Topic, Key, Seq, DeliverAt, Txn) are those of its first Invoke/Send
// line, and the Sum of any of its Invoke/Send lines is a sum it was sent
// with (a retry under the same id is a new Invoke line).
//
// Deliveries are grouped by the Deliver line's Workload: all consumers of
// a clustering group share it, so "delivered to the group" of a message
// sent by workload W means a Deliver line of that id whose Workload is W.
// In a broadcast workload (Options.Broadcast, by default the one named
// "broadcast") every Process is a member that must itself receive every
// message; its members are the Processes of its Start lines with Role
// consumer plus every Process that wrote a Deliver line for it. A Drain
// line is not a delivery. A Deliver or Drain line with an empty ID is
// corrupt and takes part in nothing else but holes and broadcast
// membership.
//
// # Anomalies
//
// Each is counted in total and per workload: for send-derived anomalies
// the send's Workload, for line-derived ones (unexpected, duplicated,
// corrupt) the Workload of the line, for holes the Workload of the first
// Drain line of the queue.
//
//   - acked: ids with at least one OK/Send line.
//   - in_doubt: ids with Send lines but no OK/Send, and at least one
//     InDoubt/Send or an Invoke/Send the history never answered (more
//     Invoke than Fail+InDoubt lines). in_doubt_stored counts those that
//     were delivered or drained (they were stored after all).
//   - failed: ids with Send lines whose every attempt ended in Fail/Send.
//   - lost: an acked id whose send's Txn is not rollback or
//     check_rollback, with no Deliver line to its group (broadcast: to a
//     member; counted once per id and member) and no Drain line of the id
//     anywhere.
//   - undelivered: as lost, but a Drain line of the id exists: the log has
//     it and a consumer (group or member) never got it.
//   - unexpected: distinct ids on Deliver or Drain lines that have no
//     Invoke/Send line anywhere in the history.
//   - duplicated: (group, id) pairs — (member, id) in broadcast — with
//     more than one Deliver line. Deliveries counts Deliver lines with an
//     id, Delivered the distinct pairs, and DuplicateRatio is
//     (Deliveries - Delivered) / Delivered (0 when nothing was delivered).
//     Allowed under at-least-once: it never makes a history invalid.
//   - reordered: per (Workload, Key) over acked ids with a Key: an id a
//     counts when some other acked b of the same key has its first Invoke/Send
//     line after a's first OK/Send line (b was sent after a was
//     acknowledged), both were delivered, and b's first Deliver line comes
//     before a's first Deliver line. Each such a counts once; it is
//     listed with the b delivered earliest. Only first deliveries matter,
//     so a consumer that rewinds after a crash (5, 6, 7, 5, 6, 7) is not
//     reordered. Line order stands in for time on both sides: the Writer
//     stamps lines in append order, and line order has no ties.
//   - early: ids with a DeliverAt that have a Deliver line whose Time is
//     before DeliverAt (a delivery at exactly DeliverAt is on time).
//     Counted once per id, listed with its earliest Deliver line and by
//     how much it was early.
//   - lateness: over ids with a DeliverAt and a Deliver line, the Time of
//     the first Deliver line minus DeliverAt; the median and p99 are
//     nearest-rank (the value at rank ceil(p·n) of the sorted samples).
//   - rolled_back_delivered: ids whose send's Txn is rollback or
//     check_rollback with any Deliver or Drain line.
//   - corrupt: Deliver and Drain lines that have Corrupt set, an empty ID,
//     or a Sum equal to no Invoke/Send Sum of their id (the sum check
//     applies to ids that have Invoke lines). Counted per line.
//   - holes: per (Topic, Queue) of the Drain lines with a Queue and an
//     Offset (both ≥ 0), the offsets strictly between the least and the
//     greatest drained offset that no Drain line has. Counted per missing
//     offset, listed as inclusive ranges.
//   - diverged: Compare lines (the end-of-run comparison of a broker
//     group's replica logs) with an Error: the group's replicas differ
//     below its commit point. Counted per line, in Total only.
//
// The verdict is Valid when lost, undelivered, unexpected, reordered,
// early, rolled_back_delivered, corrupt, holes and diverged are all zero; otherwise
// Reasons holds one short sentence per anomaly found. acked, in_doubt,
// failed, duplicated and lateness are reported and never decide it.
// Complete says whether the history has a Phase line "done"; it is
// reported and does not decide the verdict either (a history cut short
// is the caller's to refuse).
package checker
