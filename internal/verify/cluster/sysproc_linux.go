package cluster

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr puts a child in its own process group, so that a signal from
// the terminal (Ctrl-C) reaches only the verify process, which tears the
// children down itself; and has the kernel SIGKILL the child if the verify
// process dies first, so that no petrel outlives a crashed run.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// awaitStopped blocks until the child pid has stopped (every one of its
// threads: a SIGSTOP takes effect thread by thread, after kill returns) or
// exited. WNOWAIT leaves the state to be waited for again, so the reaper
// still collects the exit.
func awaitStopped(pid int) error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err
	}
}
