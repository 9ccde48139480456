package e2e

import (
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// herald backup, run while Herald takes appends, holds every append
// acknowledged before it began: restored into a fresh directory, a new
// Herald serves them all. The KEK is kept apart from the data directory,
// as docs/operations.md says, and given to both.
func TestBackupUnderWriteLoadAndRestore(t *testing.T) {
	t.Parallel()
	bin := heraldBinary(t)
	kek := []string{"--kek-file", filepath.Join(t.TempDir(), "herald.kek")}
	data := t.TempDir()
	s := startHerald(t, data, kek...)
	const writers = 4
	for w := range writers {
		if resp, _ := do(t, "PUT", fmt.Sprintf("%s/load/w%d", s.base, w), map[string]string{"Content-Type": "text/plain"}, ""); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create: %d", resp.StatusCode)
		}
	}
	var mu sync.Mutex
	acked := make([]int, writers)
	stop := make(chan struct{})
	warm := make(chan struct{}, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				resp, _, err := tryDo(t.Context(), "POST", fmt.Sprintf("%s/load/w%d", s.base, w), map[string]string{"Content-Type": "text/plain"}, fmt.Sprintf("%d,", n))
				if err != nil || resp.StatusCode/100 != 2 {
					t.Errorf("append %d: %v %v", n, err, resp)
					return
				}
				mu.Lock()
				acked[w] = n + 1
				mu.Unlock()
				if n == 20 {
					warm <- struct{}{}
				}
			}
		}()
	}
	for range writers {
		<-warm
	}
	mu.Lock()
	before := append([]int(nil), acked...)
	mu.Unlock()
	backup := filepath.Join(t.TempDir(), "herald.db")
	out, err := exec.Command(bin, "backup", "--data-dir", data, backup).CombinedOutput()
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("herald backup: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "restore", "--data-dir", data, backup).CombinedOutput(); err == nil || !strings.Contains(string(out), "in use") {
		t.Fatalf("restore into the running Herald's directory: %v\n%s", err, out)
	}
	if err := s.terminate(30 * time.Second); err != nil {
		t.Fatal(err)
	}

	restored := t.TempDir()
	if out, err := exec.Command(bin, "restore", "--data-dir", restored, backup).CombinedOutput(); err != nil {
		t.Fatalf("herald restore: %v\n%s", err, out)
	}
	r := startHerald(t, restored, kek...)
	for w, n := range before {
		resp, body := do(t, "GET", fmt.Sprintf("%s/load/w%d?offset=-1", r.base, w), nil, "")
		var want strings.Builder
		for i := range n {
			fmt.Fprintf(&want, "%d,", i)
		}
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(body, want.String()) {
			t.Errorf("writer %d: %d %q, want its %d appends acknowledged before the backup", w, resp.StatusCode, body, n)
		}
	}
}
