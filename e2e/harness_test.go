// Package e2e tests the real herald binary: built once, started on a
// loopback port, driven over HTTP, killed and restarted.
package e2e

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldstreams/herald/internal/testbin"
)

// TestMain removes the programs the tests built.
func TestMain(m *testing.M) { os.Exit(testbin.Main(m)) }

// buildBinary builds a main package once per test run and returns the
// binary's path: with the race detector, except under -short, where the
// quick check trades it for speed (the full suite keeps it).
func buildBinary(t *testing.T, pkg string) string {
	t.Helper()
	return testbin.Build(t, pkg, !testing.Short())
}

// heraldBinary builds ./cmd/herald once per test run.
func heraldBinary(t *testing.T) string { return buildBinary(t, "../cmd/herald") }

// server is one running herald process.
type server struct {
	t    *testing.T
	cmd  *exec.Cmd
	base string
	done chan error
	logs *logTail
}

// startHerald runs `herald serve` on dataDir and waits until it is ready.
func startHerald(t *testing.T, dataDir string, extra ...string) *server {
	t.Helper()
	return startHeraldBinary(t, heraldBinary(t), dataDir, extra...)
}

// startHeraldBinary is startHerald with a herald binary of the caller's.
func startHeraldBinary(t *testing.T, bin, dataDir string, extra ...string) *server {
	t.Helper()
	return startHeraldEnv(t, bin, nil, dataDir, extra...)
}

// startHeraldEnv is startHeraldBinary with environment variables
// ("NAME=value") added to the process's.
func startHeraldEnv(t *testing.T, bin string, env []string, dataDir string, extra ...string) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve", "--addr", addr, "--data-dir", dataDir, "--long-poll-timeout", "2s"}, extra...)
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	logs := &logTail{}
	cmd.Stdout = logs
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{t: t, cmd: cmd, base: "http://" + addr, done: make(chan error, 1), logs: logs}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			if err := s.cmd.Process.Kill(); err == nil {
				<-s.done
			}
		}
	})
	// The readiness probe keeps no connection open: a test that counts
	// the server's connections finds none of it, and needs not close the
	// idle connections of the pool every parallel test shares.
	probe := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := probe.Get(s.base + "/_herald/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case err := <-s.done:
			t.Fatalf("herald exited before it was ready: %v\n%s", err, logs)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("herald not ready after 30s\n%s", logs)
		}
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (s *server) kill() {
	if err := s.cmd.Process.Kill(); err != nil {
		s.t.Fatal(err)
	}
	<-s.done
}

// terminate sends SIGTERM and returns the exit error.
func (s *server) terminate(timeout time.Duration) error {
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil {
		s.t.Fatal(err)
	}
	select {
	case err := <-s.done:
		return err
	case <-time.After(timeout):
		s.t.Fatalf("herald did not stop within %v\n%s", timeout, s.logs)
		return nil
	}
}

// do sends one request and returns the response with its body read.
func do(t *testing.T, method, url string, hdr map[string]string, body string) (*http.Response, string) {
	t.Helper()
	resp, b, err := tryDo(context.Background(), method, url, hdr, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp, b
}

func tryDo(ctx context.Context, method, url string, hdr map[string]string, body string) (*http.Response, string, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// logTail keeps the process output for failure messages.
type logTail struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *logTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf.Len() < 1<<20 {
		l.buf.Write(p)
	}
	return len(p), nil
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out strings.Builder
	sc := bufio.NewScanner(strings.NewReader(l.buf.String()))
	for sc.Scan() {
		out.WriteString("  herald: " + sc.Text() + "\n")
	}
	return out.String()
}

// jsonBody is the header of a request with a JSON body: Herald's API
// refuses others with 415.
var jsonBody = map[string]string{"Content-Type": "application/json"}
