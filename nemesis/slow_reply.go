package nemesis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/proxy"
)

// SlowReply delays only the replies on one client's links: the server acts
// at once, but the client learns of it late. An acquire that returns after
// most of the TTL is gone leaves the client a lease shorter than its
// critical section, while the others, whose replies are prompt, take the
// lock as soon as the key expires. (Slow replies on every link would delay
// every client alike and hide this.)
//
// It lands by construction: the replies are slowed first, then the fault
// waits for the step's client to finish an acquire of the step's key begun
// under them that found the lock free (one that found it taken proves
// nothing). A lease that comes back with less left than the client's hold
// is lost inside the critical section, and the client is kept there until
// another client takes the key. A lock or client that refuses a lease that
// late (a timeout shorter than the delay, Redlock's per-node timeout, its
// validity check, more late round trips than its deadline allows) has met
// the fault too: it gave up with a late reply still held back for it, the
// fault landed, and the lock stayed safe. An acquire that got no lease
// although its reply was due out before its deadline (a busy machine made
// it later still) met nothing: a grant that never came is no lease the
// fault outlasted, and the fault waits for the next acquire; so does an
// acquire the harness stopped waiting for (an adapter silent past its op
// timeout), which is no refusal of the lock's. How much
// lease the client had is read on the lock's nodes;
// a lock that renews in the background first rests its client, so that no
// renewal timer of an earlier grant lengthens the aimed one.
type SlowReply struct {
	Delay    time.Duration `opt:"delay" default:"0.85ttl" margin:"0.05ttl..0.95ttl" help:"how late replies arrive: more than TTL − hold breaks a plain lease; below the op timeout, or the client gives up instead"`
	Duration time.Duration `opt:"duration" default:"5ttl" help:"how long replies stay slow"`
	// Links is onLinks's option with another default: one client's links.
	Links linkChoice `opt:"links" default:"client" help:"which client↔lock-node links: all, holder (the freshest holder's), client (a random client's), node (a random lock node's), client=N, node=N"`
}

func init() {
	Register(Spec{
		Name:        "slow-reply",
		Description: "downstream-only latency on one client's links: the server acted, the client hears of it late",
		Action:      history.ActionNetwork,
		New:         func() Nemesis { return new(SlowReply) },
	})
}

// Applies checks a fixed client or node number against the topology, and
// that the lock has a lease to shorten.
func (s *SlowReply) Applies(t Topology) error {
	if err := leased("slow-reply", t); err != nil {
		return err
	}
	return s.Links.clientsOnly("slow-reply", t)
}

