package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// watchRunQueue records, as stall events of the lock nodes, every time a
// node's server was ready to run but waited at least threshold for a CPU:
// the kernel counts that wait per thread (/proc/PID/task/TID/schedstat,
// its second field), so a reply that came late because the machine was
// busy is measured, not guessed from its being slower than usual. A server
// that is slow on its own (an fsync, its own locks, a session set-up) does
// not wait on the run queue, and its slowness stays the lock's.
//
// Every period it reads the run-queue wait of each thread of each node's
// process and of that process's children (a PostgreSQL backend), and
// records the largest increase of any one thread: threads that wait side by
// side delay a reply once. The wait is placed at the end of the period in
// which it was counted. Nodes whose process is not visible (a container
// without a host pid) are skipped. It runs until done is closed.
func watchRunQueue(nodes []cluster.Node, threshold time.Duration, done <-chan struct{}, emit func(history.Event)) {
	// The kernel's count is cumulative: a longer period loses no wait, it
	// only places it less precisely, and it keeps the reads (every thread
	// of every server) cheap beside the proxies this process also runs.
	period := max(threshold, 25*time.Millisecond)
	t := time.NewTicker(period)
	defer t.Stop()
	type watched struct {
		name string
		pid  int
		tids []string // "/proc/PID/task/TID/schedstat" of the process and its children
		wait map[string]int64
	}
	var all []*watched
	refresh := func() {
		old := map[string]*watched{}
		for _, w := range all {
			old[w.name] = w
		}
		all = all[:0]
		for _, n := range nodes {
			p, ok := n.(interface{ Pid() int })
			if !ok {
				continue
			}
			pid := p.Pid()
			if pid <= 0 {
				continue
			}
			w := &watched{name: n.Name(), pid: pid, wait: map[string]int64{}}
			if o := old[w.name]; o != nil && o.pid == pid {
				w.wait = o.wait
			}
			w.tids = schedstatFiles(pid)
			all = append(all, w)
		}
	}
	refresh()
	lastRefresh := time.Now()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		if time.Since(lastRefresh) > 2*time.Second {
			refresh()
			lastRefresh = time.Now()
		}
		for _, w := range all {
			var worst int64
			for _, f := range w.tids {
				v, ok := runQueueWait(f)
				if !ok {
					continue
				}
				if before, seen := w.wait[f]; seen && v-before > worst {
					worst = v - before
				}
				w.wait[f] = v
			}
			if worst >= threshold.Nanoseconds() {
				emit(history.Event{Time: history.Now(), Kind: history.Stall, Client: history.NoClient, Node: w.name, StallNs: worst})
			}
		}
	}
}

// schedstatFiles lists the schedstat files of every thread of pid and of
// its direct children.
func schedstatFiles(pid int) []string {
	var out []string
	for _, p := range append([]int{pid}, cluster.Children(pid)...) {
		tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(p) + "/task/*/schedstat")
		out = append(out, tasks...)
	}
	return out
}

// runQueueWait reads a thread's total time spent waiting on a run queue
// (ns): the second field of its schedstat.
func runQueueWait(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(f[1]), 10, 64)
	return v, err == nil
}
