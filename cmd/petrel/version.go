package main

import (
	"cmp"
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Release builds set these with -ldflags, e.g.
//
//	go build -ldflags "-X main.version=v1.2.0 -X main.commit=$(git rev-parse HEAD) -X main.buildTime=$(date -u +%FT%TZ)" ./cmd/petrel
//
// Left empty, they come from the module and VCS information Go stamps
// into the binary (go build in a git checkout; not go run).
var version, commit, buildTime string

// buildInfo is what `petrel version` prints.
type buildInfo struct {
	Version   string // module version, e.g. v1.2.0 or a pseudo-version; "(devel)" when unknown
	Commit    string // VCS revision, "+dirty" when the tree had changes; "unknown" when not stamped
	BuildTime string // the -ldflags build time, else the commit's time (VCS); "unknown" when neither
	TimeLabel string // "built" or "committed": which of the two BuildTime is
	GoVersion string
}

// readBuildInfo merges the -ldflags values with what debug.ReadBuildInfo
// reports; the -ldflags values win.
func readBuildInfo() buildInfo {
	bi := buildInfo{Version: "(devel)", Commit: "unknown", BuildTime: "unknown", TimeLabel: "built"}
	if info, ok := debug.ReadBuildInfo(); ok {
		bi.GoVersion = info.GoVersion
		if v := info.Main.Version; v != "" {
			bi.Version = v
		}
		var dirty bool
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				bi.Commit = s.Value
			case "vcs.time":
				bi.BuildTime, bi.TimeLabel = s.Value, "committed"
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if dirty && bi.Commit != "unknown" {
			bi.Commit += "+dirty"
		}
	}
	bi.Version = cmp.Or(version, bi.Version)
	bi.Commit = cmp.Or(commit, bi.Commit)
	if buildTime != "" {
		bi.BuildTime, bi.TimeLabel = buildTime, "built"
	}
	return bi
}

// String is the one line of `petrel --version`.
func (b buildInfo) String() string {
	return fmt.Sprintf("petrel %s (commit %s, %s %s, %s)", b.Version, b.Commit, b.TimeLabel, b.BuildTime, b.GoVersion)
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, build time and Go version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), readBuildInfo())
			printTestFaults(cmd.OutOrStdout())
			return nil
		},
	}
}
