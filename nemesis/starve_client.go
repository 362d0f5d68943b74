package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// StarveClient starves a holder of CPU without stopping it for good: its
// process (and an adapter's, with its threads and timers) is stopped for
// `off`, then runs for `on`, again and again for `duration`. It stays
// alive and keeps its connections; everything it does — its own deadline,
// its release, a watchdog's renewal — runs up to `off` late. That is what
// a CPU quota does to a busy process (the kernel's CFS bandwidth control
// holds a cgroup off the CPU until its period ends) and a loaded host to a
// low-priority one (redisson#5698: the watchdog missed its renewals). It
// is done with signals, not with a cgroup's quota, so that it lands on any
// machine and on an idle client too: a quota only holds back a process
// that has used its share, and a holder waiting in its critical section
// uses almost none.
//
// Each run lasts on, and longer while the client waits for a CPU and has
// had less than on of CPU time (Processes.RunFor): a busy machine does
// not starve it harder than the fault does. Where it still did (past ten
// runs' time, or a stop's), the fault's effect says so (Overdone), and a
// run whose overlaps only such a fault explains is no evidence.
//
// Unlike pause-client, the client runs between the stops: a lock that
// renews its lease every third of it renews it the moment it runs again
// after a stop in which the renewal fell due, so it survives stops shorter
// than the lease (late, not never), while a lease the client must finish
// its work within breaks as soon as a stop delays its release past the
// lease's end.
//
// Landing, by construction: for a lease nobody extends, the first stop
// begins an instant before the holder's own deadline lets it go, so that
// its release runs late by a whole stop; the fault landed when the holder
// still held its key when its lease ran out by its TTL and another client
// took the key before it let go. For a lease that is renewed, it landed
// when the holder still held its key a lease into the starvation: the
// renewals had to come through it (the history tells whether they did).
type StarveClient struct {
	Off      time.Duration `opt:"off" default:"0.5ttl" margin:"0.05ttl..2ttl" help:"how long each stop lasts: how late the client's threads and timers may run"`
	On       time.Duration `opt:"on" default:"10ms" help:"how long the client runs between two stops (longer while it waits for a CPU: it gets this much CPU time, or all it wants)"`
	Duration time.Duration `opt:"duration" default:"3ttl" help:"how long the client is starved"`
}

func init() {
	Register(Spec{
		Name:        "starve-client",
		Description: "starve a holder of CPU: stop its process for a while, let it run a moment, again and again (SIGSTOP/SIGCONT), alive all along",
		Action:      history.ActionPause,
		New:         func() Nemesis { return new(StarveClient) },
	})
}

// Validate refuses a stop or a run that is no time at all.
func (s *StarveClient) Validate() error {
	if s.Off <= 0 || s.On <= 0 {
		return fmt.Errorf("off (%v) and on (%v) must both be more than 0", s.Off, s.On)
	}
	return nil
}

