package runner

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// A lock node kept off the CPU by processes of higher priority on its core
// is measured waiting on the run queue, and recorded as a stall of that
// node: the kernel's count, not a guess from a slow reply. (Not beside the
// parallel tests: its hogs would starve their runs too.)
func TestRunQueueWaitOfALockNodeIsRecorded(t *testing.T) {
	if unix.Getuid() != 0 {
		t.Skip("needs root to run the hogs at nice -20")
	}
	local, err := cluster.NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	n, err := local.StartNode(context.Background(), cluster.NodeSpec{Name: "n0"})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	pid := n.(interface{ Pid() int }).Pid()
	var one unix.CPUSet
	one.Set(0)
	for _, f := range schedstatFiles(pid) {
		tid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		if err := unix.SchedSetaffinity(tid, &one); err != nil {
			t.Fatalf("pin thread %d of redis-server to CPU 0: %v", tid, err)
		}
	}
	// Three spinning processes of the highest priority on the same core.
	for range 3 {
		hog := exec.Command("nice", "-n", "-20", "taskset", "-c", "0", "sh", "-c", "while :; do :; done")
		hog.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := hog.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = syscall.Kill(-hog.Process.Pid, syscall.SIGKILL); _ = hog.Wait() }()
	}

	var (
		mu     sync.Mutex
		stalls []history.Event
	)
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		watchRunQueue(serverTargets([]cluster.Node{n}), 10*time.Millisecond, done, func(e history.Event) {
			mu.Lock()
			stalls = append(stalls, e)
			mu.Unlock()
		})
	}()
	// Keep the server busy answering for a while.
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", n.Addr(), time.Second)
		if err != nil {
			continue
		}
		_ = c.SetDeadline(time.Now().Add(time.Second))
		_, _ = c.Write([]byte("PING\r\n"))
		_, _ = c.Read(make([]byte, 16))
		c.Close()
	}
	close(done)
	<-watched
	mu.Lock()
	defer mu.Unlock()
	var worst int64
	for _, e := range stalls {
		if e.Kind != history.Stall || e.Node != "n0" || e.Client != history.NoClient {
			t.Errorf("not a stall of node n0: %+v", e)
		}
		worst = max(worst, e.StallNs)
	}
	if worst < (10 * time.Millisecond).Nanoseconds() {
		t.Errorf("redis-server pinned beside three nice -20 hogs was never seen waiting 10 ms for its CPU (%d stalls, the longest %v)", len(stalls), time.Duration(worst))
	}
}
