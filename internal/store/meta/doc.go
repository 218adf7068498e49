// Package meta is the broker's metadata store: topic configs, subscription
// group configs, consumer offsets, and the users and ACLs of the access
// control, kept in memory and persisted as JSON files in one directory,
// plus a change log for each table but the offsets. (users.json and
// acls.json are described in auth.go; they hold secrets and are mode 0600.)
//
// # Files
//
// Each kind of state lives in its own file, so a topic change never rewrites
// the offsets and an offset flush never rewrites the topics:
//
//	topics.json   {"dataVersion":{"timestamp":<ms>,"counter":<n>},
//	               "topicConfigTable":{"<topic>":{"topicName":"<topic>","readQueueNums":4,...},...}}
//	groups.json   {"dataVersion":{...},
//	               "subscriptionGroupTable":{"<group>":{"groupName":"<group>","consumeEnable":true,...},...}}
//	offsets.json  {"offsetTable":{"<group>":{"<topic>":{"<queueId>":<next offset>,...},...},...}}
//
// The field names follow RocketMQ's topics.json and subscriptionGroup.json.
// Offsets are nested group → topic → queue id instead of RocketMQ's
// "topic@group" keys, so names need no reserved separator. encoding/json
// writes map keys sorted, so a given state always produces the same bytes.
//
// # Change log and compaction
//
// Rewriting topics.json for every change would make a topic creation cost
// O(topics) (10,000 creates took 88 s). Instead a topic or group change is
// appended to the table's change log, topics.json.log or groups.json.log,
// as one record:
//
//	uint32 length | uint32 CRC-32C of length and payload | payload
//
// (little-endian), whose JSON payload is the table's version after the
// change and the configs stored or the name removed:
//
//	{"dataVersion":{...},"put":[{"topicName":...},...]}   {"dataVersion":{...},"delete":"<name>"}
//
// Open loads the table file, then replays the log's records in order,
// skipping those whose version counter is not above the file's (they are
// already in it); a record must follow its predecessor's counter by one.
// A whole record with a good checksum that does not decode, or a gap in
// the counters, makes Open fail with ErrCorrupt naming the log. Bytes after
// the last whole record are an append a crash cut short, never acknowledged:
// they are ignored.
//
// When an append would make the log larger than both the table file and
// Options.LogCompactBytes (1 MiB), the write compacts instead: it rewrites
// the table file with the whole table (as below), then empties the log
// (truncate and sync). A change costs O(1) amortised: a rewrite of n
// entries comes after about n appends. Close compacts too, so a cleanly
// closed directory holds the whole table in the RocketMQ-style file and an
// empty log.
//
// # Crash safety
//
// A table file is never modified in place. A write creates <name>.tmp,
// writes the whole new content, Syncs it, Renames it over <name> and Syncs
// the directory. A crash at any point therefore leaves either the old or the
// new <name>; a stray <name>.tmp is never read and is removed by Open. If
// <name> does not parse (a corrupt file, which the protocol above should
// make impossible), Open fails with an error wrapping ErrCorrupt that names
// the file, instead of starting empty and losing the broker's configuration.
// A missing file means an empty table.
//
// A log record is acknowledged once the log is synced, and the log's
// directory entry is synced before the first record goes in. The log is
// emptied only after the rewritten table file is durable; a crash before
// the truncation is durable leaves records the file already holds, which
// the counters skip. After a failed append (its bytes may or may not be on
// disk) or when Open found a torn tail, nothing more is appended to that
// log: the next write compacts.
//
// # Durability and group commit
//
// PutTopic, DeleteTopic, PutGroup, ... apply the change in memory and return
// once a file holding it is durable (the log, or the rewritten table file).
// Offsets change with every consumer ack: CommitOffset only updates memory;
// FlushOffsets (called every Options.OffsetFlushInterval by a background
// timer, and by Close) and SyncOffsets make them durable.
//
// Every change takes a sequence number. Each kind has one writer at a time;
// a caller that needs its change durable waits for a write that covers its
// sequence number, and if none is running it becomes the writer and writes
// everything changed so far (the pending records in one append, or the whole
// table). So all the changes made while one write was in progress share the
// next write (group commit), and N concurrent PutTopic calls cost about two
// appends and syncs, not N.
//
// Snapshots are taken under the table's mutex and written outside it:
// CommitOffset and the readers never wait for file I/O.
//
// If a write fails, the callers whose changes it covered get the error; their
// changes stay in memory (the store stays usable) and are made durable by the
// next successful write of that kind, which any later change, flush or Close
// attempts.
//
// A directory must be used by one Store at a time.
package meta
