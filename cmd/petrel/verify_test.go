package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/verify/cluster"
)

// The verify tests run `petrel verify` as users do: a process that starts
// its own servers from the same binary. They need a built binary, and the
// one built with -tags verifyfault, so that a test can make the broker lie
// (PETREL_TEST_FAULTS) and see verify catch it; without that environment
// variable the tagged binary behaves as the normal one.
var (
	faultBinOnce sync.Once
	faultBin     string
	faultBinErr  error
	faultBinDir  string
)

// TestMain removes the binary the verify tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if faultBinDir != "" {
		os.RemoveAll(faultBinDir)
	}
	os.Exit(code)
}

func faultBinary(t *testing.T) string {
	t.Helper()
	faultBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "petrel-verify-bin-")
		if err != nil {
			faultBinErr = err
			return
		}
		faultBinDir = dir
		faultBin = filepath.Join(dir, "petrel")
		out, err := exec.Command("go", "build", "-tags", "verifyfault", "-o", faultBin, ".").CombinedOutput()
		if err != nil {
			faultBinErr = errors.New(string(out))
		}
	})
	if faultBinErr != nil {
		t.Fatalf("build petrel with -tags verifyfault: %v", faultBinErr)
	}
	return faultBin
}

type verifyJSON struct {
	Verdict string `json:"verdict"`
	Acked   int    `json:"acked"`
	Lost    int    `json:"lost"`
	IDs     struct {
		Lost []string `json:"lost"`
	} `json:"ids"`
	Reordered  int `json:"reordered"`
	Duplicated int `json:"duplicated"`
	Early      int `json:"early"`
	InDoubt    int `json:"in_doubt"`
	Faults     []struct {
		Kind string `json:"kind"`
	} `json:"faults"`
	History  string `json:"history"`
	Auth     bool   `json:"auth"`
	TLS      bool   `json:"tls"`
	Security string `json:"security"`
}

// runVerifyProcess runs the binary's verify with args, in its own
// directory, and returns the exit code, the parsed JSON and the directory.
func runVerifyProcess(t *testing.T, env []string, args ...string) (int, verifyJSON, string) {
	t.Helper()
	bin := faultBinary(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"verify", "--dir", dir, "-o", "json"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run verify: %v", err)
	}
	var res verifyJSON
	if code != exitNoRun {
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
			t.Fatalf("verify -o json printed no JSON (%v):\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
	}
	if t.Failed() || code == exitNoRun {
		t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	return code, res, dir
}

// TestVerifyPassesUnderFaults is the 30-second version of the acceptance
// run: a single server with sync flush, killed, paused and partitioned
// every 2 s, under four workloads. Nothing acknowledged may be lost.
func TestVerifyPassesUnderFaults(t *testing.T) {
	code, res, _ := runVerifyProcess(t, nil, "--duration", "30s", "--seed", "15",
		"--fault-interval", "2s", "--faults", "kill,pause,partition", "--workload", "queue,ordered,delay,txn")
	if code != exitValid || res.Verdict != "valid" {
		t.Fatalf("exit %d, verdict %q, %d lost, %d reordered, %d early; want exit 0 and valid", code, res.Verdict, res.Lost, res.Reordered, res.Early)
	}
	if res.Acked == 0 || res.Lost != 0 {
		t.Fatalf("acked %d, lost %d; want messages acked and none lost", res.Acked, res.Lost)
	}
	kinds := map[string]int{}
	for _, f := range res.Faults {
		kinds[f.Kind]++
	}
	for _, k := range []string{"kill", "pause", "partition"} {
		if kinds[k] == 0 {
			t.Errorf("no %s fault was injected (faults: %v)", k, kinds)
		}
	}
}

// TestVerifyCatchesLostAcks: a broker that acknowledges 1 in 1,000 sends
// without storing them must fail verify (exit 1), and the ids verify calls
// lost must be exactly the ones the broker dropped (it logs each).
func TestVerifyCatchesLostAcks(t *testing.T) {
	code, res, dir := runVerifyProcess(t, []string{"PETREL_TEST_FAULTS=lose-ack=1000"},
		"--duration", "6s", "--seed", "3", "--faults", "none", "--workload", "queue", "--rate", "0", "--producers", "8")
	if code != exitInvalid || res.Verdict != "invalid" {
		t.Fatalf("exit %d, verdict %q; want exit 1 and invalid", code, res.Verdict)
	}
	if res.Lost == 0 {
		t.Fatal("no message reported lost")
	}
	dropped := droppedIDs(t, dir)
	got := append([]string(nil), res.IDs.Lost...)
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(dropped, " ") {
		t.Fatalf("verify lists %d lost ids %v;\nthe broker dropped %d: %v", len(got), got, len(dropped), dropped)
	}
}

// droppedIDs reads the message keys the test fault logged as dropped from
// the server logs of a run.
func droppedIDs(t *testing.T, dir string) []string {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	var ids []string
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, "test fault lose-ack: acknowledged a send without storing it") {
				continue
			}
			for _, f := range strings.Fields(line) {
				if k, ok := strings.CutPrefix(f, "keys="); ok {
					ids = append(ids, strings.Trim(k, `"`))
				}
			}
		}
	}
	sort.Strings(ids)
	return ids
}

