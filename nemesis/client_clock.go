package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

// ClientClock steps a client's wall clock back, as an NTP correction of a
// clock that ran fast does, while its acquire is in flight and slow: a lock
// that measures the acquire's time on the wall clock to find how much of
// its lease is left (Redlock's validity, TTL − elapsed − drift) counts the
// step as time that never passed. The client's replies are held at its
// proxy past its lease, so the lease runs out on the servers before the
// grant reaches it: a lock that measures on a monotonic clock finds the
// lease gone and refuses, one that reads the wall clock (Date.now(),
// System.currentTimeMillis(), time.time()) finds it valid and acts on it —
// beside another client's hold, by construction: the replies are let go
// in one, kept inside until the acquire is answered.
//
// The step reaches a lock's own process, an adapter, which runs under the
// clock shim (cluster/clockshim: gettimeofday, clock_gettime's realtime
// clocks and time; monotonic clocks and timers are untouched, as in a real
// step). A lock written in Go runs inside the worker: the Go runtime reads
// the clock through the vDSO, out of LD_PRELOAD's reach, and measures
// elapsed time on the monotonic reading time.Now carries — a step cannot
// move it, and the nemesis does not apply.
//
// It landed when the servers granted the acquire (its key on a quorum of
// the lock nodes while nobody else held or released it), the replies were
// held past the lease and let go in another client's hold, the step was
// larger than the time they were held, and the lock answered the acquire
// (granted or refused, not timed out: the op timeout must outlast the
// hold) — a grant while that hold was still in force. The clock is set right again once the acquire and the hold it
// began are over.
//
// direction=forward steps the clock the other way, as an NTP correction of
// a slow clock does, while another client holds the key (kept inside):
// a lock that judges on the client's clock whether the last holder's lease
// has run out (ShedLock's JDBC provider: lock_until <= now, now by the
// client) takes the key beside that holder; one whose lease the server
// keeps (a Redis PX, a database's own now()) refuses. It landed when the
// client's next acquire, begun after the step, was answered (granted or
// refused) while that hold was in force. The clock is set right again as
// soon as the acquire is answered.
type ClientClock struct {
	By        time.Duration `opt:"by" default:"5ttl" margin:"0.1ttl..10ttl" help:"how far the client's wall clock steps"`
	Direction string        `opt:"direction" default:"back" oneof:"back,forward" help:"back: while the client's acquire is in flight, its replies held past the lease; forward: while another client holds the key, before the client's next acquire"`
	Delay     time.Duration `opt:"delay" default:"1ttl" help:"direction=back: how long the acquire's replies are held at least (its lease: the lease runs out on the servers first); they go on in the next hold of another client's, kept inside until the acquire is answered"`
}

func init() {
	Register(Spec{
		Name:        "client-clock",
		Description: "step a client's wall clock (clock shim in its adapter): back while its acquire's replies are held past the lease (a validity measured on the wall clock says the lease still lives), or forward while another client holds the key (a lease judged on the client's clock has run out)",
		Action:      history.ActionClock,
		New:         func() Nemesis { return new(ClientClock) },
		ClientClock: true,
	})
}

func (k *ClientClock) Validate() error {
	if k.By <= 0 || k.Delay <= 0 {
		return fmt.Errorf("by (%v) and delay (%v) must both be more than 0", k.By, k.Delay)
	}
	return nil
}

// Applies: the lock must run in a process of its own (an adapter).
func (k *ClientClock) Applies(t Topology) error {
	switch strings.ToLower(t.Adapter) {
	case "":
		return fmt.Errorf("client-clock steps the wall clock of a lock's own process (an adapter) through the clock shim; lock %s runs inside the Go worker, which reads the clock through the vDSO (out of the shim's reach) and measures elapsed time on the monotonic clock, which a step does not move", t.Lock)
	case "go", "golang":
		return fmt.Errorf("client-clock steps a process's wall clock through the clock shim (LD_PRELOAD), and lock %s's adapter is written in Go, whose runtime reads the clock through the vDSO, out of the shim's reach", t.Lock)
	}
	return nil
}

