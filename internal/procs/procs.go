// Package procs lists this process's children from /proc, for the tests that
// check a run left no redis-server or redis-sentinel of its own running.
package procs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Children names ("comm pid") the processes whose parent is this process and
// whose command name starts with prefix. Other processes on the machine (other
// runs' servers) are not counted.
func Children(prefix string) []string {
	var out []string
	me := strconv.Itoa(os.Getpid())
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		s := string(b)
		open, shut := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || shut < open {
			continue
		}
		comm, rest := s[open+1:shut], strings.Fields(s[shut+1:])
		if len(rest) > 1 && rest[1] == me && strings.HasPrefix(comm, prefix) {
			out = append(out, comm+" "+filepath.Base(filepath.Dir(st)))
		}
	}
	return out
}