func (s *SlowReply) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	delay, duration := s.Delay, s.Duration
	proc, err := processesOf(env)
	if err != nil {
		return nil, err
	}
	net, err := linksOf(env)
	if err != nil {
		return nil, err
	}
	step = s.Links.aimedAt(step) // links=client=N: slowed, aimed and judged on N
	c, key := step.Client, step.Key
	links, target, clients := s.Links.pick(env, net.Proxies(), step, &aimed{Holding: Holding{Client: c, Key: key}})
	// Keep c inside a hold its late reply began, until another client takes
	// the key: the lease ran out inside its planned critical section, and
	// the others need a moment to notice. The worker's bound leaves room
	// for an acquire of three round trips; the fault lets go earlier.
	bound := 3*delay + env.Hold() + env.Lease()
	// A lock that renews its lease in the background may still run a
	// renewal timer of an earlier grant, and it renews the aimed grant
	// too: Redisson 3.52 keeps one per grant until it fires while the
	// client holds nothing, and it renews by the client's hash field, the
	// same for every grant (measured: a grant 0.86 TTL late with 0.54 TTL
	// left). The client first holds nothing for a lease and a delay (a
	// renewal sent just before the rest is answered a delay late, and its
	// timer fires a third of the lease after that), so that every such
	// timer has ended when the aimed acquire begins. Its replies are
	// slowed only once it rests: a hold it was in when the fault began
	// would otherwise meet the late replies — Redisson's watchdog sends
	// each renewal a third of the lease after the last one's reply, so
	// replies a delay late let that lease run out — and break in a hold
	// the fault did not aim at (seen beside CPU hogs, 2026-11-29: an
	// acquire 13 ms older than the fault). The fault's window begins with
	// the rest: a client resting at the fault's request, and the key it
	// leaves alone, are the fault's doing (the checker's liveness counts a
	// fault's span apart).
	start := history.Now()
	var (
		rest    time.Duration
		rested  *resting
		restErr error
	)
	if env.Topology().KeepsAlive {
		rest = env.Lease() + delay
		rested, restErr = restFirst(ctx, env, proc, c, key, bound, rest)
		if restErr != nil {
			return nil, restErr
		}
	}
	// proxy.SlowReplyToxic: every reply late but a Redis handshake's, so
	// that a client reconnecting after a timeout still sends its command.
	// The replies held back on c's own links are logged: an acquire of c
	// that got no lease refused a late one only if it gave up with a reply
	// still held back for it (a later round trip than its deadline allowed,
	// a per-node timeout shorter than the delay).
	var own, others []*proxy.Link
	for _, l := range links {
		if l.Client == c {
			own = append(own, l)
		} else {
			others = append(others, l)
		}
	}
	logName := fmt.Sprintf("slow-reply-%d-%d", c, start)
	replies, forget := proxy.NewReplyLog(logName)
	healOwn, err := addToxics(own, "slow-reply", "slow-reply", []string{"downstream"}, map[string]any{"latency": delay.Milliseconds(), "log": logName})
	if err != nil {
		forget()
		return nil, errors.Join(err, unrest(proc, c, rested))
	}
	healOthers, err := addToxics(others, "slow-reply", "slow-reply", []string{"downstream"}, map[string]any{"latency": delay.Milliseconds()})
	if err != nil {
		forget()
		return nil, errors.Join(err, healOwn(ctx), unrest(proc, c, rested))
	}
	heal := func(ctx context.Context) error {
		defer forget()
		return errors.Join(healOwn(ctx), healOthers(ctx))
	}
	f := &Fault{
		Target:  target,
		Params:  map[string]string{"delay": delay.String(), "stream": "downstream", "duration": duration.String(), "client": strconv.Itoa(c), "key": key},
		Clients: clients,
		Start:   start,
		Heal:    heal,
	}
	var armed int64
	if rested != nil {
		f.Params["rest"] = rest.String()
		armed, err = rested.result()
	} else {
		armed, err = proc.Stretch(ctx, c, key, bound, 0, false)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		// The run ended during the rest: the replies were slow all the
		// same, and the fault's window says so (the scheduler heals it).
		f.Effect = &history.Effect{Note: fmt.Sprintf("the run ended before client %d's stretch of %s began", c, key)}
		return f, ctx.Err()
	case err != nil:
		return nil, errors.Join(err, heal(ctx))
	}
	// Only a lease that comes back late can be outlasted, or refused: an
	// acquire that found the lock taken says nothing about the late reply,
	// and neither does one that got no lease while no reply was held back
	// for it when it gave up — its reply was due out before its deadline,
	// and only a busy machine made it later still (a grant that never came
	// is no lease the fault outlasted). Wait for one the lock granted, or
	// one that gave up on a reply still held back (replies.HeldPast): a
	// lock that needs more late round trips than its deadline allows, or
	// asks each node for less than the delay, refuses a late lease by its
	// own design.
	after := max(armed, start)
	// The lease is read on the lock's nodes while the acquire is in
	// flight too: a lock that asks its nodes one after another holds
	// leases there that ran out before it returned.
	seen, unwatch := watchLease(ctx, env, key)
	var acq Acquire
	missed := 0     // acquires that got no lease, with no reply held back
	unanswered := 0 // acquires the harness stopped waiting for
	wctx, cancel := context.WithTimeout(ctx, triggerWait(env))
	err = env.Await(wctx, func(v View) bool {
		acq = v.Acquires[c]
		if acq.Key != key || acq.Invoked < after || acq.Outcome == "" || acq.Outcome == history.OK {
			return acq.Key == key && acq.Invoked >= after && acq.Outcome == history.OK
		}
		switch {
		case acq.Outcome == history.Fail && acq.NoValidity:
			// Granted late, with no validity left: the caller that checks
			// it gave the lease up at once, and its acquire was refused.
			return true
		case acq.Outcome == history.Info && acq.Unanswered:
			// The harness gave up on the adapter, not the lock on its
			// lease: the library may still be waiting for it.
			unanswered++
		case acq.Outcome == history.Info && replies.HeldPast(acq.Invoked, acq.Done):
			// A reply held back on the client's links when it gave up: its
			// acquire's, or a keep-alive's whose timeout is the lock's own
			// (a ZooKeeper client drops a connection whose pings answer
			// later than its read timeout, and the acquire with it).
			return true
		case acq.Outcome == history.Info:
			missed++
		}
		after = acq.Invoked + 1
		return false
	})
	cancel()
	unwatch()
	if err != nil {
		// The replies were slow all along: a fault that happened, if one
		// that never met a lease. The schedule records it and heals it.
		note := fmt.Sprintf("no acquire of %s by client %d under the slow replies found the lock free", key, c)
		if missed > 0 {
			note += fmt.Sprintf("; %d got no lease, with no reply held back for it when it gave up (its late reply was due before its deadline): no late lease was handed out to outlast", missed)
		}
		if unanswered > 0 {
			note += fmt.Sprintf("; %d got no answer from the adapter within the op timeout (the harness stopped waiting, not the lock)", unanswered)
		}
		f.Effect = &history.Effect{Note: note}
		return f, errors.Join(ctx.Err(), proc.Unstretch(c))
	}
	took := time.Duration(acq.Done - acq.Invoked)
	if acq.NoValidity {
		f.Effect = &history.Effect{Landed: true, Note: fmt.Sprintf("client %d's acquire of %s returned after %s, granted with no validity left, and it gave the lease up at once (a refusal)", c, key, round(took))}
		f.Duration = time.Until(timeOf(start).Add(duration))
		return f, proc.Unstretch(c)
	}
	if acq.Outcome != history.OK {
		f.Effect = &history.Effect{Landed: true, Note: fmt.Sprintf("client %d's acquire of %s under the slow replies got no lease: it gave up after %s with a reply %s late still held back for it, so a late lease was not handed out", c, key, round(took), delay)}
		f.Duration = time.Until(timeOf(start).Add(duration))
		return f, proc.Unstretch(c)
	}
	h, held := holdingOf(env, c, key, acq.Invoked)
	if !held { // it let go of the lease already (a validity check)
		f.Effect = &history.Effect{Landed: true, Note: fmt.Sprintf("client %d's acquire of %s returned after %s, and it gave the lease up at once", c, key, round(took))}
		f.Duration = time.Until(timeOf(start).Add(duration))
		return f, proc.Unstretch(c)
	}
	a := &aimed{env: env, proc: proc, Holding: h, bound: bound, armed: armed}
	f.Aim = a.aim()
	// How much lease the client had when it learned it held the lock: as
	// the lock's nodes tell (a lock that confirms its write with another
	// round trip, as token-lua-wait's WAIT, has waited for two late
	// replies since it set the key); where they cannot, at most lease −
	// delay, since the command that set it ran at the latest a delay
	// before the last reply arrived.
	hold := env.Hold()
	left, measured := leaseLeftAtGrant(ctx, env, h, seen)
	how := "by its nodes"
	if !measured {
		left, how = env.Lease()-delay, "at the latest reply"
	}
	if left >= hold {
		f.Effect = &history.Effect{Landed: false, Note: fmt.Sprintf("client %d's acquire of %s returned after %s; its lease had up to %s left (%s), enough for its %s hold", c, key, round(took), round(left), how, hold)}
		err = a.release()
	} else {
		f.Effect = &history.Effect{Landed: true, Note: fmt.Sprintf("client %d's acquire of %s returned after %s; its lease had at most %s left (%s), less than its %s hold", c, key, round(took), round(left), how, hold)}
		// The others may be between attempts (a failed wait, then think
		// time): keep c inside until one takes the key or the bound passes.
		taker, letGo, uerr := a.untilTaken(ctx)
		a.takenNote(f.Effect, taker, letGo)
		err = uerr
	}
	// When the servers answered it: from then on its replies waited in the
	// proxies, and a server's stall after that delayed nothing of it.
	if came, ok := replies.LastCame(acq.Invoked, acq.Done); ok {
		f.Effect.Answered = came
	}
	f.Duration = time.Until(timeOf(start).Add(duration))
	return f, err
}

