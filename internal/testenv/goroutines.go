package testenv

import (
	"runtime"
	"strings"
)

// Goroutines counts the process's goroutines whose stack holds substr (a
// function's name): a test that is not parallel checks with it which
// goroutines a service keeps, an idle one's workers for instance.
func Goroutines(substr string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	n := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, substr) {
			n++
		}
	}
	return n
}
