package nemesis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// PauseClient freezes a client's process with SIGSTOP, longer than the TTL,
// then resumes it with SIGCONT: the GC pause of the Redlock debate. Its
// goroutines, watchdogs included, freeze with it. Two moments:
//
//   - phase=hold: a client that holds a lock (the freshest hold). When it
//     resumes it still believes it holds the lock; a renewing (watchdog)
//     lock does not help, since the watchdog was frozen too.
//   - phase=acquire: Kleppmann's case. The client's replies are slowed a
//     little, and it is paused while its acquire is in flight, after the
//     server granted the lock: the OK reaches its socket buffer while it is
//     stopped, and it reads it on resuming, long after the lease expired.
//     Its own deadline fires in the same instant, so only a client whose
//     operation timeout (--op-timeout) outlasts the pause takes the lock;
//     the others give up — measure both. Past its lease it is woken in
//     another client's next hold of the key, kept inside (up to its lease
//     less a margin) until the acquire is answered, so the stale OK
//     overlaps that hold by construction (or, when it comes first, in a
//     hold begun less than half a hold ago: holdBeside); it lands only then (a grant
//     after that hold ended overlapped nobody), and only when the grant
//     was its own (a key left by another client's release in flight, or
//     granted to another acquire in flight beside it, is not). The fault's
//     window lasts until the client finished the hold that the stale OK
//     started.
//   - phase=wait: a client blocked in a blocking acquire (--wait), queued
//     behind another client's hold, is paused past its lease. Its session
//     (etcd, ZooKeeper) or lease expires while it sleeps, and the holder
//     may let go meanwhile. It is woken in another client's hold of the
//     key, as in phase=acquire: a lock that
//     re-checks its own lease after waiting refuses, one that does not
//     (etcd#11456) hands it a lock it no longer has while that client
//     holds it. The window lasts until that acquire, and the hold it may
//     start, are done.
type PauseClient struct {
	Duration   time.Duration `opt:"duration" default:"3ttl" margin:"0.1ttl..4ttl" help:"how long the client stays stopped"`
	Phase      string        `opt:"phase" default:"hold" oneof:"hold,acquire,wait" help:"hold (pause a holder), acquire (pause a client whose acquire the server already granted, its OK still on the way) or wait (pause a client blocked in a blocking acquire, waiting for another's hold: needs --wait)"`
	ReplyDelay time.Duration `opt:"reply-delay" default:"0.2ttl" help:"phase=acquire: how late the victim's replies arrive, time to stop it before the OK does"`
}

func init() {
	Register(Spec{
		Name:        "pause-client",
		Description: "SIGSTOP a worker process for longer than the TTL, then SIGCONT: while it holds a lock, or while its acquire is in flight",
		Action:      history.ActionPause,
		New:         func() Nemesis { return new(PauseClient) },
	})
}

// Applies refuses phase=wait in a run without a blocking acquire.
func (p *PauseClient) Applies(t Topology) error {
	if p.Phase == "wait" {
		return blocking("pause-client", "with phase=wait", t)
	}
	return nil
}

