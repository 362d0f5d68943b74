// Package procs lists processes from /proc: this process's children, for
// the tests that check a run left no redis-server or redis-sentinel of its
// own running, and a process group's members.
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
	each(func(pid, comm string, rest []string) {
		if len(rest) > 1 && rest[1] == me && strings.HasPrefix(comm, prefix) {
			out = append(out, comm+" "+pid)
		}
	})
	return out
}

// Group lists the processes of process group pgid, its leader among them.
func Group(pgid int) []int {
	var out []int
	g := strconv.Itoa(pgid)
	each(func(pid, _ string, rest []string) {
		if len(rest) > 2 && rest[2] == g {
			if n, err := strconv.Atoi(pid); err == nil {
				out = append(out, n)
			}
		}
	})
	return out
}

// each calls f with every process's pid, command name and the fields of
// its /proc stat after the name (state, ppid, pgrp, …).
func each(f func(pid, comm string, rest []string)) {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
		s := string(b)
		open, shut := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || shut < open {
			continue
		}
		f(filepath.Base(filepath.Dir(st)), s[open+1:shut], strings.Fields(s[shut+1:]))
	}
}
