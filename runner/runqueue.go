package runner

import (
	"bytes"
	"fmt"
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
//
// An adapter lock's process (a JVM, a Node or Python interpreter beside
// each worker) is watched the same way, its waits recorded as stalls of its
// client: a watchdog thread that waited for a CPU past its lease is the
// machine's doing, as a paused worker is, not the lock's.
func watchRunQueue(targets []runTarget, threshold time.Duration, done <-chan struct{}, emit func(history.Event)) {
	// The kernel's count is cumulative: a longer period loses no wait, it
	// only places it less precisely, and it keeps the reads (every thread
	// of every server) cheap beside the proxies this process also runs.
	period := max(threshold, 25*time.Millisecond)
	t := time.NewTicker(period)
	defer t.Stop()
	type watched struct {
		target runTarget
		name   string
		pid    int
		tids   []string // "/proc/PID/task/TID/schedstat" of the process and its children
		wait   map[string]int64
	}
	var all []*watched
	refresh := func() {
		old := map[string]*watched{}
		for _, w := range all {
			old[w.name] = w
		}
		all = all[:0]
		for _, n := range targets {
			pid := n.pid()
			if pid <= 0 {
				continue
			}
			w := &watched{target: n, name: n.name, pid: pid, wait: map[string]int64{}}
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
				if w.target.client >= 0 {
					emit(history.Event{Time: history.Now(), Kind: history.Stall, Client: w.target.client, StallNs: worst, Queued: true,
						Message: "its adapter process was ready to run but waited for a CPU"})
				} else {
					emit(history.Event{Time: history.Now(), Kind: history.Stall, Client: history.NoClient, Node: w.name, StallNs: worst, Queued: true})
				}
			}
		}
	}
}

// runTarget is a process whose run-queue wait is watched: a lock node's
// server (client NoClient), or a client's adapter process (client ≥ 0).
type runTarget struct {
	name   string
	client int
	pid    func() int // 0 while there is none
}

// serverTargets are the lock nodes' servers that show their host pid.
func serverTargets(nodes []cluster.Node) []runTarget {
	var out []runTarget
	for _, n := range nodes {
		if p, ok := n.(interface{ Pid() int }); ok {
			out = append(out, runTarget{name: n.Name(), client: history.NoClient, pid: p.Pid})
		}
	}
	return out
}

// adapterTargets are the workers' adapter processes (their children).
func adapterTargets(workers []*workerProc) []runTarget {
	var out []runTarget
	for _, w := range workers {
		pid := w.cmd.Process.Pid
		out = append(out, runTarget{name: fmt.Sprintf("client-%d-adapter", w.client), client: w.client, pid: func() int {
			if kids := cluster.Children(pid); len(kids) > 0 {
				return kids[0]
			}
			return 0
		}})
	}
	return out
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
