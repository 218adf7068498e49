// Package meta is the broker's metadata store: topic configs, subscription
// group configs and consumer offsets, kept in memory and persisted as three
// JSON files in one directory.
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
// # Crash safety
//
// A file is never modified in place. A write creates <name>.tmp, writes the
// whole new content, Syncs it, Renames it over <name> and Syncs the
// directory. A crash at any point therefore leaves either the old or the new
// <name>; a stray <name>.tmp is never read and is removed by Open. If <name>
// does not parse (a corrupt file, which the protocol above should make
// impossible), Open fails with an error wrapping ErrCorrupt that names the
// file, instead of starting empty and losing the broker's configuration.
// A missing file means an empty table.
//
// # Durability and group commit
//
// Topic and group changes are rare: PutTopic, DeleteTopic, PutGroup, ... apply
// the change in memory and return once a file holding it is durable.
// Offsets change with every consumer ack: CommitOffset only updates memory;
// FlushOffsets (called every Options.OffsetFlushInterval by a background
// timer, and by Close) and SyncOffsets make them durable.
//
// Every change takes a sequence number. Each kind has one writer at a time;
// a caller that needs its change durable waits for a write whose snapshot
// covers its sequence number, and if none is running it becomes the writer
// and snapshots everything changed so far. So all the changes made while one
// write was in progress share the next write (group commit), and N
// concurrent PutTopic calls cost about two file writes, not N.
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