func (p *PauseClient) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	proc, err := processesOf(env)
	if err != nil {
		return nil, err
	}
	switch p.Phase {
	case "acquire":
		return p.duringAcquire(ctx, env, proc, step)
	case "wait":
		return p.duringWait(ctx, env, proc, step)
	}
	d := p.Duration
	// Pause it where a GC pause hurts: its work done, its write not yet
	// made (Kleppmann's pause between the check and the write). It waits
	// there for the pause, however late the coordinator is, and the pause
	// counts from then; should it not get there in time (it learned it
	// lost the lease), it is paused wherever it is.
	a, err := aimStop(ctx, env, step, stretchBound(env), 0, true)
	if err != nil {
		return nil, err
	}
	var waiting Wait
	wctx, cancel := context.WithTimeout(ctx, triggerWait(env))
	_ = env.Await(wctx, func(v View) bool {
		if w, ok := v.Waiting[a.Client]; ok && w.At >= a.OK {
			waiting = w
			return true
		}
		return v.Exited[a.Client]
	})
	cancel()
	start := history.Now()
	if waiting.At != 0 {
		start = waiting.At
	}
	// The stop waits in the first stretched hold that reaches the end of
	// its work within its bound: when the hold first aimed at ended before
	// (its lock reported its lease lost, its work outlasted the bound on
	// a busy machine), the client's next hold of the key waits, and that
	// is the hold the pause stops. It is aimed at that one: aimed at the
	// first, a pause that landed was judged to have come after its hold.
	if waiting.Invoked != 0 && waiting.Invoked != a.Invoked {
		a.Holding = waiting.Holding
	}
	if err := proc.Pause(a.Client); err != nil {
		return nil, errors.Join(err, a.release())
	}
	// The client takes the stretch's withdrawal when it resumes, and goes
	// on as it would have: it still believes it holds the lock.
	rerr := a.release()
	f := &Fault{
		Target:   "client " + strconv.Itoa(a.Client),
		Params:   map[string]string{"duration": d.String(), "key": a.Key, "signal": "SIGSTOP", "phase": "hold"},
		Clients:  []int{a.Client},
		Stopped:  []int{a.Client},
		Aim:      a.aim(),
		Start:    start,
		Duration: d,
	}
	f.Heal = func(context.Context) error {
		err := proc.Resume(a.Client)
		f.Effect = a.lastedEffect(start, history.Now(), fmt.Sprintf("client %d was stopped", a.Client), true)
		if f.Effect.Landed && !env.Topology().Leaseless {
			// Frozen, nothing renewed it: it ran out on the server.
			f.Effect.Lease = history.LeaseLost
		}
		return err
	}
	return f, rerr
}