// stretchDone is what a Processes.Stretch that ran on its own goroutine
// returned.
type stretchDone struct {
	at  int64
	err error
}

// resting is a stretch restFirst asked for: its result comes on done, and
// cancel stops waiting for it.
type resting struct {
	done   chan stretchDone
	cancel context.CancelFunc
}

// restFirst asks client c to rest for rest and then stay inside its holds
// of key for bound (Processes.Stretch, which returns once the rest is
// over), and returns as soon as the client has begun the rest — it holds
// nothing then; or the Stretch's error when it failed before the client
// rested.
func restFirst(ctx context.Context, env Env, proc Processes, c int, key string, bound, rest time.Duration) (*resting, error) {
	sctx, cancel := context.WithCancel(ctx)
	r := &resting{done: make(chan stretchDone, 1), cancel: cancel}
	asked := history.Now()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		at, err := proc.Stretch(sctx, c, key, bound, rest, false)
		if err != nil {
			stop()
		}
		r.done <- stretchDone{at, err}
	}()
	if err := env.Await(wctx, func(v View) bool { return v.Resting[c] >= asked }); err != nil {
		d := <-r.done
		if d.err != nil {
			cancel()
			return nil, d.err
		}
		r.done <- d // rested and began the stretch between two events
	}
	return r, nil
}

// result waits for the stretch's Stretch to return.
func (r *resting) result() (int64, error) {
	d := <-r.done
	r.cancel()
	return d.at, d.err
}

// unrest withdraws the stretch restFirst asked for (nil: none) and stops
// waiting for it.
func unrest(proc Processes, c int, r *resting) error {
	if r == nil {
		return nil
	}
	err := proc.Unstretch(c)
	r.cancel()
	<-r.done
	return err
}
