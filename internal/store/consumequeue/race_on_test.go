//go:build race

package consumequeue

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// reads may allocate their scratch buffer.
const raceEnabled = true
