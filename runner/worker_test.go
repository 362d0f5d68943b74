package runner

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/workload"
)

// An event the coordinator cannot read is a hole in the history: it must be
// reported (run-end then carries it, and the verdict cannot be safe), not
// only logged.
func TestUnreadableWorkerEventIsReported(t *testing.T) {
	t.Parallel()
	var got []history.Event
	w, err := startWorker([]string{"sh", "-c", `read cfg; echo '{"time":1,"kind":"invoke","f":"acquire"}' >&3; echo 'not json' >&3`},
		workload.Config{Client: 0}, filepath.Join(t.TempDir(), "w.log"), func(e history.Event) { got = append(got, e) }, newTracker())
	if err != nil {
		t.Fatal(err)
	}
	<-w.done
	if len(got) != 2 || got[0].Kind != history.Invoke || got[1].Kind != history.WorkerExit {
		t.Errorf("recorded %+v, want the readable invoke and the exit", got)
	}
	if !strings.Contains(w.lostEvents, "unreadable event") {
		t.Errorf("lostEvents = %q, want the unreadable event reported", w.lostEvents)
	}
}

// RunFor gives a starved client the CPU it is meant to get between two
// stops, on a machine that is busy: a client that keeps a CPU busy (a
// shell's endless loop, in a child of the worker as an adapter is) runs
// until it has had `on` of CPU time, beside two spinning processes per
// core; a client with nothing to do (sleeping) is stopped again once `on`
// has passed.
func TestRunForGivesAStarvedClientItsCPU(t *testing.T) {
	t.Parallel()
	spin := func() *exec.Cmd {
		cmd := exec.Command("sh", "-c", "sh -c 'while :; do :; done'")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
		return cmd
	}
	for range 2 * runtime.NumCPU() {
		spin()
	}
	const on = 10 * time.Millisecond
	for _, tc := range []struct {
		name string
		cmd  *exec.Cmd
		busy bool
	}{
		{"busy", spin(), true},
		{"idle", func() *exec.Cmd {
			cmd := exec.Command("sleep", "60")
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			return cmd
		}(), false},
	} {
		w := &workerProc{client: 0, cmd: tc.cmd}
		// The busy client's loop runs in a child: wait until it is there.
		for tc.busy && len(w.threads()) < 2 {
			time.Sleep(time.Millisecond)
		}
		e := &env{r: &run{workers: []*workerProc{w}}}
		served := 0
		for range 20 {
			if err := w.signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
			before, _ := cpuUse(w.threads())
			ok, err := e.RunFor(0, on, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			after, _ := cpuUse(w.threads())
			if !ok {
				continue // the machine kept it off the CPU a whole second
			}
			served++
			if tc.busy && after-before < on {
				t.Errorf("%s client: served, but it had %v of CPU time, less than %v", tc.name, after-before, on)
			}
		}
		if served == 0 {
			t.Errorf("%s client: none of 20 runs served within a second", tc.name)
		}
		w.signal(syscall.SIGCONT)
	}
}
