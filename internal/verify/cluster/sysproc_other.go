//go:build !linux

package cluster

import "syscall"

// sysProcAttr puts a child in its own process group, so that a signal from
// the terminal (Ctrl-C) reaches only the verify process, which tears the
// children down itself.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// awaitStopped would wait for a SIGSTOP to take effect; off Linux, Pause
// returns once the signal is sent.
func awaitStopped(pid int) error { return nil }
