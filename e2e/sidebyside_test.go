package e2e

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/heraldstreams/herald/internal/testbin"
	"github.com/heraldstreams/herald/internal/testenv"
)

// TestSideBySideScript runs scripts/side-by-side.sh in its quick mode with
// a second Herald as the peer (behind a wrapper that takes the peer's
// `--host --port --data-dir` arguments), so the script cannot rot: every
// kind of workload must give a figure for both servers and a ratio, and the
// median table must list it.
func TestSideBySideScript(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs scripts/side-by-side.sh, which needs bash and curl and builds herald and herald-bench; run without -short for this one")
	}
	t.Parallel()
	testenv.NeedCommand(t, "curl", "install curl (Debian: apt-get install -y curl)")
	testenv.NeedCommand(t, "bash", "install bash")
	herald := testbin.Build(t, "../cmd/herald", false)
	dir := t.TempDir()
	peer := filepath.Join(dir, "peer")
	wrapper := `#!/usr/bin/env bash
# A Durable Streams server with the peer's arguments: --host H --port P --data-dir D [--tag T].
set -euo pipefail
while [ $# -gt 0 ]; do
  case $1 in
    --host) host=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --data-dir) data=$2; shift 2 ;;
    --tag) echo "$2" > "` + filepath.Join(dir, "tag") + `"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
exec "` + herald + `" serve --addr "$host:$port" --data-dir "$data" --log-level warn
`
	if err := os.WriteFile(peer, []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	workloads := []string{"append_1_c16", "read_c1", "long_poll_readers", "sse_readers", "rss"}
	cmd := exec.Command("../scripts/side-by-side.sh", peer, "1")
	cmd.Env = append(os.Environ(), "HERALD_BENCH_QUICK=1",
		"HERALD_BENCH_PORT="+strconv.Itoa(freeTCPPort(t)), "PEER_PORT="+strconv.Itoa(freeTCPPort(t)),
		"PEER_ARGS=--tag passed", "SIDE_BY_SIDE_RESULTS="+filepath.Join(dir, "results.jsonl"),
		"SIDE_BY_SIDE_ONLY="+strings.Join(workloads, "|"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("side-by-side.sh: %v\n%s", err, out)
	}
	if tag, err := os.ReadFile(filepath.Join(dir, "tag")); err != nil || strings.TrimSpace(string(tag)) != "passed" {
		t.Errorf("PEER_ARGS did not reach the peer: %q, %v", tag, err)
	}
	seen := map[string]bool{}
	table := ""
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "|") {
			table += line + "\n"
			continue
		}
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var r struct {
			Workload, Metric string
			Herald, Peer     *float64
			Ratio            *float64
			Run              int
			Test, Better     string
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		seen[r.Workload] = true
		if r.Test != "side-by-side" || r.Run != 1 || r.Herald == nil || r.Peer == nil {
			t.Errorf("incomplete line: %s", line)
		}
		switch r.Metric {
		case "missing":
			if *r.Herald != 0 || *r.Peer != 0 {
				t.Errorf("a live reader missed appends: %s", line)
			}
		case "kb_per_stream": // a difference of two RSS figures: may be below zero in so short a run
		default:
			if *r.Herald <= 0 || *r.Peer <= 0 || r.Ratio == nil || *r.Ratio <= 0 {
				t.Errorf("no figure or ratio: %s", line)
			}
		}
	}
	for _, w := range workloads {
		if !seen[w] {
			t.Errorf("no JSON line for %s in:\n%s", w, out)
		}
		if !strings.Contains(table, "| "+w+" |") {
			t.Errorf("the median table lacks %s:\n%s", w, table)
		}
	}
	if seen["append_1_c1"] {
		t.Errorf("SIDE_BY_SIDE_ONLY did not leave out append_1_c1")
	}
}

// freeTCPPort returns a loopback port that was free a moment ago.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
