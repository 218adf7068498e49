//go:build !linux

package broker

// physicalMemory is 0 (unknown) where the system is not asked: no pull
// counts as slow unless Config.PhysicalMemory is set.
func physicalMemory() int64 { return 0 }
