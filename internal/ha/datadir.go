package ha

// SlaveJoinedFile is the file, relative to a master's data directory, that
// records that a slave has joined the master's group (the daemon writes
// it; from then on a master with the default --sync-replicas waits for its
// slaves, also after a restart with none connected). petrel verify waits
// for it before it counts a group as replicated.
const SlaveJoinedFile = "ha/slave-joined"