func (k *ClientClock) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	clocks, err := capability[ClientClocks](env, "the clients' clocks (the clock shim in their adapters)")
	if err != nil {
		return nil, err
	}
	net, err := linksOf(env)
	if err != nil {
		return nil, err
	}
	c := step.Client
	clock := clocks.ClientClock(c)
	if clock == nil {
		return nil, fmt.Errorf("client-clock: client %d's lock runs without the clock shim", c)
	}
	if k.Direction == "forward" {
		return k.forward(ctx, env, step, clock, clocks.ShimLoaded(c))
	}
	f := &Fault{
		Target:  fmt.Sprintf("clock of client %d back by %v (acquire in flight)", c, k.By),
		Params:  map[string]string{"by": k.By.String(), "direction": "backward", "delay": k.Delay.String(), "variant": "shim"},
		Clients: []int{c},
	}
	g, note, err := k.heldGrant(ctx, env, net, c)
	if err != nil || g == nil {
		if note == "" && err != nil {
			note = err.Error()
		}
		f.Start, f.Effect = history.Now(), &history.Effect{Note: note}
		return f, err
	}
	f.Start = g.start
	// The other clients are asked now to stay inside their next hold of
	// the key: the first comes once the lease runs out on the servers,
	// and the replies go on in it.
	armed, err := armBeside(ctx, env, c, g.acq.Key)
	if err != nil {
		return nil, errors.Join(err, g.unhold(ctx))
	}
	if err := clock.Set(clock.Offset()-k.By, clock.Rate()); err != nil {
		return nil, errors.Join(err, g.unhold(ctx), armed.letGo(-1))
	}
	f.Params["offset"] = clock.Offset().Round(time.Millisecond).String()
	shim := clocks.ShimLoaded(c)
	f.Duration = time.Until(timeOf(g.acq.Invoked).Add(k.Delay))
	f.Heal = func(ctx context.Context) error {
		// Another client's next hold, kept inside until the acquire is
		// answered: the replies go on in it.
		beside, err := armed.beside(ctx)
		if err != nil {
			return errors.Join(err, g.unhold(ctx), clock.Set(0, 1))
		}
		// An answer before the replies are let go was not held (the
		// toxic's latency ran out: a fault far longer than planned).
		a := snapshot(env).Acquires[c]
		early := a.Invoked != g.acq.Invoked || a.Outcome != ""
		if err := g.unhold(ctx); err != nil {
			return errors.Join(err, beside.release(), clock.Set(0, 1))
		}
		let := history.Now()
		answer := untilAcquired(ctx, env, c, g.acq.Invoked)
		ended := answer.Outcome
		inHold := beside != nil && heldAt(snapshot(env), beside.Holding, answer.Done)
		if err := errors.Join(beside.release(), clock.Set(0, 1)); err != nil {
			return err
		}
		held, lease := time.Duration(let-g.acq.Invoked), env.Lease()
		granted := ended == history.OK || g.grantedOn >= env.Topology().Quorum
		note := fmt.Sprintf("client %d's clock stepped back %s while its acquire's replies were held %s (its lease is %s)", c, k.By, round(held), lease)
		if g.grantedOn >= 0 {
			note += fmt.Sprintf("; the lock nodes held its %s on %d of %d", g.acq.Key, g.grantedOn, len(env.LockNodes()))
		}
		if ended != "" {
			note += fmt.Sprintf("; the acquire ended %s", ended)
		}
		landed := false
		switch {
		case early:
			note += ": the acquire was answered before its replies were let go"
		case !shim:
			note += fmt.Sprintf(": the clock shim is not loaded in client %d's adapter, or not pointed at its clock file (a launcher that cleared its environment, or a runtime that does not read the clock through the C library), so the step did not reach its lock", c)
		case !granted:
			note += ": no grant was known to wait for it"
		case held < lease:
			note += ": the replies came before the lease could run out"
		case k.By <= held:
			note += ": the step was no larger than the time the replies were held, so even a wall clock saw the lease run out"
		case ended != history.OK && ended != history.Fail:
			note += ": the lock gave no answer in time (the op timeout must outlast the held replies)"
		case beside == nil:
			note += ": the replies went on while no other client held the key (none began a hold in time), so a stale grant had nobody to overlap"
		case ended == history.OK && !inHold:
			note += fmt.Sprintf(": it was answered only after client %d's hold (%s) had ended, so a stale grant had nobody to overlap", beside.Client, beside.kept())
		default:
			landed = true
			note += fmt.Sprintf("; they went on %s into client %d's hold (%s)", round(time.Duration(let-beside.OK)), beside.Client, beside.kept())
		}
		f.Effect = &history.Effect{Landed: landed, Note: note}
		return nil
	}
	return f, nil
}

