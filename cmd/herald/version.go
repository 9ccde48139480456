package main

import (
	"cmp"
	"fmt"
	"runtime/debug"
	"strings"
)

// Set at build time with -ldflags "-X main.version=v1.2.3 -X
// main.commit=<hash> -X main.buildTime=2026-01-02T15:04:05Z" (as
// scripts/release.sh and the Dockerfile do). Left empty, they come from
// the build information Go records: the module version, and the commit
// and its time when the binary was built in a Git checkout.
var (
	version   = ""
	commit    = ""
	buildTime = ""
)

// buildInfo is what `herald version` prints.
type buildInfo struct {
	Version string
	Commit  string
	// Modified: the checkout had changes not committed.
	Modified bool
	// Time is when the binary was built (-X main.buildTime); without it,
	// CommitTime is the time of the commit built.
	Time       string
	CommitTime string
}

// readBuildInfo is the build information of this binary: the -ldflags
// values where given, Go's build information otherwise.
func readBuildInfo() buildInfo {
	var b buildInfo
	if bi, ok := debug.ReadBuildInfo(); ok {
		b = buildInfoOf(bi)
	}
	return b.override(version, commit, buildTime)
}

// buildInfoOf reads the module version and the vcs settings Go records
// (go build in a Git checkout, -buildvcs=auto).
func buildInfoOf(bi *debug.BuildInfo) buildInfo {
	var b buildInfo
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		b.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.time":
			b.CommitTime = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// override replaces what the linker was given: a release's values win
// over what the build saw.
func (b buildInfo) override(version, commit, buildTime string) buildInfo {
	if version != "" {
		b.Version = version
	}
	if commit != "" {
		b.Commit, b.Modified = commit, false
	}
	if buildTime != "" {
		b.Time = buildTime
	}
	return b
}

// String is the text of `herald version`: the version on the first line,
// then the commit and the build (or commit) time, "unknown" when the
// binary does not know them.
func (b buildInfo) String() string {
	var s strings.Builder
	fmt.Fprintf(&s, "herald %s\n", cmp.Or(b.Version, "devel"))
	c := cmp.Or(b.Commit, "unknown")
	if b.Modified {
		c += " (with changes not committed)"
	}
	fmt.Fprintf(&s, "commit: %s\n", c)
	switch {
	case b.Time != "":
		fmt.Fprintf(&s, "built: %s\n", b.Time)
	case b.CommitTime != "":
		fmt.Fprintf(&s, "built from a commit of: %s\n", b.CommitTime)
	default:
		fmt.Fprintf(&s, "built: unknown\n")
	}
	return s.String()
}

// buildVersion is the version alone, for logs and traces.
func buildVersion() string { return cmp.Or(readBuildInfo().Version, "devel") }
