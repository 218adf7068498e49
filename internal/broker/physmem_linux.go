package broker

import "syscall"

// physicalMemory is the machine's total memory in bytes (0 if unknown),
// as RocketMQ takes the JVM's view of the OS's total physical memory.
func physicalMemory() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(uint64(si.Totalram) * uint64(si.Unit))
}