// forward steps client step.Client's clock forward while another client
// holds step.Key, kept inside, and follows the client's next acquire.
func (k *ClientClock) forward(ctx context.Context, env Env, step Step, clock *cluster.Clock, shim bool) (*Fault, error) {
	c := step.Client
	f := &Fault{
		Target:  fmt.Sprintf("clock of client %d forward by %v (another client's hold)", c, k.By),
		Params:  map[string]string{"by": k.By.String(), "direction": "forward", "variant": "shim"},
		Clients: []int{c},
	}
	beside, err := holdBeside(ctx, env, c, step.Key)
	if err != nil || beside == nil {
		f.Start, f.Effect = history.Now(), &history.Effect{Note: fmt.Sprintf("no client but %d held %s in time", c, step.Key)}
		return f, err
	}
	if err := clock.Set(clock.Offset()+k.By, clock.Rate()); err != nil {
		return nil, errors.Join(err, beside.release())
	}
	f.Start = history.Now()
	f.Params["offset"] = clock.Offset().Round(time.Millisecond).String()
	f.Heal = func(ctx context.Context) error {
		// The client's next acquire, begun after the step.
		var a Acquire
		wctx, cancel := context.WithTimeout(ctx, 2*(env.TTL()+env.Hold())+env.Topology().OpTimeout+time.Second)
		_ = env.Await(wctx, func(v View) bool {
			a = v.Acquires[c]
			return (a.Invoked > f.Start && a.Outcome != "") || v.Exited[c]
		})
		cancel()
		inHold := a.Outcome != "" && heldAt(snapshot(env), beside.Holding, a.Done)
		if err := errors.Join(beside.release(), clock.Set(0, 1)); err != nil {
			return err
		}
		note := fmt.Sprintf("client %d's clock stepped forward %s while client %d held %s (%s)", c, k.By, beside.Client, beside.Key, beside.kept())
		landed := false
		switch {
		case !shim:
			note += fmt.Sprintf(": the clock shim is not loaded in client %d's adapter, or not pointed at its clock file, so the step did not reach its lock", c)
		case a.Invoked <= f.Start || a.Outcome == "":
			note += ": the client's next acquire did not come back in time"
		case a.Key != beside.Key:
			note += fmt.Sprintf(": the client's next acquire was of %s", a.Key)
		case a.Outcome != history.OK && a.Outcome != history.Fail:
			note += fmt.Sprintf("; its next acquire ended %s%s, no answer of the lock's", a.Outcome, errorNote(a.Error))
		case !inHold:
			note += fmt.Sprintf("; its next acquire ended %s only after that hold had ended", a.Outcome)
		default:
			landed = true
			note += fmt.Sprintf("; its next acquire, in that hold, ended %s", map[history.Kind]string{history.OK: "granted", history.Fail: "refused"}[a.Outcome])
		}
		f.Effect = &history.Effect{Landed: landed, Note: note}
		return nil
	}
	return f, nil
}

// heldGrant is an acquire of a client whose replies are held at its proxy
// while the servers granted it.
type heldGrant struct {
	start     int64 // when its replies began to be held
	acq       Acquire
	grantedOn int // lock nodes that held its key (-1: not asked, another store)
	unhold    func(context.Context) error
}

// holdFor is the latency of the toxic that holds the replies: far longer
// than the fault can last (the grant's search, the replies' delay, the
// wait for another client's hold), so that only its removal lets them go.
func (k *ClientClock) holdFor(env Env) time.Duration {
	op := env.Topology().OpTimeout
	return time.Minute + 10*(k.Delay+op+env.TTL()+env.Hold())
}

