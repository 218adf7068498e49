package controller

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/petrelmq/petrel/internal/logtest"
)

func TestHCLoggerWritesRaftLogThroughSlog(t *testing.T) {
	var buf logtest.Buffer
	h := newHCLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	if h.IsDebug() || h.IsTrace() || !h.IsInfo() || h.GetLevel() != hclog.Info {
		t.Fatalf("levels at slog Info: debug %v trace %v info %v level %v", h.IsDebug(), h.IsTrace(), h.IsInfo(), h.GetLevel())
	}
	sub := h.Named("snapshot").With("last-index", 7)
	sub.Warn("failed to contact", "server-id", "2", "error", errors.New("refused"), "odd")
	h.Debug("heartbeat chatter", "peer", "2")
	h.Trace("more chatter")
	h.Info("formatted", "node", hclog.Fmt("%s at %d", "voter", 3))
	h.StandardLogger(nil).Print("legacy line")
	h.Error("failed to heartbeat to", "peer", "127.0.0.1:2")
	h.Error("failed to restore snapshot", "error", "bad")
	out := buf.String()
	for _, want := range []string{
		`level=WARN msg="failed to contact" last_index=7 server_id=2 err=refused odd=(missing) raft_logger=snapshot`,
		`msg=formatted node="voter at 3"`,
		`msg="legacy line"`,
		`level=WARN msg="failed to heartbeat to" peer=127.0.0.1:2`,
		`level=ERROR msg="failed to restore snapshot" err=bad`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "chatter") {
		t.Errorf("raft's debug and trace lines passed an Info logger:\n%s", out)
	}
}