func (s *StarveClient) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	proc, err := processesOf(env)
	if err != nil {
		return nil, err
	}
	tp, lease := env.Topology(), env.Lease()
	renewed := tp.KeepsAlive || tp.Renews
	bound := stretchBound(env)
	if renewed {
		// A renewed lease does not run out under a client that runs: keep
		// it inside for the whole starvation, and a lease after.
		bound = max(bound, s.Duration+lease, 4*lease)
	}
	a, err := aimAt(ctx, env, step, bound)
	if err != nil {
		return nil, err
	}
	now := history.Now()
	// When the fault has shown what it does: the lease's end by its TTL,
	// or for a lease that is renewed, a lease into the starvation.
	judgeAt := a.Invoked + lease.Nanoseconds()
	plain := !renewed && !tp.Leaseless
	period := s.Off + s.On
	var first time.Duration
	if plain {
		// The first stop begins an instant before the client's own bound
		// lets it go: its release then runs late by the stop, whatever the
		// machine's speed. Until then it runs as usual.
		first = max(time.Duration(a.Invoked+bound.Nanoseconds()-now)-min(10*time.Millisecond, s.Off/4), 0)
	}
	start := now + first.Nanoseconds()
	if renewed {
		judgeAt = start + lease.Nanoseconds()
	}
	c := a.Client
	cycle, stop := context.WithCancel(context.Background())
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		held   = -1 // whether it held at judgeAt: -1 not seen yet
		taker  = -1 // a plain lease's: who took the key while it still held
		stops  int
		cycErr error
		// unserved counts the runs in which the machine, not the fault,
		// held the client off the CPU (RunFor): past most, it still
		// waited for a CPU, and had had less than on of CPU time.
		unserved int
		most     = max(10*s.On, s.Off)
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		if !sleep(cycle, time.Until(timeOf(judgeAt))) {
			return
		}
		h := 0
		if a.heldIn(snapshot(env)) {
			h = 1
		}
		mu.Lock()
		held = h
		mu.Unlock()
		if h == 0 || !plain {
			return
		}
		// A lease nobody extends ran out under its holder: whether another
		// client takes the key before the holder lets go is what shows it.
		_ = env.Await(cycle, func(v View) bool {
			if !a.heldIn(v) {
				return true
			}
			for _, o := range v.Holders {
				if o.Key == a.Key && o.Client != a.Client {
					mu.Lock()
					taker = o.Client
					mu.Unlock()
					return true
				}
			}
			return false
		})
	}()
	go func() {
		defer wg.Done()
		if !sleep(cycle, first) {
			return
		}
		for {
			if err := proc.Pause(c); err != nil {
				if !errors.Is(err, ErrNoTarget) {
					mu.Lock()
					cycErr = err
					mu.Unlock()
				}
				return
			}
			mu.Lock()
			stops++
			mu.Unlock()
			if !sleep(cycle, s.Off) {
				mu.Lock()
				cycErr = errors.Join(cycErr, proc.Resume(c))
				mu.Unlock()
				return
			}
			served, err := proc.RunFor(c, s.On, most)
			mu.Lock()
			cycErr = errors.Join(cycErr, err)
			if !served {
				unserved++
			}
			mu.Unlock()
			if err != nil || cycle.Err() != nil {
				return
			}
		}
	}()
	f := &Fault{
		Target:   "client " + strconv.Itoa(c),
		Params:   map[string]string{"off": s.Off.String(), "on": s.On.String(), "duration": s.Duration.String(), "key": a.Key, "signal": "SIGSTOP/SIGCONT"},
		Clients:  []int{c},
		Stopped:  []int{c},
		Aim:      a.aim(),
		Start:    start,
		Duration: time.Duration(start-history.Now()) + s.Duration,
	}
	f.Heal = func(context.Context) error {
		stop()
		wg.Wait()
		// The cycle ends with the client running; resume it once more in
		// case the cycle's own resume failed.
		err := errors.Join(cycErr, proc.Resume(c), a.release())
		what := fmt.Sprintf("client %d was starved (stopped %s in every %s, %d times)", c, s.Off, period, stops)
		// Leaseless: nothing could run out. Otherwise the starvation must
		// have begun in the lease and lasted one (lastedEffect), and the
		// client still held when the lease would have shown it.
		e := a.lastedEffect(start, history.Now(), what, false)
		if unserved > 0 {
			e.Overdone = fmt.Sprintf("the machine held client %d off the CPU past %d of its runs (it still waited for a CPU %s into a run, with less than %s of CPU time): it was starved harder than the fault starves", c, unserved, most, s.On)
			e.Note += "; " + e.Overdone
		}
		if tp.Leaseless || !e.Landed {
			f.Effect = e
			return err
		}
		switch {
		case held == -1:
			e.Landed = false
			e.Note += "; the starvation ended before it could tell whether the client still held " + a.Key + " when its lease ran out"
		case held == 0:
			e.Landed = false
			e.Note += fmt.Sprintf("; client %d had let go of %s by then: its release ran in time", c, a.Key)
		case renewed:
			e.Note += fmt.Sprintf("; it still held %s a lease into the starvation", a.Key)
		case taker >= 0:
			e.Lease = history.LeaseLost
			e.Note += fmt.Sprintf("; it still held %s when its lease ran out by its TTL, and client %d then acquired it", a.Key, taker)
		default:
			e.Landed = false
			e.Note += fmt.Sprintf("; it still held %s when its lease ran out by its TTL, but let go before another client took it: nothing shows what the lost lease allowed", a.Key)
		}
		f.Effect = e
		return err
	}
	return f, nil
}
