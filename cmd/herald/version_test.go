package main

import (
	"runtime/debug"
	"testing"
)

// herald version prints what Go recorded of the build (module version,
// commit, commit time, uncommitted changes), and -ldflags -X values win.
func TestBuildInfo(t *testing.T) {
	t.Parallel()
	recorded := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123abcd"},
		{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	for _, c := range []struct {
		name                     string
		bi                       *debug.BuildInfo
		version, commit, builtAt string
		want                     string
	}{
		{"nothing known", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "", "", "",
			"herald devel\ncommit: unknown\nbuilt: unknown\n"},
		{"from Go's build information", recorded, "", "", "",
			"herald v1.2.3\ncommit: 0123abcd (with changes not committed)\nbuilt from a commit of: 2026-01-02T03:04:05Z\n"},
		{"from -ldflags", recorded, "v2.0.0", "feedbeef", "2026-02-03T00:00:00Z",
			"herald v2.0.0\ncommit: feedbeef\nbuilt: 2026-02-03T00:00:00Z\n"},
	} {
		if got := buildInfoOf(c.bi).override(c.version, c.commit, c.builtAt).String(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