// TestVerifyCatchesReorders: a broker that reverses pull answers must
// fail the ordered workload.
func TestVerifyCatchesReorders(t *testing.T) {
	code, res, _ := runVerifyProcess(t, []string{"PETREL_TEST_FAULTS=reorder"},
		"--duration", "5s", "--seed", "4", "--faults", "none", "--workload", "ordered", "--rate", "100")
	if code != exitInvalid || res.Reordered == 0 {
		t.Fatalf("exit %d, %d reordered; want exit 1 and reorders reported", code, res.Reordered)
	}
}

// TestVerifyCheckRereadsHistory: `verify check` on the history of a run
// gives the same verdict, and a missing file exits 2.
func TestVerifyCheckRereadsHistory(t *testing.T) {
	code, res, dir := runVerifyProcess(t, nil, "--duration", "3s", "--seed", "5", "--faults", "none", "--workload", "queue")
	if code != exitValid {
		t.Fatalf("exit %d; want 0", code)
	}
	bin := faultBinary(t)
	out, err := exec.Command(bin, "verify", "check", filepath.Join(dir, "history.jsonl"), "-o", "json").Output()
	if err != nil {
		t.Fatalf("verify check: %v", err)
	}
	var again verifyJSON
	if err := json.Unmarshal(out, &again); err != nil {
		t.Fatal(err)
	}
	if again.Verdict != res.Verdict || again.Acked != res.Acked {
		t.Fatalf("check says %s/%d acked, the run said %s/%d", again.Verdict, again.Acked, res.Verdict, res.Acked)
	}
	err = exec.Command(bin, "verify", "check", filepath.Join(dir, "nope.jsonl")).Run()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != exitNoRun {
		t.Fatalf("check of a missing file: %v, want exit 2", err)
	}
}

// TestVerifySlowDiskAndRestart: the two faults the main run does not use.
// slow-disk needs the tagged binary; verify switches the servers' hook on
// and off by signal, and the server's log says it was switched.
func TestVerifySlowDiskAndRestart(t *testing.T) {
	code, res, dir := runVerifyProcess(t, nil, "--duration", "8s", "--seed", "6", "--fault-interval", "2s",
		"--faults", "slow-disk,restart", "--workload", "queue")
	if code != exitValid || res.Lost != 0 {
		t.Fatalf("exit %d, %d lost; want exit 0 and none lost", code, res.Lost)
	}
	kinds := map[string]int{}
	for _, f := range res.Faults {
		kinds[f.Kind]++
	}
	if kinds["slow-disk"] == 0 || kinds["restart"] == 0 {
		t.Fatalf("faults %v; want slow-disk and restart", kinds)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	var on bool
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		on = on || strings.Contains(string(b), `msg="test fault slow-disk switched" on=true`)
	}
	if !on {
		t.Fatal("no server log says the slow disk was switched on")
	}
}

