package e2e

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The chaos test kills a replica that holds deliveries in flight. Which
// replica sent a request the receiver holds is read from Linux's socket
// tables: the request's remote port is a socket of the sender process.

// socketInodes returns the inodes of the sockets process pid holds.
func socketInodes(pid int) map[string]bool {
	out := map[string]bool{}
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return out // gone
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(dir, fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if inode, ok := strings.CutPrefix(link, "socket:["); ok {
			out[strings.TrimSuffix(inode, "]")] = true
		}
	}
	return out
}

// portInodes maps the local port of every TCP socket to its inode.
func portInodes() map[int]string {
	out := map[int]string{}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 {
				continue
			}
			_, hexPort, ok := strings.Cut(fields[1], ":")
			port, err := strconv.ParseInt(hexPort, 16, 32)
			if !ok || err != nil {
				continue
			}
			out[int(port)] = fields[9]
		}
		_ = f.Close() // read only
	}
	return out
}

// sentBy returns the events of the held requests that process pid sent.
func sentBy(pid int, held []heldRequest) []string {
	mine := socketInodes(pid)
	inodes := portInodes()
	var ids []string
	for _, h := range held {
		if mine[inodes[h.port]] {
			ids = append(ids, h.id)
		}
	}
	return ids
}
