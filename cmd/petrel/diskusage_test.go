package main

import (
	"encoding/json"
	"math"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// dfPercent is the Use% df prints for dir: `df --output=pcent` when df has
// that option, else the same figure from statfs(2) the way df computes it,
// used / (used + available) rounded up, with used = f_blocks − f_bfree.
func dfPercent(t *testing.T, dir string) (pct float64, source string) {
	t.Helper()
	if out, err := exec.Command("df", "--output=pcent", dir).Output(); err == nil {
		if m := regexp.MustCompile(`(\d+)%`).FindStringSubmatch(string(out)); m != nil {
			v, _ := strconv.Atoi(m[1])
			return float64(v), "df --output=pcent"
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	used, avail := st.Blocks-st.Bfree, st.Bavail
	if used+avail == 0 {
		return 0, "statfs"
	}
	return math.Ceil(float64(used) * 100 / float64(used+avail)), "statfs"
}

// TestClusterListDiskUsedMatchesDf runs a server on a real data dir and
// checks that `petrel cluster list` reports the disk use df shows for it,
// within a point (df rounds up; other processes write meanwhile).
func TestClusterListDiskUsedMatchesDf(t *testing.T) {
	dir := t.TempDir()
	_, out := startTestServer(t, testOptions(dir))
	ns := regexp.MustCompile(`name server listening on (127\.0\.0\.1:\d+)`).FindStringSubmatch(out.String())
	if ns == nil {
		t.Fatalf("no name server address in %q", out.String())
	}
	var got struct {
		Brokers []struct {
			DiskUsedRatio  float64 `json:"diskUsedRatio"`
			DiskTotalBytes uint64  `json:"diskTotalBytes"`
			Error          string  `json:"error"`
		} `json:"brokers"`
	}
	// StartBroker returns once the name server accepted the registration.
	stdout, err := execute(t, "", "cluster", "list", "--namesrv", ns[1], "-o", "json")
	if err != nil {
		t.Fatalf("cluster list: %v", err)
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("cluster list JSON: %v\n%s", err, stdout)
	}
	if len(got.Brokers) != 1 || got.Brokers[0].Error != "" || got.Brokers[0].DiskTotalBytes == 0 {
		t.Fatalf("cluster list brokers %+v, want the one broker with its disk", got.Brokers)
	}
	want, source := dfPercent(t, dir)
	cli := got.Brokers[0].DiskUsedRatio * 100
	if math.Abs(cli-want) > 1 {
		t.Fatalf("cluster list says %.2f%% of the data dir's disk is used, %s says %.0f%%", cli, source, want)
	}
	table, err := execute(t, "", "cluster", "list", "--namesrv", ns[1])
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(\d+\.\d)%`).FindStringSubmatch(table)
	if m == nil {
		t.Fatalf("no DISK USED figure in\n%s", table)
	}
	if v, _ := strconv.ParseFloat(m[1], 64); math.Abs(v-want) > 1 {
		t.Fatalf("cluster list table says %s%%, %s says %.0f%%:\n%s", m[1], source, want, strings.TrimSpace(table))
	}
	t.Logf("cluster list %.2f%%, %s %.0f%%", cli, source, want)
}
