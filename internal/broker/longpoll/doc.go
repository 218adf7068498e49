// Package longpoll keeps the requests that found nothing new and wait for
// a message ("long polling", RocketMQ's PullRequestHoldService and
// PopLongPollingService): pulls of one queue, and pops (5.x receives) of
// a consumer group that read every queue of a topic.
//
// The Table is a pure state machine: no goroutines, locks, channels or
// clock. Its caller (package broker) parks a request when a pull or pop
// finds nothing, feeds it events — a queue's max offset grew (Arrived), a
// group acknowledged a message (Acked), a message of a group becomes
// visible sooner (Reschedule), time passed (Expired), a connection closed
// (RemoveConn), the caller gave up (Remove) — and answers the requests
// each call hands back. Every call that returns requests has removed them
// from the table, so a request is handed back at most once per Park.
//
// # Pops
//
// A pop is indexed by (group, topic) for each topic it reads. Arrived
// wakes one pop per group — the oldest that can take a message of the
// queue (a FIFO pop names the queues held by a message in flight in
// Blocked) — not every pop of the topic: the pops of a group share its
// position, so one of them looking is enough. A woken pop that does not
// look (its receive ended) or that took a full batch (more may be there)
// passes the wake on with Next. Acked wakes one FIFO pop of the group,
// preferring one the queue blocks. A pop's Deadline is the earlier of the
// end of its wait and the time the next message of its group becomes
// visible again; Reschedule moves it forward when that time comes sooner,
// and the caller tells a waking pop apart from an ended one by its own
// wait end. Update sets the Deadline and Blocked a pop learns after it
// parked (it parks first and then looks, so no event is missed).
//
// # Invariants
//
//   - A parked pull is in exactly three indexes: its queue's list (park
//     order), the deadline heap and its connection's set. A parked pop is
//     in its (group, topic) list for each topic it reads, the deadline
//     heap and its connection's set; a topic's group set names exactly
//     the groups with a pop parked on it.
//   - Len() ≤ maxTotal and, per connection, parked ≤ maxPerConn: Park
//     refuses beyond either with an error wrapping ErrFull that names the
//     limit.
//   - Arrived (pulls, then pops), Topic and RemoveConn return requests in
//     park order, Expired in deadline order (park order among equal
//     deadlines), so waking is fair: the oldest waiter is answered first.
//
// # Driving it
//
//	t := longpoll.New(100000, 1000)
//	err := t.Park(&longpoll.Request{Topic: "T", QueueID: 0, Offset: 7, Deadline: now.Add(20 * time.Second), Conn: 3})
//	err = t.Park(&longpoll.Request{Group: "G", Topic: "T", Also: "%RETRY%G", Deadline: now.Add(20 * time.Second)})
//	woken := t.Arrived("T", 0, 8)   // the queue's max offset is now 8: re-run those pulls and pops
//	late := t.Expired(now)          // answer "no new message" (or look again: a pop's message is visible)
//	next, ok := t.NextDeadline()    // arm one timer for the earliest deadline
//
// A Table is not safe for concurrent use; the caller serialises calls.
package longpoll
