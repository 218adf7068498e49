// Package broker implements the RocketMQ broker's use cases over a store:
// send (single and batch, with topic auto-creation), pull with long
// polling, consumer offsets, offset lookups, query by key and by offset,
// client heartbeats with consumer-group membership and change
// notifications, orderly queue locks, and topic administration; and pop
// consumption for RocketMQ 5.x simple consumers (Pop, AckPop,
// ChangeInvisible, ForwardPopToDLQ in pop.go, durable state in package
// pop under <store dir>/pop).
//
// # Protocol-free
//
// The broker never sees a frame, a JSON header or a socket. Fronts
// (internal/remoting for RocketMQ 4.x) decode requests into the typed
// values here (SendRequest, PullRequest, Heartbeat, QueueRef), call the
// broker, and encode the typed results. Errors are *Error values with a
// Kind the front maps to a response code and a Msg for the remark; the
// Kind constants document the RocketMQ code of each. Connections are
// uint64 ids the broker hands out (RegisterConn, one sequence for every
// protocol) with a ConnHandler per connection: the front passes the id
// with pulls and heartbeats, calls TouchConn on traffic that proves a
// session alive and ConnClosed when one closes; the broker routes
// transaction check-backs and NOTIFY_CONSUMER_IDS_CHANGED to the handler
// of the connection they are for, and tells it when it expires an idle
// registration (conn.go).
//
// # What the front must do
//
//   - Call Pull on its own goroutine per request: a pull with the suspend
//     bit may block up to SuspendTimeout (or until ctx ends); so may a Pop
//     with a Wait. Release every
//     PullResult after writing its Body, which holds the stored records
//     back to back, ready for the socket.
//   - Fill SendRequest.BornHost from the connection's remote address.
//   - Register every connection (RegisterConn) before passing its id,
//     call ConnClosed for every closed connection, and Close before
//     closing the store.
//   - Map SendFlushDiskTimeout to code 10 and the pull statuses to 0, 19,
//     20 and 21; QueryConsumerOffset's false to 22.
//
// # Concurrency
//
// Every method is safe for concurrent use. State lives in small tables,
// each behind its own mutex (topics/groups in the store's meta, clients,
// queue locks, parked pulls); no mutex is held across I/O or while hooks
// run. The broker starts no goroutine of its own: the long-poll timeout and
// the client/lock expiry sweep are clock timers (Config.Clock; tests use
// a manual clock), and wake-ups come from a store listener that only
// signals the parked pull's goroutine. Parked pulls live in the pure
// longpoll.Table (package longpoll), bounded in total and per connection.
//
// # Time
//
// All time comes from Config.Clock. Client expiry is swept every
// min(10 s, ClientExpiry/4); so a client is dropped between ClientExpiry
// and ClientExpiry plus one sweep interval after its last heartbeat. The
// same sweep expires registrations with a ConnInfo.IdleTimeout, and runs
// at least every min(10 s, max(IdleTimeout/4, 250 ms)) while there are
// any.
package broker