// TestVerifyAnExistingCluster: with --namesrv verify starts nothing and
// cuts its own clients off (partitions through its proxies); it refuses
// faults it cannot inject there.
func TestVerifyAnExistingCluster(t *testing.T) {
	bin := faultBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := cluster.Start(ctx, cluster.Single(), cluster.Options{Bin: bin, Dir: t.TempDir(), Flush: "sync"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	p := cl.Processes()[0]
	code, res, _ := runVerifyProcess(t, nil, "--namesrv", p.Namesrv, "--grpc", p.GRPC, "--duration", "6s",
		"--seed", "8", "--fault-interval", "2s", "--workload", "queue,grpc")
	if code != exitValid || res.Acked == 0 || res.Lost != 0 {
		t.Fatalf("exit %d, %d acked, %d lost; want exit 0, messages acked, none lost", code, res.Acked, res.Lost)
	}
	for _, f := range res.Faults {
		if f.Kind != "partition" {
			t.Fatalf("fault %q injected into a cluster verify did not start", f.Kind)
		}
	}
	if len(res.Faults) == 0 {
		t.Fatal("no partition injected (the default fault with --namesrv)")
	}
	if code, _, _ := runVerifyProcess(t, nil, "--namesrv", p.Namesrv, "--faults", "kill", "--duration", "1s"); code != exitNoRun {
		t.Fatalf("--faults kill with --namesrv: exit %d, want %d", code, exitNoRun)
	}
}

// TestVerifyReplicatedGroupsUnderReplicationFaults is the 20-second
// version of issue 16's acceptance run: two groups of a master and a
// slave (sync replication, one name server), the masters and slaves
// killed and the slaves' replication links cut. Nothing acknowledged may
// be lost, and each kind of fault must have been injected.
func TestVerifyReplicatedGroupsUnderReplicationFaults(t *testing.T) {
	code, res, dir := runVerifyProcess(t, nil, "--topology", "groups=2,replicas=2", "--seed", "16",
		"--faults", "kill-master,kill-slave,partition-slave", "--duration", "20s", "--workload", "queue")
	if code != exitValid || res.Verdict != "valid" {
		t.Fatalf("exit %d, verdict %q, %d lost; want exit 0 and valid", code, res.Verdict, res.Lost)
	}
	if res.Acked == 0 || res.Lost != 0 {
		t.Fatalf("acked %d, lost %d; want messages acked and none lost", res.Acked, res.Lost)
	}
	kinds := map[string]int{}
	for _, f := range res.Faults {
		kinds[f.Kind]++
	}
	for _, k := range []string{"kill-master", "kill-slave", "partition-slave"} {
		if kinds[k] == 0 {
			t.Errorf("no %s fault was injected (faults: %v)", k, kinds)
		}
	}
	// The run had the processes of groups=2,replicas=2, and both masters
	// took a slave under sync replication.
	for _, name := range []string{"namesrv-0", "broker-a-0", "broker-a-1", "broker-b-0", "broker-b-1"} {
		if _, err := os.Stat(filepath.Join(dir, name+".log")); err != nil {
			t.Errorf("no log of %s: %v", name, err)
		}
	}
	for _, m := range []string{"broker-a-0", "broker-b-0"} {
		b, err := os.ReadFile(filepath.Join(dir, m+".log"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "a slave joined: sync sends now wait for the slaves") {
			t.Errorf("%s never required its slave; log:\n%s", m, b)
		}
	}
}

// TestVerifyRefusesSlaveFaultsWithoutSlaves: kill-slave on a topology
// without slaves cannot run (exit 2), rather than planning nothing.
func TestVerifyRefusesSlaveFaultsWithoutSlaves(t *testing.T) {
	if code, _, _ := runVerifyProcess(t, nil, "--faults", "kill-slave", "--duration", "1s"); code != exitNoRun {
		t.Fatalf("--faults kill-slave on single: exit %d, want %d", code, exitNoRun)
	}
}