// heldGrant holds client c's replies (a latency toxic that lets what it
// holds go at once when removed) from a moment it is idle,
// and waits for its next acquire: one begun on a free lock that the servers
// granted, its OK held. An acquire that does not qualify is let go and the
// next one tried, within triggerWait; nil and why when none did.
func (k *ClientClock) heldGrant(ctx context.Context, env Env, net Links, c int) (*heldGrant, string, error) {
	deadline := time.Now().Add(triggerWait(env))
	for time.Now().Before(deadline) {
		exited := false
		if err := env.Await(ctx, func(v View) bool { exited = v.Exited[c]; return exited || idle(v, c) }); err != nil {
			return nil, "the run ended before the fault", err
		}
		if exited {
			return nil, fmt.Sprintf("client %d exited before an acquire", c), nil
		}
		unhold, err := addToxics(net.Proxies().Links(is(c), nil), "client-clock-hold", "latency", []string{"downstream"}, map[string]any{"latency": k.holdFor(env).Milliseconds()})
		if err != nil {
			return nil, "", err
		}
		start := history.Now() // an acquire invoked from now on is held
		g, err := k.grantAfter(ctx, env, c, start)
		if err != nil && ctx.Err() != nil {
			return nil, "the run ended before an acquire of client " + fmt.Sprint(c) + " was granted", errors.Join(err, unhold(ctx))
		}
		if err != nil || g != nil {
			if g != nil {
				g.start, g.unhold = start, unhold
			}
			if err != nil {
				err = errors.Join(err, unhold(ctx))
			}
			return g, "", err
		}
		// Not a grant on a free lock: let its answer go, wait for it.
		invoked := snapshot(env).Acquires[c].Invoked
		if err := unhold(ctx); err != nil {
			return nil, "", err
		}
		_ = untilAcquired(ctx, env, c, invoked)
	}
	return nil, fmt.Sprintf("client %d began no acquire the servers granted on a free lock within %v", c, triggerWait(env)), nil
}

// grantAfter waits for client c's acquire invoked after start and tells
// whether the servers granted it while nobody else held the key or
// released: nil when they did not (or, another store's, cannot be asked
// before the answer: then any acquire on a free lock is taken).
func (k *ClientClock) grantAfter(ctx context.Context, env Env, c int, start int64) (*heldGrant, error) {
	wctx, cancel := context.WithTimeout(ctx, 2*(env.TTL()+env.Hold())+time.Second)
	defer cancel()
	var acq Acquire
	if err := env.Await(wctx, func(v View) bool {
		acq = v.Acquires[c]
		return acq.Invoked > start || !idle(v, c)
	}); err != nil {
		return nil, ctx.Err()
	}
	if acq.Invoked <= start || acq.Outcome != "" {
		return nil, nil
	}
	free := func(v View) bool { return len(v.Holders) == 0 && !releasing(v, c) }
	if !env.Topology().OnRedis() {
		if !free(snapshot(env)) {
			return nil, nil
		}
		return &heldGrant{acq: acq, grantedOn: -1}, nil
	}
	// The request reaches the servers in well under a millisecond; give a
	// busy machine a fifth of the TTL.
	until := time.Now().Add(env.TTL() / 5)
	for time.Now().Before(until) {
		v := snapshot(env)
		if !free(v) || v.Acquires[c].Invoked != acq.Invoked || v.Acquires[c].Outcome != "" {
			return nil, nil
		}
		if on := holdersOf(ctx, env, env.LockNodes(), Holding{Key: acq.Key}); len(on) >= env.Topology().Quorum {
			// The key may be another client's (ownGrant): then this
			// acquire is not the one.
			own, _ := ownGrant(ctx, env, v, c, acq)
			if own < env.Topology().Quorum {
				return nil, nil
			}
			// Still unanswered: its replies are held.
			if a := snapshot(env).Acquires[c]; a.Invoked != acq.Invoked || a.Outcome != "" {
				return nil, nil
			}
			return &heldGrant{acq: acq, grantedOn: own}, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil, nil
}

// idle says whether client c has no call in flight and holds nothing in v:
// its next call is an acquire.
func idle(v View, c int) bool {
	if a, ok := v.Acquires[c]; ok && a.Outcome == "" {
		return false
	}
	if r, ok := v.Releases[c]; ok && r.Outcome == "" {
		return false
	}
	for _, h := range v.Holders {
		if h.Client == c {
			return false
		}
	}
	return true
}
