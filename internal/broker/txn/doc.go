// Package txn implements RocketMQ 4.x transactional messages for the
// broker: half messages, END_TRANSACTION (commit / rollback) and the
// check-back of undecided transactions.
//
// As everything that changes with traffic, the state lives in the commit
// log: half and op records are ordinary records of two system topics, and
// the Manager's in-memory state is rebuilt from them (and two progress
// offsets) by New.
//
// # Records
//
// Half (HalfTopic, queue 0). A prepared send (IsPrepared), rewritten by
// Manager.Half before the broker stores it:
//
//	topic       RMQ_SYS_TRANS_HALF_TOPIC, queue 0
//	sysFlag     transaction bits cleared (Java stores halves as "not transactional")
//	properties  the producer's (PGROUP, TRAN_MSG=true, UNIQ_KEY, ...) plus
//	            REAL_TOPIC, REAL_QID = the original topic and queue,
//	            __transactionId__ = UNIQ_KEY (kept on the committed message)
//
// Copy (HalfTopic, queue 0). What a check round stores in place of a half
// it has checked (RocketMQ re-stores the half before each check, to count
// checks durably): the same record with
//
//	TRANSACTION_CHECK_TIMES      checks so far (absent = 0)
//	TRAN_PREPARED_QUEUE_OFFSET   queue offset of the transaction's first half: its origin
//	PETREL_TRAN_NEXT_CHECK       ms since the epoch when the next check is due
//
// The first half and all its copies are one transaction, named by the
// origin. At most one of them is live (has no op record) in normal running.
//
// Op (OpTopic, queue 0). "The half at this queue offset is done", exactly
// as RocketMQ 4.x writes it:
//
//	body        the half's queue offset in decimal ASCII ("17"; 5.x bodies
//	            "17,18" are read too)
//	TAGS        "d"
//
// Committed message. END_TRANSACTION commit stores the half as a normal
// message of REAL_TOPIC / REAL_QID: sysFlag transaction type commit (0x8),
// PREPAREDTRANSACTIONOFFSET = the commit-log offset of the half named by
// the request; REAL_TOPIC, REAL_QID, TRAN_MSG, TRANSACTION_CHECK_TIMES,
// TRAN_PREPARED_QUEUE_OFFSET and PETREL_TRAN_NEXT_CHECK removed; body,
// flag, born time and host, reconsume times and every other property
// (PGROUP, UNIQ_KEY, keys, tags) kept; offsets and store time new.
//
// Records that belong together go in one store append, the first one
// first: [committed message, op...] for a commit, [copy, op of the old
// half] for a check. An append is written at once, so a crash leaves all
// of it or a prefix: at worst a copy without the op of the half it
// replaces (the rebuild then has two live halves of one transaction and
// drops the older), or a committed message without its op (only a write
// torn by power loss inside that one append can do this; the transaction
// would then be checked and could be committed a second time).
//
// # States of a transaction
//
//	          Half + store put
//	                |
//	                v
//	+-------->  OPEN (one live half: checks n, next check due)
//	|           |    |           |             |
//	| due, n <  |    | due,      | End commit  | End rollback
//	| MaxChecks |    | n >=      | (any half   | (any half of
//	| (Checker) |    | MaxChecks | of it)      | it)
//	|           |    v           v             v
//	+-- copy ---+  DISCARDED   COMMITTED     ROLLED BACK
//	 n+1 if the    (op, Warn)  (message +op) (op)
//	 producer was
//	 online, else n
//
// A half is first due max(Config.Timeout, CHECK_IMMUNITY_TIME_IN_SECONDS)
// after it was stored, by the broker's clock (Java measures from the
// producer's born time); every copy is due one CheckInterval after the check
// that made it, so checks of a transaction are at least CheckInterval
// apart. A live half still waiting a CheckInterval after it was stored (a
// long immunity) is re-stored unchanged, so that the progress offset moves
// on. The ended states are final: an End naming any half of an ended
// transaction is ignored (unlike Java, which would store the message
// again), and so is an End after a discard.
//
// # In-memory state and progress
//
// The Manager keeps the live halves (about 150 bytes each), grouped by
// origin, and scanned: the half queue offset up to which it has read
// halves. The half progress = the lowest live half (or scanned) and every
// half below it is done; the op progress = the first op record that may
// name a half at or above the half progress. Both are committed as the
// offsets of consumer group CID_RMQ_SYS_TRANS on HalfTopic and OpTopic
// (queue 0), the half one first, after every round and at Close; the
// store's meta makes them durable with its offset flush.
//
// New reads the op records from the op progress (each naming a half at or
// above the half progress marks it done), then the halves from the half
// progress to the end: those not marked done are live. A half left
// undecided before a restart is therefore checked after it, and an ended
// one is never committed again.
//
// # Check rounds
//
// Rounds run on Config.Clock timers: at Start, when the next half falls
// due (a store listener learns of new halves, which are due no sooner than
// Timeout later), and at least every CheckInterval; at most one at a time,
// spaced by at least 500 ms. A round reads new halves, then for each due
// half, oldest first: a half checked MaxChecks times (or without PGROUP or
// a usable REAL_TOPIC / REAL_QID) is discarded; otherwise the Checker is
// called outside any lock, then the copy and the op record are stored.
//
// # Concurrency
//
// All methods are safe for concurrent use. A mutex guards the maps and is
// never held across I/O. Writes of one transaction are serialised by a busy
// mark on it (End waits for a round storing a copy, and the reverse);
// writes of different transactions run in parallel, so commits share the
// commit log's group commit. Close waits for the round and the End calls
// in progress.
//
// # What the broker does
//
//   - Send: if the send is a transaction's half (SendRequest.Transactional:
//     the 4.x front decodes it with rmq.Prepared), call Half on the message
//     before validating and storing it; answer as for any send (msgId =
//     the half's offset id, queueOffset = its offset in HalfTopic). Refuse
//     prepared batch sends, and client sends to IsSystemTopic topics.
//   - END_TRANSACTION: decode the header into an EndRequest and call End
//     (log an error; the request is oneway).
//   - Checker: pick one live connection of the producer group, build the
//     request with CheckRequest, send CHECK_TRANSACTION_STATE (oneway),
//     return false if the group has no connection.
//   - Never create topic configs for the system topics, so they stay out
//     of routes, pulls and topic lists; New after the store opens, Start
//     when the broker serves, Close before the store closes.
package txn
