package broker

import (
	"os"
	"syscall"
)

// physicalMemory is the memory this process may use, in bytes (0 if
// unknown): the machine's total, or the memory limit of its cgroup when
// lower (in a container), as RocketMQ takes the JVM's container-aware
// view of the total physical memory.
func physicalMemory() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return memoryLimit(int64(uint64(si.Totalram)*uint64(si.Unit)), os.ReadFile)
}
