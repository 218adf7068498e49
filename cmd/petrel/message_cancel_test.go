package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/petrelmq/petrel/internal/cli"
)

// TestMessageCancelArgs: `message cancel` wants the id or --handle, not
// both and not neither, and says so before asking any server.
func TestMessageCancelArgs(t *testing.T) {
	for _, args := range [][]string{
		{"message", "cancel"},
		{"message", "cancel", "0A0B0C0D9A1B2C3D4E5F60718293A4B5", "--handle", "djE"},
	} {
		_, err := execute(t, "", append(args, "--namesrv", "127.0.0.1:1")...)
		if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "--handle") {
			t.Errorf("%v: %v; want a usage error naming --handle", args, err)
		}
	}
	out, err := execute(t, "", "message", "cancel", "--help")
	if err != nil || !strings.Contains(out, "recall handle") || !strings.Contains(out, "--topic") {
		t.Fatalf("message cancel --help: %v\n%s", err, out)
	}
}
