package cli

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/vfs"
)

// TestClusterListAndTopicDescribeShowRemovedUnconsumed: after retention
// removed messages a group had not consumed (disk above the high-water
// mark), cluster list shows the broker's total and topic describe the
// topic's count per group, both as the store counted them.
func TestClusterListAndTopicDescribeShowRemovedUnconsumed(t *testing.T) {
	c := startCluster(t)
	st := c.b.Store()
	fsys, ok := st.Config().FS.(*vfs.MemFS)
	if !ok {
		t.Fatalf("daemontest store FS is %T, want *vfs.MemFS", st.Config().FS)
	}
	body := bytes.Repeat([]byte("b"), 60<<10)
	c.must(OutputTable, func(cl *CLI) error { return cl.Send(bg, SendSpec{Topic: "Big", Body: body, Count: 40}) })
	c.dispatched()
	for _, q := range st.QueueIDs("Big") {
		st.Meta().CommitOffset("archive", "Big", q, 0)
	}
	u, _ := fsys.Usage("/")
	fsys.SetCapacity(int64(float64(u.UsedBytes) / 0.85))
	if rep, err := st.RunRetention(); err != nil || rep.SegmentsRemoved == 0 {
		t.Fatalf("retention at 85%%: %+v %v", rep, err)
	}
	fsys.SetCapacity(0)
	var want uint64
	for _, r := range st.RemovedUnconsumed() {
		if r.Topic != "Big" || r.Group != "archive" {
			t.Fatalf("removed unconsumed %+v, want only Big/archive", r)
		}
		want += r.Messages
	}
	if want == 0 {
		t.Fatal("retention removed no unconsumed message; the test needs some")
	}

	var cl struct {
		Brokers []BrokerStatus `json:"brokers"`
	}
	c.mustJSON(&cl, func(x *CLI) error { return x.ClusterList(bg) })
	if len(cl.Brokers) != 1 || cl.Brokers[0].RemovedUnconsumed != want || cl.Brokers[0].DiskUsedBytes == 0 {
		t.Fatalf("cluster list %+v, want removedUnconsumed %d and diskUsedBytes > 0", cl.Brokers, want)
	}
	table := c.must(OutputTable, func(x *CLI) error { return x.ClusterList(bg) })
	if !strings.Contains(table, "REMOVED UNCONSUMED") || strings.Fields(strings.Split(table, "\n")[1])[10] != strconv.FormatUint(want, 10) {
		t.Fatalf("cluster list table lacks the count %d:\n%s", want, table)
	}

	var d TopicDescription
	c.mustJSON(&d, func(x *CLI) error { return x.TopicDescribe(bg, "Big") })
	if len(d.RemovedUnconsumed) != 1 || d.RemovedUnconsumed["archive"] != want {
		t.Fatalf("topic describe removedUnconsumed %v, want archive: %d", d.RemovedUnconsumed, want)
	}
	text := c.must(OutputTable, func(x *CLI) error { return x.TopicDescribe(bg, "Big") })
	if line := "Removed:     " + strconv.FormatUint(want, 10) + " unconsumed messages early (archive " + strconv.FormatUint(want, 10) + ")"; !strings.Contains(text, line) {
		t.Fatalf("topic describe lacks %q:\n%s", line, text)
	}
}
