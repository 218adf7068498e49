package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/loadgen"
)

// execRoot runs `petrel args...` and returns what it printed and its error.
func execRoot(args ...string) (string, error) {
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

func TestUnknownSubcommandFailsWithASuggestion(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "lsit"}, `unknown command "lsit" for "petrel topic"; did you mean "list"?`},
		{[]string{"topc"}, `unknown command "topc" for "petrel"; did you mean "topic"?`},
		{[]string{"group", "nothing-like-it"}, `unknown command "nothing-like-it" for "petrel group"; run 'petrel group --help'`},
	} {
		_, err := execRoot(c.args...)
		if err == nil || !errors.Is(err, errUnknownCommand) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("petrel %v: err %v, want one containing %q", c.args, err, c.want)
		}
	}
	// A group command alone still shows its help and succeeds.
	out, err := execRoot("topic")
	if err != nil || !strings.Contains(out, "Available Commands") {
		t.Fatalf("petrel topic: %v, printed %q", err, out)
	}
}

func TestMissingPositionalArgumentIsNamed(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "describe"}, "topic describe: missing TOPIC"},
		{[]string{"topic", "create"}, "topic create: missing TOPIC"},
		{[]string{"group", "describe"}, "group describe: missing GROUP"},
		{[]string{"group", "reset-offset", "--topic", "T", "--to-earliest"}, "group reset-offset: missing GROUP"},
		{[]string{"topic", "describe", "a", "b"}, "topic describe: accepts 1 arg(s), received 2"},
	} {
		_, err := execRoot(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("petrel %v: err %v, want %q", c.args, err, c.want)
		}
	}
}

func TestPositionalsReadTheUseLine(t *testing.T) {
	for use, want := range map[string]string{
		"describe TOPIC":            "TOPIC",
		"send --topic TOPIC [BODY]": "",
		"reset-offset GROUP --topic TOPIC (--to-time TIME | --to-earliest)": "GROUP",
		"resend --group GROUP (--id ID | --all)":                            "",
		"copy SRC DST [MORE...]":                                            "SRC DST",
	} {
		if got := strings.Join(positionals(use), " "); got != want {
			t.Errorf("positionals(%q) = %q, want %q", use, got, want)
		}
	}
}

func TestVersionPrintsModuleCommitTimeAndGo(t *testing.T) {
	defer func(v, c, b string) { version, commit, buildTime = v, c, b }(version, commit, buildTime)
	version, commit, buildTime = "v1.2.3", "0123abcd", "2026-12-01T10:00:00Z"
	want := "petrel v1.2.3 (commit 0123abcd, built 2026-12-01T10:00:00Z, " + runtime.Version() + ")\n"
	var faultsLine strings.Builder
	printTestFaults(&faultsLine) // `petrel version` only, and only with the tag verifyfault
	for _, args := range [][]string{{"--version"}, {"version"}} {
		w := want
		if args[0] == "version" {
			w += faultsLine.String()
		}
		out, err := execRoot(args...)
		if err != nil || out != w {
			t.Fatalf("petrel %v: %v, printed %q, want %q", args, err, out, w)
		}
	}
	version, commit, buildTime = "", "", ""
	if bi := readBuildInfo(); bi.Version == "" || bi.Commit == "" || bi.GoVersion != runtime.Version() {
		t.Fatalf("build info without -ldflags: %+v", bi)
	}
}

func TestBenchTakesTheNameServerFromTheEnvironmentAndTableOutput(t *testing.T) {
	t.Setenv(namesrvEnv, "127.0.0.1:19999")
	var got loadgen.ProduceConfig
	r := benchRunners{produce: func(_ context.Context, c loadgen.ProduceConfig) (*loadgen.Result, error) {
		got = c
		return &loadgen.Result{Scenario: c.Scenario, BodyBytes: c.BodyBytes, Msgs: 1, Elapsed: time.Second, Latency: loadgen.NewHistogram()}, nil
	}}
	var out bytes.Buffer
	if err := execBench(r, &out, &out, "produce", "--count", "1000", "-o", "table", "--progress", "off"); err != nil {
		t.Fatal(err)
	}
	if len(got.NameServers) != 1 || got.NameServers[0] != "127.0.0.1:19999" {
		t.Fatalf("bench went to %v, want $%s", got.NameServers, namesrvEnv)
	}
	if !strings.HasPrefix(out.String(), "petrel produce ") {
		t.Fatalf("-o table printed %q, want the result line", out.String())
	}
	if err := execBench(r, &out, &out, "produce", "--namesrv", "127.0.0.1:1", "--count", "1"); err != nil || got.NameServers[0] != "127.0.0.1:1" {
		t.Fatalf("--namesrv did not win over the environment: %v %v", err, got.NameServers)
	}
}

func TestSendHelpNamesFlagValues(t *testing.T) {
	out, err := execRoot("send", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--key KEY ", "--property KEY=VALUE "} {
		if !strings.Contains(out, want) {
			t.Fatalf("send --help lacks %q:\n%s", want, out)
		}
	}
}

func TestServerReportsEveryListenConflictBeforeStarting(t *testing.T) {
	busy := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		return ln.Addr().String()
	}
	broker, httpAddr := busy(), busy()
	dir := filepath.Join(t.TempDir(), "data")
	_, err := execRoot("server", "--data-dir", dir, "--namesrv-listen", "127.0.0.1:0", "--broker-listen", broker,
		"--http-listen", httpAddr, "--grpc-listen", "off")
	if err == nil {
		t.Fatal("server started on addresses in use")
	}
	for _, want := range []string{
		"--broker-listen " + broker + ": address already in use",
		"pick another with --broker-listen",
		"--http-listen " + httpAddr + ": address already in use",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q lacks %q", err, want)
		}
	}
	if _, serr := os.Stat(dir); !os.IsNotExist(serr) {
		t.Fatalf("the data dir was created before the listen check: %v", serr)
	}
}
