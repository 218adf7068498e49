package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// pythonClientDir holds the Python script and the pinned client
// (rocketmq-python-client 5.1.2, requirements.txt).
const pythonClientDir = "python"

// pythonVenv is where .ci/run installs requirements.txt: a venv, as
// system pip may refuse to install (PEP 668).
func pythonVenv() string {
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "petrel-pyclient")
}

// pythonClient returns the interpreter that has the official Python
// client: $PETREL_PYTHON, else the venv's, else python3 on PATH. Without
// one it installs requirements.txt into the venv (as the Node.js test runs
// npm ci on its first run; .ci/run does it before the suite), and fails
// when python3 or the install does.
func pythonClient(t *testing.T) string {
	t.Helper()
	var candidates []string
	if p := os.Getenv("PETREL_PYTHON"); p != "" {
		candidates = append(candidates, p)
	}
	venv := pythonVenv()
	venvPython := filepath.Join(venv, "bin", "python")
	candidates = append(candidates, venvPython)
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	var tried []string
	for _, py := range candidates {
		out, err := exec.Command(py, "-c", "from rocketmq import SimpleConsumer, PushConsumer, Producer").CombinedOutput()
		if err == nil {
			return py
		}
		tried = append(tried, fmt.Sprintf("%s: %v %s", py, err, tail(string(out), 300)))
	}
	python3, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("the Python interop test needs python3 with venv on PATH (apt-get install python3 python3-venv); tried: %s",
			strings.Join(tried, "; "))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	install := [][]string{
		{python3, "-m", "venv", venv},
		{filepath.Join(venv, "bin", "pip"), "install", "-q", "--disable-pip-version-check", "-r", filepath.Join(pythonClientDir, "requirements.txt")},
	}
	if _, err := os.Stat(venvPython); err == nil {
		install = install[1:] // the venv is there, without the client
	}
	for _, args := range install {
		if out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("installing the Python client (%s) failed: %v\n%s", strings.Join(args, " "), err, tail(string(out), 4000))
		}
	}
	return venvPython
}

// TestPythonClientProduceConsume: the official Python 5.x client produces
// 50 messages to petrel's gRPC front (plaintext) and consumes them with a
// SimpleConsumer (tag filter, receive and ack) and with a PushConsumer of
// another group; each consumer gets every sent id, with its body, tag,
// keys and user properties intact, and the simple consumer's filter keeps
// the message of another tag away.
func TestPythonClientProduceConsume(t *testing.T) {
	py := pythonClient(t)
	p := startPetrel(t, serverOptions{extraArgs: []string{"--grpc-plaintext"}})
	topic, group := uniqueName(t, "py"), uniqueName(t, "g")
	createTopics(t, p, topic)

	const count = 50
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "simple.py", p.grpcAddr, topic, group, fmt.Sprint(count))
	cmd.Dir = pythonClientDir
	// The client logs to ~/logs/rocketmq_python: keep it in the test's
	// directory.
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out := commandOutput(t, cmd)
	type received struct {
		ID         string            `json:"id"`
		Body       string            `json:"body"`
		Tag        string            `json:"tag"`
		Keys       []string          `json:"keys"`
		Properties map[string]string `json:"properties"`
		Type       string            `json:"type"`
		Attempt    int               `json:"attempt"`
	}
	var res struct {
		Sent   []string   `json:"sent"`
		Other  string     `json:"other"`
		Simple []received `json:"simple"`
		Push   []received `json:"push"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("python output is not the expected JSON: %v\n%s", err, out)
	}
	if len(res.Sent) != count || res.Other == "" {
		t.Fatalf("sent %d ids and other %q, want %d and one", len(res.Sent), res.Other, count)
	}
	index := map[string]int{}
	for i, id := range res.Sent {
		index[id] = i
	}
	check := func(who string, got []received, wantOther bool) {
		t.Helper()
		seen := map[string]bool{}
		for _, m := range got {
			if m.ID == res.Other {
				if !wantOther {
					t.Errorf("%s received the message of tag other; its filter asks for tag py only", who)
				} else if m.Body != "filtered" || m.Tag != "other" {
					t.Errorf("%s received the other message as %+v", who, m)
				}
				seen[m.ID] = true
				continue
			}
			i, ok := index[m.ID]
			if !ok {
				t.Errorf("%s received %s (%q), which was not sent", who, m.ID, m.Body)
				continue
			}
			want := map[string]string{"seq": fmt.Sprint(i), "lang": "python"}
			if m.Body != fmt.Sprintf("py-%d", i) || m.Tag != "py" || !slices.Equal(m.Keys, []string{fmt.Sprintf("key-%d", i), "py"}) ||
				len(m.Properties) != len(want) || m.Properties["seq"] != want["seq"] || m.Properties["lang"] != want["lang"] || m.Type != "NORMAL" {
				t.Errorf("%s received message %d as %+v; want body py-%d, tag py, keys [key-%d py], properties %v, type NORMAL", who, i, m, i, i, want)
			}
			if m.Attempt < 1 {
				t.Errorf("%s: message %d has delivery attempt %d", who, i, m.Attempt)
			}
			seen[m.ID] = true
		}
		var missing []string
		for _, id := range res.Sent {
			if !seen[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			t.Errorf("%s never received %d of the %d sent messages, e.g. %v", who, len(missing), count, missing[:min(len(missing), 5)])
		}
		if wantOther && !seen[res.Other] {
			t.Errorf("%s (every tag) never received the message of tag other", who)
		}
	}
	check("the simple consumer", res.Simple, false)
	check("the push consumer", res.Push, true)
}
