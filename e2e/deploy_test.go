package e2e

import (
	"bufio"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/heraldstreams/herald/internal/testenv"
)

// scripts/release.sh builds a static binary that prints the version,
// commit and build time it was given, with its SHA-256 sum listed.
func TestReleaseScript(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds herald again from nothing (static, -trimpath: none of the test build is reused), minutes of CPU; run without -short for this one")
	}
	t.Parallel()
	dist := t.TempDir()
	target := runtime.GOOS + "/" + runtime.GOARCH
	cmd := exec.Command("../scripts/release.sh", target)
	cmd.Env = append(os.Environ(), "DIST="+dist, "VERSION=v0.0.0-test", "COMMIT=0123456789abcdef", "SOURCE_DATE_EPOCH=1767225600")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, out)
	}
	name := "herald-v0.0.0-test-" + runtime.GOOS + "-" + runtime.GOARCH
	bin := filepath.Join(dist, name)
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", name, err, out)
	}
	if want := "herald v0.0.0-test\ncommit: 0123456789abcdef\nbuilt: 2026-01-01T00:00:00Z\n"; string(out) != want {
		t.Errorf("version printed %q, want %q", out, want)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked", name)
		}
	}
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if want := hex.EncodeToString(sum[:]) + "  " + name + "\n"; string(sums) != want {
		t.Errorf("SHA256SUMS is %q, want %q", sums, want)
	}
}

// The Dockerfile is multi-stage, builds a static binary, and runs it on
// an empty image as a user that is not root, with /data a volume and a
// health check by the binary itself. (scripts/image.sh builds it.)
func TestDockerfile(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var froms []string
	final := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		word, rest, _ := strings.Cut(line, " ")
		switch word {
		case "FROM":
			froms = append(froms, rest)
			clear(final)
		case "USER", "VOLUME", "HEALTHCHECK", "ENTRYPOINT":
			final[word] = rest
		}
	}
	if len(froms) != 2 || froms[len(froms)-1] != "scratch" {
		t.Errorf("stages %q: want a builder stage, then scratch", froms)
	}
	if !strings.Contains(string(b), "CGO_ENABLED=0 go build") {
		t.Error("the binary is not built static (CGO_ENABLED=0)")
	}
	if u := final["USER"]; u == "" || strings.HasPrefix(u, "0") || strings.HasPrefix(u, "root") {
		t.Errorf("final stage USER %q", u)
	}
	if final["VOLUME"] != "/data" {
		t.Errorf("final stage VOLUME %q", final["VOLUME"])
	}
	if !strings.Contains(final["HEALTHCHECK"], `CMD ["/herald", "healthcheck"]`) {
		t.Errorf("final stage HEALTHCHECK %q", final["HEALTHCHECK"])
	}
	if final["ENTRYPOINT"] != `["/herald"]` {
		t.Errorf("final stage ENTRYPOINT %q", final["ENTRYPOINT"])
	}
}

// The systemd unit of docs/operations.md passes systemd-analyze verify
// without a warning (an unknown or misspelt option is only a warning).
func TestSystemdUnitVerifies(t *testing.T) {
	t.Parallel()
	analyze := testenv.NeedCommand(t, "systemd-analyze", "install it (Debian: apt-get install -y systemd)")
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)### systemd\n.*?```ini\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("no unit under ### systemd in docs/operations.md")
	}
	// verify checks that ExecStart's binary exists and is executable:
	// any will do (this test's).
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	unit := strings.ReplaceAll(string(m[1]), "/usr/local/bin/herald", exe)
	file := filepath.Join(t.TempDir(), "herald.service")
	if err := os.WriteFile(file, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", file).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
