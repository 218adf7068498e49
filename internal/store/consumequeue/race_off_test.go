//go:build !race

package consumequeue

const raceEnabled = false
