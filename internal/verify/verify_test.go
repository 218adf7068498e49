package verify

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/petrelmq/petrel/internal/verify/nemesis"
	"github.com/petrelmq/petrel/internal/verify/proxy"
)

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

// TestPartitionsTakeEachModeInTurn: a plan's partitions start at multiples
// of the interval; the mode must not follow from the start time (every
// partition of a 3 s plan was once a blackhole).
func TestPartitionsTakeEachModeInTurn(t *testing.T) {
	n := proxy.NewNet(nil)
	defer n.Close()
	tg := &target{r: &run{net: n}}
	var got []string
	for i := 1; i <= 3; i++ {
		e := nemesis.Event{At: time.Duration(i) * 3 * time.Second, Kind: nemesis.Partition, Target: clientsTarget, Hold: time.Second}
		detail, err := tg.Inject(context.Background(), e)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.Fields(detail)[0])
		if _, err := tg.Heal(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(got, " ") != "blackhole drop reset" {
		t.Fatalf("partition modes %v; want blackhole, drop, reset in turn", got)
	}
}
