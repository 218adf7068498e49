// Package longpoll keeps the pull requests that found nothing new and wait
// for a message ("long polling", RocketMQ's PullRequestHoldService).
//
// The Table is a pure state machine: no goroutines, locks, channels or
// clock. Its caller (package broker) parks a request when a pull finds
// nothing, feeds it events — a queue's max offset grew (Arrived), time
// passed (Expired), a connection closed (RemoveConn), the caller gave up
// (Remove) — and answers the requests each call hands back. Every call that
// returns requests has removed them from the table, so a request is handed
// back at most once per Park.
//
// # Invariants
//
//   - A parked request is in exactly three indexes: its queue's list (park
//     order), the deadline heap and its connection's set.
//   - Len() ≤ maxTotal and, per connection, parked ≤ maxPerConn: Park
//     refuses beyond either with an error wrapping ErrFull that names the
//     limit.
//   - Arrived and RemoveConn return requests in park order, Expired in
//     deadline order (park order among equal deadlines), so waking is fair:
//     the oldest waiter is answered first.
//
// # Driving it
//
//	t := longpoll.New(100000, 1000)
//	err := t.Park(&longpoll.Request{Topic: "T", QueueID: 0, Offset: 7, Deadline: now.Add(20 * time.Second), Conn: 3})
//	woken := t.Arrived("T", 0, 8)   // the queue's max offset is now 8: re-run those pulls
//	late := t.Expired(now)          // answer "no new message"
//	next, ok := t.NextDeadline()    // arm one timer for the earliest deadline
//
// A Table is not safe for concurrent use; the caller serialises calls.
package longpoll
