package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/proxy"
	"github.com/lockchaos/lockchaos/workload"
)

// env gives the nemeses their handles on this run.
type env struct{ r *run }

// The run gives the nemeses every capability.
var (
	_ nemesis.Env          = (*env)(nil)
	_ nemesis.Processes    = (*env)(nil)
	_ nemesis.Links        = (*env)(nil)
	_ nemesis.Replication  = (*env)(nil)
	_ nemesis.Clocks       = (*env)(nil)
	_ nemesis.ClientClocks = (*env)(nil)
)

func (e *env) TTL() time.Duration   { return e.r.cfg.TTL }
func (e *env) Lease() time.Duration { return e.r.lease }
func (e *env) Hold() time.Duration  { return e.r.cfg.Hold }
func (e *env) Rand() *rand.Rand     { return e.r.rng }
func (e *env) Holders() []nemesis.Holding {
	return e.r.trk.holders()
}
func (e *env) Await(ctx context.Context, cond func(nemesis.View) bool) error {
	return e.r.trk.await(ctx, cond)
}
func (e *env) Acquiring(d time.Duration) []int { return e.r.trk.acquiringFor(d) }
func (e *env) Proxies() *proxy.Proxies         { return e.r.proxies }
func (e *env) LockNodes() []cluster.Node       { return e.r.currentLockNodes() }
func (e *env) Topology() nemesis.Topology      { return e.r.shape }
func (e *env) Ensemble() cluster.Ensemble      { return e.r.topo.ensemble }

// Groups, Sentinels and Clock are Redis's (cluster.Replicated): none for
// another store.
func (e *env) Groups() []*cluster.Group {
	if rep := e.r.topo.replicated(); rep != nil {
		return rep.Groups()
	}
	return nil
}

func (e *env) Clock(n cluster.Node) *cluster.Clock {
	if rep := e.r.topo.replicated(); rep != nil {
		return rep.Clock(n)
	}
	return nil
}

// ClientClock is client c's clock shim control (nemesis.ClientClocks): nil
// when its lock runs without the shim.
func (e *env) ClientClock(c int) *cluster.Clock {
	if c < 0 || c >= len(e.r.clientClocks) {
		return nil
	}
	return e.r.clientClocks[c]
}

// ShimLoaded looks for the clock shim in the memory maps of the processes
// of client c's process group other than its worker (its adapter's), and
// for client c's clock file in that process's environment.
func (e *env) ShimLoaded(c int) bool {
	w, err := e.worker(c)
	clock := e.ClientClock(c)
	if err != nil || clock == nil {
		return false
	}
	return w.shimActive(filepath.Base(e.r.clientShim), clock.Path())
}

func (e *env) Sentinels() []string {
	var out []string
	for _, s := range e.r.sentinels() {
		out = append(out, s.Addr())
	}
	return out
}

// Stretch sends the worker its stretch line and waits for it to say it
// took it: from then on its holds of key stay inside (workload/control.go).
func (e *env) Stretch(ctx context.Context, c int, key string, max, rest time.Duration, stop bool) (int64, error) {
	w, err := e.worker(c)
	if err != nil {
		return 0, err
	}
	sent := history.Now()
	e.r.trk.ask(c, key)
	if err := w.send(workload.StretchCommand(key, max, rest, stop)); err != nil {
		e.r.trk.ask(c, "")
		if errors.Is(err, errExited) {
			return 0, fmt.Errorf("%w: client %d has exited", nemesis.ErrNoTarget, c)
		}
		return 0, err
	}
	// A live worker answers at once, or, asked to rest, once it has
	// finished what it was doing (a hold, an acquire) and rested; one that
	// exits never does.
	wait := 10 * time.Second
	if rest > 0 {
		c := e.r.cfg
		wait += rest + c.TTL + c.Hold + c.Wait + 2*c.OpTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	at, err := e.r.trk.awaitStretch(ctx, c, key, sent)
	if err != nil {
		e.r.trk.ask(c, "")
		return 0, fmt.Errorf("%w: client %d did not take the stretch of %s: %v", nemesis.ErrNoTarget, c, key, err)
	}
	return at, nil
}

func (e *env) Unstretch(c int) error {
	w, err := e.worker(c)
	if err != nil {
		return err
	}
	e.r.trk.ask(c, "")
	if err := w.send(workload.CmdUnstretch); err != nil && !errors.Is(err, errExited) {
		return err
	}
	return nil
}

// CancelNext asks client c to cancel its next release in flight, after
// from its invoke, and returns when it asked (history time).
func (e *env) CancelNext(c int, op string, after time.Duration) (int64, error) {
	w, err := e.worker(c)
	if err != nil {
		return 0, err
	}
	sent := history.Now()
	if err := w.send(workload.CancelCommand(op, after)); err != nil {
		if errors.Is(err, errExited) {
			return 0, fmt.Errorf("%w: client %d has exited", nemesis.ErrNoTarget, c)
		}
		return 0, err
	}
	return sent, nil
}

// WorkloadEnded says when the workers were asked to stop, and whether
// that was early, at the run's first violation (--stop-on-violation).
func (e *env) WorkloadEnded() (int64, bool) {
	at := e.r.workloadEnded.Load()
	return at, at != 0 && e.r.stoppedEarly
}

func (e *env) worker(c int) (*workerProc, error) {
	if c < 0 || c >= len(e.r.workers) {
		return nil, fmt.Errorf("no client %d", c)
	}
	return e.r.workers[c], nil
}

// Pause stops client c and returns once it is stopped: kill(2) returns
// before every thread of the process has stopped, and a thread that still
// ran could act on a line sent after the pause (the stretch's withdrawal).
func (e *env) Pause(c int) error {
	if err := e.sig(c, syscall.SIGSTOP, true); err != nil {
		return err
	}
	w, _ := e.worker(c)
	return w.awaitStopped(2 * time.Second)
}

func (e *env) Resume(c int) error { return e.sig(c, syscall.SIGCONT, false) }

func (e *env) RunFor(c int, on, most time.Duration) (bool, error) {
	w, err := e.worker(c)
	if err != nil {
		return true, err
	}
	threads := w.threads()
	ran0, _ := cpuUse(threads)
	if err := e.Resume(c); err != nil {
		return true, err
	}
	began := time.Now()
	time.Sleep(on)
	for {
		ran, runnable := cpuUse(threads)
		if !runnable || ran-ran0 >= on {
			return true, nil
		}
		if time.Since(began) >= most {
			return false, nil
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// sig signals client c. A client that exited is no target for a fault that
// starts (ErrNoTarget: the nemesis aims again), and nothing to undo for one
// that heals.
func (e *env) sig(c int, s syscall.Signal, starts bool) error {
	w, err := e.worker(c)
	if err != nil {
		return err
	}
	if err := w.signal(s); err != nil {
		if errors.Is(err, os.ErrProcessDone) {
			err = errExited // it exited, and its exit is not read yet
		}
		if errors.Is(err, errExited) && starts {
			return nemesis.ErrNoTarget // it exited between seeing it and aiming
		}
		if errors.Is(err, errExited) {
			return nil // nothing left to resume
		}
		return fmt.Errorf("send %v to client %d: %w", s, c, err)
	}
	return nil
}

func (e *env) Kill(c int) error {
	w, err := e.worker(c)
	if err != nil {
		return err
	}
	if err := w.killExpected("killed by nemesis"); err != nil {
		if errors.Is(err, errExited) {
			return nemesis.ErrNoTarget
		}
		return err
	}
	return nil
}