func (p *PauseClient) duringAcquire(ctx context.Context, env Env, proc Processes, step Step) (*Fault, error) {
	d, delay := p.Duration, p.ReplyDelay
	net, err := linksOf(env)
	if err != nil {
		return nil, err
	}
	c := step.Client
	slowed := history.Now()
	unslow, err := addToxics(net.Proxies().Links(is(c), nil), "pause-client-reply", "latency", []string{"downstream"}, map[string]any{"latency": delay.Milliseconds()})
	if err != nil {
		return nil, err
	}
	// The slowed replies are part of the fault from now on: recorded even
	// if no pause follows.
	f := &Fault{
		Target:  "client " + strconv.Itoa(c) + " (acquire in flight)",
		Params:  map[string]string{"duration": d.String(), "signal": "SIGSTOP", "phase": "acquire", "reply-delay": delay.String()},
		Clients: []int{c},
		Start:   slowed,
		Heal:    unslow,
	}
	// Wait for an acquire of c that has been in flight for half the reply
	// delay (the server has answered; the answer is held in the proxy)
	// while nobody else held the lock or was releasing it, from when it
	// began until now, as far as we know: then the answer is most likely
	// OK, and a key on the lock nodes is most likely its grant. A quorum
	// lock that asks its nodes one after another (Redlock) is stopped once
	// its key is on a quorum of them: on resuming it has the majority it
	// asked for, and only its validity check stands between it and a
	// lease that ran out (stopped earlier, it would fail for want of
	// votes, which tests nothing of the check).
	quorum := env.Topology().Quorum
	var (
		seen  time.Time // when c's current acquire was first seen in flight
		clean bool      // no holder, no release in flight since then
	)
	deadline := time.Now().Add(triggerWait(env))
	for {
		v := snapshot(env)
		inFlight := slices.Contains(proc.Acquiring(0), c)
		busy := len(v.Holders) > 0 || releasing(v, c)
		switch {
		case !inFlight:
			seen = time.Time{}
		case seen.IsZero():
			seen, clean = time.Now(), !busy
		default:
			clean = clean && !busy
		}
		if inFlight && clean && time.Since(seen) >= delay/2 {
			if quorum <= 1 || !env.Topology().OnRedis() {
				break
			}
			if len(holdersOf(ctx, env, env.LockNodes(), Holding{Key: v.Acquires[c].Key})) >= quorum &&
				slices.Contains(proc.Acquiring(0), c) {
				break
			}
		}
		if time.Now().After(deadline) {
			f.Effect = &history.Effect{Note: fmt.Sprintf("client %d had no acquire in flight on a free lock within %v", c, triggerWait(env))}
			return f, nil
		}
		select {
		case <-ctx.Done():
			f.Effect = &history.Effect{Note: "the run ended before the pause"}
			return f, ctx.Err()
		case <-time.After(500 * time.Microsecond):
		}
	}
	inFlight := snapshot(env).Acquires[c]
	start := history.Now()
	if err := proc.Pause(c); err != nil {
		return nil, errors.Join(err, unslow(ctx))
	}
	// The acquire may have returned in the instant before the stop took
	// effect: its events, written before the stop, are read within a few
	// milliseconds; an acquire no longer in flight then was not paused
	// (the pause stopped the hold it began: phase=hold's fault, not this).
	time.Sleep(20 * time.Millisecond)
	if a := snapshot(env).Acquires[c]; a.Invoked != inFlight.Invoked || a.Outcome != "" {
		// Resumed at once: a pause of the hold would break any lease, and
		// say nothing of a stale grant.
		err := errors.Join(proc.Resume(c), unslow(ctx))
		f.Heal, f.Stopped = nil, []int{c} // its stall is the fault's
		f.Effect = &history.Effect{Note: fmt.Sprintf("client %d's acquire returned (%s) before the stop took effect: resumed at once (its hold, not its acquire, would have been paused)", c, cmp.Or(string(a.Outcome), "a later acquire began"))}
		return f, err
	}
	// Whether the servers had granted the acquire while its client was
	// stopped: on a Redis lock, its key on a quorum of the lock nodes (one
	// for a single-node lock) while nobody else is known to hold it, under
	// no other client's token (ownGrant: the coordinator may not have seen
	// another client's acquire yet). Another store's members are asked by
	// a token the acquire has not returned yet: its outcome after the
	// resume says it instead.
	now := snapshot(env)
	acq := now.Acquires[c]
	grantedOn, found := -1, 0 // nodes with its key, and with a key
	if env.Topology().OnRedis() && acq.Outcome == "" && len(now.Holders) == 0 && !releasing(now, c) {
		grantedOn, found = ownGrant(ctx, env, now, c, acq)
	}
	f.Stopped, f.Duration = []int{c}, d
	f.Heal = func(ctx context.Context) error {
		// Its lease has run out: the client is woken in another client's
		// hold of the key, kept inside until the acquire is answered, so a
		// stale OK it acts on overlaps that hold by construction (woken
		// between holds, or let act after the hold, it would hold alone
		// for a while and prove nothing).
		beside, err := holdBeside(ctx, env, c, acq.Key)
		if err := errors.Join(err, unslow(ctx), proc.Resume(c)); err != nil {
			return errors.Join(err, beside.release())
		}
		resumed := history.Now()
		// The stale OK is acted on after the resume: the fault lasts
		// until the client is done with that acquire and the hold it
		// may have started, so the window covers the overlap it causes.
		answer := untilAcquired(ctx, env, c, acq.Invoked)
		ended := answer.Outcome
		inHold := beside != nil && heldAt(snapshot(env), beside.Holding, answer.Done)
		if err := beside.release(); err != nil {
			return err
		}
		paused, lease := time.Duration(resumed-start), env.Lease()
		granted := ended == history.OK || grantedOn >= max(quorum, 1)
		note := fmt.Sprintf("client %d was stopped for %s with its acquire in flight (its lease is %s)", c, round(paused), lease)
		switch {
		case grantedOn >= 0:
			note += fmt.Sprintf("; the lock nodes held its %s on %d of %d while it was stopped", acq.Key, grantedOn, len(env.LockNodes()))
			if found > grantedOn {
				note += fmt.Sprintf(" (%d more held one perhaps another client's)", found-grantedOn)
			}
		case ended != "":
			note += fmt.Sprintf("; that acquire ended %s", ended)
		}
		landed := false
		switch {
		case !granted:
			note += ": no grant was known to wait for it, so the pause tested nothing of a stale OK"
		case beside == nil:
			note += ": it woke while no other client held the key (none began a hold in time), so a stale grant had nobody to overlap"
		case ended == history.OK && !inHold:
			note += fmt.Sprintf(": it was granted only after client %d's hold (%s) had ended, so a stale grant had nobody to overlap", beside.Client, beside.kept())
		default:
			landed = paused >= lease
			note += fmt.Sprintf("; it woke %s into client %d's hold (%s)", round(time.Duration(resumed-beside.OK)), beside.Client, beside.kept())
		}
		f.Effect = &history.Effect{Landed: landed, Note: note}
		return nil
	}
	return f, nil
}

