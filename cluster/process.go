package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	// It builds only for Linux: a build for another system stops there.
	_ "github.com/lockchaos/lockchaos/internal/linuxonly"
)

// process is a server the coordinator started as its child: a Redis node, a
// sentinel, an etcd member, a ZooKeeper server, a postmaster. It is started
// again in place by a restart, so it is guarded by its own mutex; its zero
// value is a process never started.
//
// On the docker backend a store's member runs its command in a container
// instead (box): the same program, arguments, directory and log, and a
// process on this machine all the same, which start finds by its host pid,
// so that signals, kills and /proc reach it as they reach a child.
type process struct {
	box *memberBox // nil: a child of ours

	mu     sync.Mutex
	proc   *os.Process   // the latest start; nil if never started
	exited chan struct{} // closed once it has exited (and its container is gone)
}

// serverAttr adds to a (nil: a new one) what every server child of the
// coordinator needs, keeping what the caller set (a Credential, say). Its
// own process group keeps a terminal's Ctrl-C away from the server: the
// coordinator stops its servers itself, in order, after keeping their
// logs. Pdeathsig (unless the caller chose another signal) kills the
// server if the coordinator dies without cleaning up; Go sets it after
// the credentials, whose change would clear it.
func serverAttr(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	if a == nil {
		a = &syscall.SysProcAttr{}
	}
	a.Setpgid = true
	if a.Pdeathsig == 0 {
		a.Pdeathsig = syscall.SIGKILL
	}
	return a
}

// start starts cmd (with serverAttr) as this process, replacing one that
// was killed, and waits for it in the background so that done and signal
// know when it has exited.
func (p *process) start(cmd *exec.Cmd) error {
	if p.box != nil {
		proc, exited, err := p.box.run(cmd)
		if err != nil {
			return err
		}
		p.mu.Lock()
		p.proc, p.exited = proc, exited
		p.mu.Unlock()
		return nil
	}
	cmd.SysProcAttr = serverAttr(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	p.mu.Lock()
	p.proc, p.exited = cmd.Process, exited
	p.mu.Unlock()
	return nil
}

// state is the pid of the latest start and a channel closed once that
// process has exited; 0 and nil if it was never started.
func (p *process) state() (pid int, done <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		return 0, nil
	}
	return p.proc.Pid, p.exited
}

// pid is the process id of the latest start (0 if never started).
func (p *process) pid() int {
	pid, _ := p.state()
	return pid
}

// done is closed once the latest start has exited (nil if never started:
// a wait on it blocks).
func (p *process) done() <-chan struct{} {
	_, done := p.state()
	return done
}

// signal sends sig to this process alone, by its pid. what names the
// server in the error ("redis node n0"); a process that has exited (killed,
// not yet restarted) or was never started gives ErrNotRunning.
func (p *process) signal(what string, sig syscall.Signal) error {
	return p.signalWith(what, sig, func(pr *os.Process) error { return pr.Signal(sig) })
}

// signalWith is signal with send doing the sending, for a server of more
// than one process (PostgreSQL's). The process cannot be restarted while
// send runs; send's os.ErrProcessDone and ESRCH mean ErrNotRunning.
func (p *process) signalWith(what string, sig syscall.Signal, send func(*os.Process) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		return fmt.Errorf("signal %v to %s: %w", sig, what, ErrNotRunning)
	}
	pid := p.proc.Pid
	select {
	case <-p.exited:
		return fmt.Errorf("signal %v to %s (pid %d): %w", sig, what, pid, ErrNotRunning)
	default:
	}
	if err := send(p.proc); err != nil {
		if errors.Is(err, os.ErrProcessDone) || errors.Is(err, syscall.ESRCH) {
			err = ErrNotRunning
		}
		return fmt.Errorf("signal %v to %s (pid %d): %w", sig, what, pid, err)
	}
	return nil
}

// kill sends SIGKILL (which also ends a SIGSTOPped process) and waits
// until the process has exited; nothing if it was never started.
func (p *process) kill() {
	p.mu.Lock()
	proc, exited := p.proc, p.exited
	p.mu.Unlock()
	if proc == nil {
		return
	}
	_ = proc.Kill()
	if p.box != nil {
		p.box.awaitKilled(proc.Pid, exited)
	}
	<-exited
}

// Children lists the live direct children of process pid (a postmaster's
// backends), found by their parent in /proc: the kernel may not offer
// /proc/PID/task/TID/children.
func Children(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readProcStat(c); ok && st.ppid == pid && st.state != 'Z' {
			out = append(out, c)
		}
	}
	return out
}
