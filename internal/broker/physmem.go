package broker

import (
	"strconv"
	"strings"
)

// cgroupMemoryFiles hold a cgroup's memory limit: v2, then v1.
var cgroupMemoryFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// memoryLimit is total, or the first cgroup memory limit read finds when
// it is lower ("max", a missing file or a value that does not parse is no
// limit).
func memoryLimit(total int64, read func(string) ([]byte, error)) int64 {
	for _, f := range cgroupMemoryFiles {
		b, err := read(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 {
			continue
		}
		if total <= 0 || n < total {
			return n
		}
		return total
	}
	return total
}
