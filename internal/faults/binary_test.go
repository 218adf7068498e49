package faults

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The normal petrel binary must carry no fault hook; the tagged one must.
// This test builds cmd/petrel both ways (no -race, to keep it quick) and
// looks at each: the symbols of the hooks' code in this package and the
// hooks' own strings. It keys on neither the string PETREL_TEST_FAULTS nor
// every symbol of this package: `petrel verify` in the normal binary may
// name the variable (EnvVar) to pass it to the processes it starts.

// hookMarkers are strings and symbols only the tagged wiring brings in.
var hookMarkers = []string{
	"test faults: built in",                    // cmd/petrel: the version line
	"test fault lose-ack: acknowledged a send", // internal/broker: lose-ack
	"test fault reorder:",                      // internal/broker: reorder
	"test fault slow-disk is ready",            // internal/daemon: slow-disk
	module + "internal/faults.(*OneIn).Next",
	module + "internal/faults.ReverseRecords",
	module + "internal/faults.(*slowFile).WriteAt",
	module + "internal/faults.Follow",
}

const module = "github.com/petrelmq/petrel/"

func buildPetrel(t *testing.T, tags ...string) (bin string, nm []byte) {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is needed to build cmd/petrel: %v", err)
	}
	bin = filepath.Join(t.TempDir(), "petrel")
	args := []string{"build", "-o", bin}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.Command(gobin, append(args, module+"cmd/petrel")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	nm, err = exec.Command(gobin, "tool", "nm", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool nm: %v\n%s", err, nm)
	}
	return bin, nm
}

func TestBinaryHasFaultHooksOnlyWithTheTag(t *testing.T) {
	bin, nm := buildPetrel(t)
	raw, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range hookMarkers {
		if bytes.Contains(raw, []byte(m)) || bytes.Contains(nm, []byte(m)) {
			t.Errorf("the normal binary holds %q: a fault hook is built in without the verifyfault tag", m)
		}
	}
	if out, err := exec.Command(bin, "version").CombinedOutput(); err != nil || bytes.Contains(out, []byte("test faults")) {
		t.Errorf("normal `petrel version`: %v\n%s", err, out)
	}

	// The same check finds them in the tagged build, so it can fail.
	bin, nm = buildPetrel(t, "verifyfault")
	raw, err = os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range hookMarkers {
		if !bytes.Contains(raw, []byte(m)) && !bytes.Contains(nm, []byte(m)) {
			t.Errorf("the verifyfault binary lacks %q", m)
		}
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("\ntest faults: built in (PETREL_TEST_FAULTS=")) {
		t.Errorf("verifyfault `petrel version` = %v\n%s; want a line starting \"test faults: built in\"", err, out)
	}
}