// duringWait pauses the step's client while its acquire of the step's key
// waits behind another client's hold (phase=wait).
func (p *PauseClient) duringWait(ctx context.Context, env Env, proc Processes, step Step) (*Fault, error) {
	c, key, d := step.Client, step.Key, p.Duration
	if err := awaitWaiter(ctx, env, proc, c, key); err != nil {
		return nil, err
	}
	waiting := snapshot(env).Acquires[c]
	start := history.Now()
	if err := proc.Pause(c); err != nil {
		return nil, err
	}
	f := &Fault{
		Target:   "client " + strconv.Itoa(c) + " (waiting in a blocking acquire)",
		Params:   map[string]string{"duration": d.String(), "key": key, "signal": "SIGSTOP", "phase": "wait"},
		Clients:  []int{c},
		Stopped:  []int{c},
		Start:    start,
		Duration: d,
	}
	f.Heal = func(ctx context.Context) error {
		// The waiter wakes in another client's hold of the key, kept
		// inside until the waiter's acquire is answered: a lock that hands
		// it the lock without asking whether its session survived
		// (etcd#11456) then has two holders, by construction. Woken
		// between two holds, it would hold alone for the instant before it
		// learns its session is gone (a run of the test suite saw exactly
		// that), and prove nothing.
		beside, err := holdBeside(ctx, env, c, key)
		if err := errors.Join(err, proc.Resume(c)); err != nil {
			return errors.Join(err, beside.release())
		}
		resumed := history.Now()
		// What the lock does on waking is the point: the window covers the
		// acquire's answer and any hold it starts.
		answer := untilAcquired(ctx, env, c, waiting.Invoked)
		inHold := beside != nil && heldAt(snapshot(env), beside.Holding, answer.Done)
		if err := beside.release(); err != nil {
			return err
		}
		paused, lease := time.Duration(resumed-start), env.Lease()
		note := fmt.Sprintf("client %d was stopped for %s while its blocking acquire of %s waited behind another client's hold (its lease is %s)", c, round(paused), key, lease)
		landed := false
		switch {
		case paused < lease:
			note += ": shorter than its lease, which could not run out meanwhile"
		case beside == nil:
			note += ": it woke while no other client held the key (none began a hold in time), so a stale grant had nobody to overlap"
		case answer.Outcome == history.OK && !inHold:
			note += fmt.Sprintf(": it was granted only after client %d's hold (%s) had ended, so a stale grant had nobody to overlap", beside.Client, beside.kept())
		default:
			landed = true
			note += fmt.Sprintf("; it woke %s into client %d's hold (%s)", round(time.Duration(resumed-beside.OK)), beside.Client, beside.kept())
		}
		f.Effect = &history.Effect{Landed: landed, Note: note}
		return nil
	}
	return f, nil
}
