package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/broker"
	"github.com/petrelmq/petrel/internal/clock"
	"github.com/petrelmq/petrel/internal/logtest"
	"github.com/petrelmq/petrel/internal/message"
	"github.com/petrelmq/petrel/internal/store"
	"github.com/petrelmq/petrel/internal/store/storetest"
	"github.com/petrelmq/petrel/internal/vfs"
)

// TestEarlyDeletionIsLoud: a disk above the high-water mark (5% of it
// reserved for root) makes retention remove segments a group had not
// consumed. The Warn line, the metric and the consumer's jump to the new
// min offset (logged once) are all there.
func TestEarlyDeletionIsLoud(t *testing.T) {
	logs := &logtest.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	m := New(Options{Logger: logger})
	clk := clock.NewManual(t0)
	fsys := vfs.NewMem()
	scfg := storetest.SmallConfig(fsys, clk, logger)
	scfg.SegmentBytes = 8 << 10
	scfg.MaxMessageBytes = 4 << 10
	scfg.RetentionInterval = 1000 * scfg.FileReservedTime // passes run when the test says
	st, err := store.Open(scfg)
	if err != nil {
		t.Fatal(err)
	}
	bcfg := broker.DefaultConfig()
	bcfg.Clock, bcfg.Logger = clk, logger
	e := startEnv(t, m, st, bcfg)
	b := e.b
	m.Attach(Source{Broker: b})

	const topic, group = "Orders", "billing"
	for i := range 60 {
		e.send(sendReq(topic, 0, fmt.Sprint(strings.Repeat("x", 500), i), nil))
	}
	b.UpdateConsumerOffset(group, topic, 0, 5)
	if err := st.WaitDispatched(context.Background()); err != nil {
		t.Fatal(err)
	}

	// df would show 85% used: used / (capacity − reserved).
	u, _ := fsys.Usage("/")
	capacity := int64(float64(u.UsedBytes) / 0.85 / 0.95)
	fsys.SetCapacity(capacity)
	fsys.SetReserved(capacity / 20)
	rep, err := st.RunRetention()
	if err != nil {
		t.Fatal(err)
	}
	minOff := b.MinOffset(topic, 0)
	if rep.SegmentsRemoved == 0 || minOff <= 5 {
		t.Fatalf("retention at 85%%: %+v, min offset %d; want segments removed past offset 5", rep, minOff)
	}
	lost := minOff - 5

	// The Warn line, once per removed segment, names the topic and group.
	warns := logs.Lines("removed the oldest commit-log segment before its reserve time")
	if len(warns) != rep.SegmentsRemoved {
		t.Fatalf("%d early-deletion lines for %d segments:\n%s", len(warns), rep.SegmentsRemoved, strings.Join(warns, "\n"))
	}
	var named int
	for _, w := range warns {
		if !strings.Contains(w, "level=WARN") {
			t.Fatalf("early deletion not logged at Warn: %s", w)
		}
		if strings.Contains(w, topic+"/"+group+"=") {
			named++
		}
	}
	if named == 0 {
		t.Fatalf("no early-deletion line names %s/%s:\n%s", topic, group, strings.Join(warns, "\n"))
	}

	// The metric.
	fams := e.scrape()
	if v := value(t, fams, "petrel_retention_removed_unconsumed_messages_total", "topic", topic, "group", group); v != float64(lost) {
		t.Fatalf("petrel_retention_removed_unconsumed_messages_total = %v, want %d", v, lost)
	}
	after, _ := fsys.Usage("/")
	if v := value(t, fams, "petrel_disk_used_ratio"); math.Abs(v-after.UsedFraction()) > 1e-9 || v >= scfg.DiskHighWater {
		t.Fatalf("petrel_disk_used_ratio = %v, want %v (below the high-water mark after retention)", v, after.UsedFraction())
	}
	if v := value(t, fams, "petrel_disk_used_bytes"); v != float64(after.UsedBytes) {
		t.Fatalf("petrel_disk_used_bytes = %v, want %d", v, after.UsedBytes)
	}

	// The consumer at its old offset continues from the new min; the jump
	// is logged once, however often the old offset is asked for.
	for range 2 {
		pr, err := b.Pull(context.Background(), &broker.PullRequest{Group: group, Topic: topic, QueueID: 0, Offset: 5, MaxMsgs: 8, Conn: 1, SysFlag: broker.PullFlagSubscription, Subscription: "*", ExpressionType: "TAG"})
		if err != nil {
			t.Fatal(err)
		}
		if pr.Status != broker.PullOffsetMoved || pr.NextBeginOffset != minOff {
			t.Fatalf("pull at 5: status %v next %d, want PullOffsetMoved to %d", pr.Status, pr.NextBeginOffset, minOff)
		}
		pr.Release()
	}
	pr, err := b.Pull(context.Background(), &broker.PullRequest{Group: group, Topic: topic, QueueID: 0, Offset: minOff, MaxMsgs: 8, Conn: 1, SysFlag: broker.PullFlagSubscription, Subscription: "*", ExpressionType: "TAG"})
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Release()
	first, _, err := message.Decode(pr.Body)
	if pr.Status != broker.PullFound || err != nil || first.QueueOffset != minOff {
		t.Fatalf("pull at the min %d: status %v, first offset %v, err %v", minOff, pr.Status, first, err)
	}
	jumps := logs.Lines("below the queue's min offset")
	if len(jumps) != 1 {
		t.Fatalf("%d jump lines, want 1:\n%s", len(jumps), strings.Join(jumps, "\n"))
	}
	for _, want := range []string{"group=" + group, "topic=" + topic, "queue_id=0", "offset=5", fmt.Sprintf("min_offset=%d", minOff), fmt.Sprintf("skipped=%d", lost)} {
		if !strings.Contains(jumps[0], want) {
			t.Fatalf("jump line lacks %q: %s", want, jumps[0])
		}
	}
}
