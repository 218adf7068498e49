package controller

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"

	"github.com/hashicorp/go-hclog"
)

// hcLogger is an hclog.Logger writing to a slog.Logger, so that raft logs
// where the rest of Petrel does. raft's Trace and Debug go to slog Debug
// (its heartbeat chatter), Info to Info (elections, state changes), Warn
// and Error as they are, except that raft's errors about a peer it cannot
// reach (peerTrouble) go to Warn: a voter down is degraded service, not
// lost function, and raft repeats them on every retry. Keys are made
// snake_case ("last-index" →
// last_index, "error" → err).
type hcLogger struct {
	l    *slog.Logger
	name string
	args []any // implied (With) pairs, as given
}

func newHCLogger(l *slog.Logger) hclog.Logger { return &hcLogger{l: l} }

var _ hclog.Logger = (*hcLogger)(nil)

// peerTrouble are raft's Error messages about an unreachable or lagging
// peer (raft v1.8.0's replication.go and raft.go).
var peerTrouble = map[string]bool{
	"failed to appendEntries to":                true,
	"failed to heartbeat to":                    true,
	"failed to make requestVote RPC":            true,
	"failed to start pipeline replication to":   true,
	"failed to pipeline appendEntries":          true,
	"failed to send snapshot to":                true,
	"peer has newer term, stopping replication": true,
}

func slogLevel(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace, hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo
}

// attrs converts hclog's alternating key/value pairs.
func attrs(args []any) []any {
	out := make([]any, 0, len(args)+2)
	for i := 0; i < len(args); i += 2 {
		key, ok := args[i].(string)
		if !ok {
			key = "arg"
		}
		key = strings.ReplaceAll(key, "-", "_")
		if key == "error" {
			key = "err"
		}
		var v any = "(missing)"
		if i+1 < len(args) {
			v = args[i+1]
		}
		if f, ok := v.(hclog.Format); ok && len(f) > 0 {
			if s, ok := f[0].(string); ok {
				v = strings.TrimSpace(fmt.Sprintf(s, f[1:]...))
			}
		}
		out = append(out, key, v)
	}
	return out
}

func (h *hcLogger) Log(level hclog.Level, msg string, args ...any) {
	lv := slogLevel(level)
	if lv == slog.LevelError && peerTrouble[msg] {
		lv = slog.LevelWarn
	}
	if level == hclog.Off || !h.l.Enabled(context.Background(), lv) {
		return
	}
	all := attrs(append(h.args[:len(h.args):len(h.args)], args...))
	if h.name != "" {
		all = append(all, "raft_logger", h.name)
	}
	h.l.Log(context.Background(), lv, msg, all...)
}

func (h *hcLogger) Trace(msg string, args ...any) { h.Log(hclog.Trace, msg, args...) }
func (h *hcLogger) Debug(msg string, args ...any) { h.Log(hclog.Debug, msg, args...) }
func (h *hcLogger) Info(msg string, args ...any)  { h.Log(hclog.Info, msg, args...) }
func (h *hcLogger) Warn(msg string, args ...any)  { h.Log(hclog.Warn, msg, args...) }
func (h *hcLogger) Error(msg string, args ...any) { h.Log(hclog.Error, msg, args...) }

func (h *hcLogger) enabled(l slog.Level) bool { return h.l.Enabled(context.Background(), l) }

func (h *hcLogger) IsTrace() bool { return false }
func (h *hcLogger) IsDebug() bool { return h.enabled(slog.LevelDebug) }
func (h *hcLogger) IsInfo() bool  { return h.enabled(slog.LevelInfo) }
func (h *hcLogger) IsWarn() bool  { return h.enabled(slog.LevelWarn) }
func (h *hcLogger) IsError() bool { return h.enabled(slog.LevelError) }

func (h *hcLogger) ImpliedArgs() []any { return h.args }

func (h *hcLogger) With(args ...any) hclog.Logger {
	c := *h
	c.args = append(h.args[:len(h.args):len(h.args)], args...)
	return &c
}

func (h *hcLogger) Name() string { return h.name }

func (h *hcLogger) Named(name string) hclog.Logger {
	c := *h
	if c.name != "" {
		c.name += "." + name
	} else {
		c.name = name
	}
	return &c
}

func (h *hcLogger) ResetNamed(name string) hclog.Logger {
	c := *h
	c.name = name
	return &c
}

// SetLevel does nothing: the slog handler decides.
func (h *hcLogger) SetLevel(hclog.Level) {}

func (h *hcLogger) GetLevel() hclog.Level {
	switch {
	case h.IsDebug():
		return hclog.Debug
	case h.IsInfo():
		return hclog.Info
	case h.IsWarn():
		return hclog.Warn
	}
	return hclog.Error
}

func (h *hcLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

func (h *hcLogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer { return stdWriter{h} }

// stdWriter logs each write as one Info line (raft uses the standard
// logger only for a few legacy paths).
type stdWriter struct{ h *hcLogger }

func (w stdWriter) Write(p []byte) (int, error) {
	w.h.Info(strings.TrimSpace(string(p)))
	return len(p), nil
}
