package verify

import "testing"

func TestSlowDiskEnvKeepsTheCallersFaults(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "PETREL_TEST_FAULTS=slow-disk=100ms"},
		{"reorder", "PETREL_TEST_FAULTS=reorder,slow-disk=100ms"},
		{"lose-ack=5,slow-disk=1s", "PETREL_TEST_FAULTS=lose-ack=5,slow-disk=1s"},
	} {
		if got := slowDiskEnv(c.in); got != c.want {
			t.Errorf("slowDiskEnv(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestRunIDIsTheSeedsOnAClusterVerifyStarts(t *testing.T) {
	a, b := runID(Config{Seed: 7}), runID(Config{Seed: 7})
	if a != b || len(a) != 8 {
		t.Fatalf("run ids %q, %q; want the same 8 hex digits for one seed", a, b)
	}
	if c := runID(Config{Seed: 8}); c == a {
		t.Fatalf("seeds 7 and 8 share run id %q", a)
	}
}
