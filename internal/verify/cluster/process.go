package cluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// errNotRunning is returned for an operation on a process that is not
// running.
var errNotRunning = errors.New("not running")

// Exit is a run of a process that ended: when it is an error (from Start
// or WaitReady), it names the process, its exit status and the end of its
// log.
type Exit struct {
	Name string
	PID  int
	Time time.Time
	// Status is what waiting for the process gave: an *exec.ExitError
	// (exit code or signal), or nil for status 0.
	Status error
	// LogTail is the end of the log this run wrote (up to 4 KiB).
	LogTail string
}

func (e *Exit) Error() string {
	return fmt.Sprintf("cluster: %s (pid %d) exited (%s); log tail:\n%s", e.Name, e.PID, exitString(e.Status), e.LogTail)
}

// PortInUse reports whether the run ended because a port it listens on
// was still taken.
func (e *Exit) PortInUse() bool { return strings.Contains(e.LogTail, "address already in use") }

func exitString(err error) string {
	if err == nil {
		return "status 0"
	}
	return err.Error()
}

// proc is one process of a cluster and the state of its current run.
type proc struct {
	info Process
	args []string

	// op serialises the lifecycle operations (Start, Kill, Stop) on the
	// process; Close does not take it, so it can interrupt them.
	op sync.Mutex

	mu   sync.Mutex
	cmd  *exec.Cmd     // current (or last) run; nil before the first
	done chan struct{} // closed once cmd has exited and status is set
	// status is the run's exit (see Exit.Status).
	status error
	paused bool
	// expect is set when the run's end was asked for (Kill, Stop, Close,
	// an ending Signal); starting while a Start waits for it to get
	// ready. An exit with neither is a crash (Cluster.Exits).
	expect, starting bool
	logFrom          int64 // size of the log when the run started
	starts           int
}

func newCmd(bin string, args, env []string, out *os.File) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	// A file, not a pipe: the child writes to it directly, so there is no
	// copying goroutine and Wait returns as soon as the child is gone.
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = sysProcAttr()
	return cmd
}

// runningLocked reports whether the current run has not exited (p.mu held).
func (p *proc) runningLocked() bool {
	if p.done == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// signal sends s to the current run by its PID; ending marks the exit it
// may cause as asked for. It returns the PID and the run's done channel.
func (p *proc) signal(s os.Signal, ending bool) (int, <-chan struct{}, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return 0, nil, errNotRunning
	}
	if ending {
		p.expect = true
	}
	pr := p.cmd.Process
	if err := pr.Signal(s); err != nil {
		if errors.Is(err, os.ErrProcessDone) {
			return 0, nil, errNotRunning
		}
		return 0, nil, err
	}
	switch s {
	case syscall.SIGSTOP:
		p.paused = true
	case syscall.SIGCONT:
		p.paused = false
	}
	return pr.Pid, p.done, nil
}

// exitStatus is the last run's status (nil while running or after a clean
// exit).
func (p *proc) exitStatus() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runningLocked() {
		return nil
	}
	return p.status
}

// exit describes the last run's end, once it has ended.
func (p *proc) exit() *Exit {
	p.mu.Lock()
	pid, status := 0, p.status
	if p.cmd != nil && p.cmd.Process != nil {
		pid = p.cmd.Process.Pid
	}
	p.mu.Unlock()
	return &Exit{Name: p.info.Name, PID: pid, Time: time.Now(), Status: status, LogTail: p.logTail()}
}

// logTail returns the end of what the current (or last) run wrote to the
// log, up to logTailBytes. When the run died of a Go panic or fatal error
// (or a SIGQUIT dump), whose cause is on the first line of a long dump,
// the excerpt starts at that line instead.
func (p *proc) logTail() string {
	p.mu.Lock()
	from := p.logFrom
	p.mu.Unlock()
	f, err := os.Open(p.info.Log)
	if err != nil {
		return "(log unreadable: " + err.Error() + ")"
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "(log unreadable: " + err.Error() + ")"
	}
	start := max(from, st.Size()-logScanBytes)
	b, err := io.ReadAll(io.NewSectionReader(f, start, st.Size()-start))
	if err != nil {
		return "(log unreadable: " + err.Error() + ")"
	}
	return excerpt(string(b))
}

// logScanBytes is how far back from its end a run's log is searched for a
// crash's first line.
const logScanBytes = 1 << 20

// crashMarks start the first line of a Go runtime's dying words.
var crashMarks = []string{"panic: ", "fatal error: ", "SIGQUIT: "}

// excerpt picks up to logTailBytes of a run's log: from the last crash
// line if there is one, else the end.
func excerpt(s string) string {
	at := -1
	for _, m := range crashMarks {
		if i := strings.LastIndex(s, m); i > at && (i == 0 || s[i-1] == '\n') {
			at = i
		}
	}
	if at >= 0 {
		s = s[at:]
		if len(s) > logTailBytes {
			s = s[:logTailBytes] + "\n..."
		}
		return s
	}
	if len(s) > logTailBytes {
		s = "..." + s[len(s)-logTailBytes:]
	}
	return s
}
