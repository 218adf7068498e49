package store

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// killChildEnv, when set to a directory, turns the test binary into the
// child of TestKill9KeepsAcknowledgedMessages: it appends to the store in
// that directory under sync flush and prints a line for every acknowledged
// message until it is killed.
const killChildEnv = "PETREL_KILL9_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		os.Exit(killChild(dir))
	}
	os.Exit(m.Run())
}

// killConfig makes small files so the child rolls segments, queue and index
// files often and checkpoints every few milliseconds.
func killConfig(dir string) Config {
	cfg := DefaultConfig(dir)
	cfg.SegmentBytes = 256 << 10
	cfg.MaxMessageBytes = 64 << 10
	cfg.ConsumeQueueEntriesPerFile = 100
	cfg.IndexSlotsPerFile = 64
	cfg.IndexEntriesPerFile = 256
	cfg.CheckpointInterval = 5 * time.Millisecond
	return cfg
}

func killChild(dir string) int {
	s, err := Open(killConfig(dir))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		return 2
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	fmt.Fprintln(out, "ready")
	out.Flush()
	var wg sync.WaitGroup
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				body := fmt.Sprintf("p%d-%d-%d", p, os.Getpid(), i)
				m := newMsg("K", int32(p), body, body)
				if err := s.Put(m); err != nil {
					fmt.Fprintln(os.Stderr, "child put:", err)
					os.Exit(3)
				}
				mu.Lock()
				fmt.Fprintf(out, "ack %d %d %d %s\n", m.QueueID, m.QueueOffset, m.PhysicalOffset, body)
				out.Flush()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return 0
}

// TestKill9KeepsAcknowledgedMessages runs a child process that appends under
// sync flush and reports each acknowledged message, kills it with SIGKILL at
// a random moment, reopens the store and finds every reported message; ten
// times over the same data directory.
func TestKill9KeepsAcknowledgedMessages(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(int64(os.Getpid())))
	type ack struct {
		qid       int32
		qoff, off int64
		body      string
	}
	var all []ack
	for round := range 10 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), killChildEnv+"="+dir)
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		if !sc.Scan() || sc.Text() != "ready" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: child did not start: %q", round, sc.Text())
		}
		killAfter := 1 + rng.Intn(400)
		n := 0
		for sc.Scan() {
			var a ack
			if _, err := fmt.Sscanf(sc.Text(), "ack %d %d %d %s", &a.qid, &a.qoff, &a.off, &a.body); err != nil {
				t.Fatalf("round %d: bad line %q: %v", round, sc.Text(), err)
			}
			all = append(all, a)
			n++
			if n == killAfter {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			}
		}
		cmd.Wait()
		if n < killAfter {
			t.Fatalf("round %d: child exited after %d acks, before the kill", round, n)
		}
		// Reopen in this process and check every message acknowledged so far.
		s := mustOpen(t, killConfig(dir))
		waitDispatched(t, s)
		for _, a := range all {
			m, st := getOne(t, s, "K", a.qid, a.qoff)
			if m == nil || string(m.Body) != a.body || m.PhysicalOffset != a.off {
				s.Close()
				t.Fatalf("round %d: acknowledged K/%d@%d (%s) lost or wrong after SIGKILL: %v %v", round, a.qid, a.qoff, a.body, m, st)
			}
		}
		last := all[len(all)-1]
		if got, err := s.QueryByKey("K", last.body, 0, 1<<62, 1); err != nil || len(got) != 1 {
			t.Fatalf("round %d: key of the last acknowledged message not found: %v", round, err)
		}
		if r, err := s.ReadMessage(last.off); err != nil || string(r.Body()) != last.body {
			t.Fatalf("round %d: message id lookup: %v", round, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: killed after %d acks; %d acknowledged messages all present", round, n, len(all))
	}
}
