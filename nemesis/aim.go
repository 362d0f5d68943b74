package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/locks"
)

// Faults land by construction. A fault meant to hit a lease does not hope
// to catch a holder: it asks its step's client to stay in its critical
// section once its hold time is up (Processes.Stretch), waits for that client's
// next hold of the step's key, and only then acts. The client is inside
// its critical section when the fault begins, however slow the machine is,
// and stays there until the fault's effect is certain (the lease was lost
// and a second client took the key, or the lease survived) — but never past
// its lease less a margin, a bound the worker enforces on its own: a
// stretch can never be what makes a hold outlive its lease. (slow-hold,
// whose fault is exactly a hold outliving its lease, is the exception.)

// aimed is the hold a fault waits for and keeps inside.
type aimed struct {
	env  Env
	proc Processes // keeps the client inside; nil when it was not asked
	Holding
	bound    time.Duration // the stretch's bound since the acquire's invoke
	armed    int64         // when the client said it would stay inside
	released bool
	// sameToken keeps the client inside, once its lease is lost, until
	// another client holds the key under a fencing token no lower than
	// its own, not only until another client holds it (lostEffect).
	sameToken bool
}

// triggerWait bounds how long a step waits for its client to hold its key.
func triggerWait(env Env) time.Duration {
	return max(20*(env.TTL()+env.Hold()), 5*time.Second)
}

// stretchBound is how long after its acquire's invoke an aimed hold may be
// kept inside: the lease less a fifth of it (at least 20 ms), the time the
// client needs to write and invoke its release while the lease still lives.
// A lease that the lock keeps alive, or a lock without a lease, does not
// run out under a client that runs: its holder may stay four leases, and
// at least 10 s (30 s for a store of JVMs), long enough for a store to
// restart a member, elect a leader or promote a standby on a busy machine
// before the nemesis asks whether the grant survived.
func stretchBound(env Env) time.Duration {
	l := env.Lease()
	if t := env.Topology(); t.Leaseless || t.KeepsAlive {
		// A store of JVMs may take far longer to restart a member beside
		// busy cores (a Hazelcast member, which rejoins its CP groups as a
		// new member: 20 s beside eight CPU hogs on 2026-11-29).
		if st, err := cluster.LookupStore(t.Store); err == nil && st.JVM {
			return max(4*l, 30*time.Second)
		}
		return max(4*l, 10*time.Second)
	}
	return max(l-max(l/5, 20*time.Millisecond), l/2)
}

// aimHeld aims at the step's hold for a fault that needs no help to
// outlast a lease (a cut or slow link, a frozen node). A lease that runs
// out needs no holder kept inside; a lock without a lease, or whose lease
// is kept alive, keeps its holder inside until release, which the caller
// calls once the fault is in place: finding the node to act on asks the
// store's members (HoldsLease), which can take longer than a short hold
// on a busy machine, and a fault that begins after the hold ended did
// not land.
func aimHeld(ctx context.Context, env Env, step Step) (*aimed, error) {
	if t := env.Topology(); t.Leaseless || t.KeepsAlive {
		return aimAt(ctx, env, step, stretchBound(env))
	}
	return aimAt(ctx, env, step, 0)
}

// aimAt asks the step's client to stay in its holds of the step's key for at
// most bound, and waits for its next such hold. It wraps ErrNoTarget when
// the client does not hold the key within triggerWait (or has exited).
//
// With bound 0 the client is not kept inside: the fault only waits for the
// hold (a slow or cut link needs no help to outlast a lease).
func aimAt(ctx context.Context, env Env, step Step, bound time.Duration) (*aimed, error) {
	return aimStop(ctx, env, step, bound, 0, false)
}

// aimStop is aimAt whose client, with stop, stops its own process once the
// aimed hold's work is done, before its write (Processes.Stretch); with
// rest > 0 the aimed hold is the first the client begins after it has held
// nothing for rest. Keeping the client inside (bound > 0) needs the
// Processes capability.
func aimStop(ctx context.Context, env Env, step Step, bound, rest time.Duration, stop bool) (*aimed, error) {
	ack := history.Now()
	var proc Processes
	if bound > 0 {
		var err error
		if proc, err = processesOf(env); err != nil {
			return nil, err
		}
		if ack, err = proc.Stretch(ctx, step.Client, step.Key, bound, rest, stop); err != nil {
			return nil, err
		}
	}
	return awaitAimed(ctx, env, proc, step, bound, ack, ack)
}

// awaitAimed waits for the step's client to hold the step's key by an
// acquire invoked at or after after; the client said at armed that it
// would stay inside for bound (0: not asked; proc asked it otherwise).
func awaitAimed(ctx context.Context, env Env, proc Processes, step Step, bound time.Duration, armed, after int64) (*aimed, error) {
	wait := triggerWait(env)
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var h Holding
	err := env.Await(wctx, func(v View) bool {
		for _, x := range v.Holders {
			if x.Client == step.Client && x.Key == step.Key && x.Invoked >= after {
				h = x
				return true
			}
		}
		return false
	})
	if err != nil {
		var uerr error
		if bound > 0 {
			uerr = proc.Unstretch(step.Client)
		}
		if ctx.Err() != nil {
			return nil, errors.Join(ctx.Err(), uerr)
		}
		return nil, errors.Join(fmt.Errorf("%w: client %d did not hold %s within %v", ErrNoTarget, step.Client, step.Key, wait), uerr)
	}
	return &aimed{env: env, proc: proc, Holding: h, bound: bound, armed: armed, released: bound == 0}, nil
}

// aimAny is aimAt for a fault that needs a holder of the step's key, not a
// particular client (a failover, a crash of a node that holds the lease):
// every client still running is asked to stay inside its next hold of the
// key, the first hold the view shows is the aim, and the others are let go
// at once. A client another fault keeps inside (a stretch in force, of
// another nemesis of the run) is left to it. Waiting for one client to win
// the key can take many holds when the lock is contended (a lock whose
// every acquire waits for replicas takes a second a try, and four
// clients' tries fall in step), and a run can end before it comes; the
// next hold by anyone comes as soon as the lock allows. A client other
// than except (-1: none) is asked.
func aimAny(ctx context.Context, env Env, step Step, bound time.Duration, except int) (*aimed, error) {
	if bound == 0 {
		return aimAt(ctx, env, step, 0)
	}
	r, err := armAll(ctx, env, step.Key, bound, except)
	if err != nil {
		return nil, err
	}
	return r.await(ctx, triggerWait(env))
}

// armedAll are the clients asked to stay inside their next hold of a key
// (aimAny's first half), each with when it said it would.
type armedAll struct {
	env    Env
	proc   Processes
	key    string
	bound  time.Duration
	except int // the client not asked (-1: none)
	at     map[int]int64
}

// armAll asks every client still running but except (and those another
// fault keeps inside) to stay inside its next hold of key, for bound.
func armAll(ctx context.Context, env Env, key string, bound time.Duration, except int) (*armedAll, error) {
	proc, err := processesOf(env)
	if err != nil {
		return nil, err
	}
	r := &armedAll{env: env, proc: proc, key: key, bound: bound, except: except, at: map[int]int64{}}
	busy := snapshot(env).Stretched
	for c := range env.Topology().Clients {
		if _, ok := busy[c]; ok || c == except {
			continue
		}
		at, err := proc.Stretch(ctx, c, key, bound, 0, false)
		switch {
		case errors.Is(err, ErrNoTarget) && ctx.Err() == nil:
			// It has exited, or did not take the line in time (stopped):
			// withdrawn, in case it takes it later.
			_ = proc.Unstretch(c)
			continue
		case err != nil:
			return nil, errors.Join(err, r.letGo(-1), proc.Unstretch(c))
		}
		r.at[c] = at
	}
	if len(r.at) == 0 {
		return nil, fmt.Errorf("%w: no client could be asked to stay inside its hold of %s (exited, or kept by another fault)", ErrNoTarget, key)
	}
	return r, nil
}

// letGo withdraws the stretch of every armed client but except (none
// armed: nothing).
func (r *armedAll) letGo(except int) error {
	if r == nil {
		return nil
	}
	var errs []error
	for c := range r.at {
		if c != except {
			errs = append(errs, r.proc.Unstretch(c))
		}
	}
	return errors.Join(errs...)
}

// await waits, wait at most, for a hold of the key in force that an armed
// client began after it said it would stay inside, and aims at it,
// letting the others go (all of them when none came).
func (r *armedAll) await(ctx context.Context, wait time.Duration) (*aimed, error) {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var h Holding
	err := r.env.Await(wctx, func(v View) bool {
		for _, x := range v.Holders {
			if at, ok := r.at[x.Client]; ok && x.Key == r.key && x.Invoked >= at {
				h = x
				return true
			}
		}
		return false
	})
	if err != nil {
		uerr := r.letGo(-1)
		if ctx.Err() != nil {
			return nil, errors.Join(ctx.Err(), uerr)
		}
		return nil, errors.Join(fmt.Errorf("%w: no client held %s within %v", ErrNoTarget, r.key, wait), uerr)
	}
	a := &aimed{env: r.env, proc: r.proc, Holding: h, bound: r.bound, armed: r.at[h.Client]}
	if err := r.letGo(h.Client); err != nil {
		return nil, errors.Join(err, a.release())
	}
	return a, nil
}

// aimHolder aims at the next hold of the step's key by any client
// (aimAny), and returns the lock nodes that hold its lease. For a quorum
// lock, votes chooses among holds: bare waits for one with no vote to
// spare, on exactly the lock's quorum of nodes — the hold that one node
// forgetting breaks (Kleppmann's case against Redlock); spare for one
// with a vote to spare, which one node forgetting cannot break; any takes
// the next. A quorum lock's holder usually gets every node; a bare
// majority takes two clients asking at the same moment and splitting the
// nodes, or a node out of reach. Every hold of a single-node lock
// qualifies.
func aimHolder(ctx context.Context, env Env, step Step, bound time.Duration, votes string) (*aimed, []int, error) {
	wait := triggerWait(env)
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		a, err := aimAny(wctx, env, step, bound, -1)
		switch {
		case err != nil && ctx.Err() == nil && wctx.Err() != nil:
			return nil, nil, fmt.Errorf("%w: no client held %s with votes=%s within %v", ErrNoTarget, step.Key, votes, wait)
		case err != nil:
			return nil, nil, err
		}
		held := holdersOf(ctx, env, env.LockNodes(), a.Holding)
		if q := quorum(env); q == 1 || votes == "any" || (votes == "bare") == (len(held) <= q) {
			return a, held, nil
		}
		if err := a.release(); err != nil {
			return nil, nil, err
		}
	}
}

// aim is the hold as the history records it.
func (a *aimed) aim() *history.Aim { return &history.Aim{Client: a.Client, Key: a.Key, Since: a.OK} }

// release lets the client go; calling it again, or on no hold, does
// nothing.
func (a *aimed) release() error {
	if a == nil || a.released {
		return nil
	}
	a.released = true
	return a.proc.Unstretch(a.Client)
}

// liveAt says whether the lease was certainly still live at t by its own
// TTL: the server set it after the acquire was invoked, so it lives at
// least until that invoke plus the lease.
// A leaseless lock's grant is live as long as the hold, and so is a lease
// that the lock keeps alive while its client runs: the aim keeps the
// client inside, running, until the effect is known (a fault that stops
// the client is judged by how long it lasted: lastedEffect).
func (a *aimed) liveAt(t int64) bool {
	if tp := a.env.Topology(); tp.Leaseless || tp.KeepsAlive {
		return true
	}
	return t < a.Invoked+a.env.Lease().Nanoseconds()
}

// untilTaken keeps the client inside until another client holds its key —
// the overlap that a lost lease lets happen —, its hold ends, or the
// stretch's bound passes, then lets it go. It returns who took the key
// while the client still held it, or -1. letGo says the client released
// the hold before anyone took the key (the run's end cut its work short,
// or the worker's own bound came an instant before the fault's):
// that shows nothing of what the lost lease allowed. (A hold its lock
// reported lost ended by the lock's own check, and is not letGo.) With
// sameToken, a taker whose fencing token is lower than the client's does
// not count (see prepared.effect).
func (a *aimed) untilTaken(ctx context.Context) (taker int, letGo bool, err error) {
	taker = -1
	if left := time.Duration(a.Invoked + a.bound.Nanoseconds() - history.Now()); left > 0 {
		wctx, cancel := context.WithTimeout(ctx, left)
		_ = a.env.Await(wctx, func(v View) bool {
			if !a.heldIn(v) {
				lost, reported := v.Lost[a.Client][a.Key]
				letGo = !reported || lost < a.Invoked
				return true
			}
			for _, h := range v.Holders {
				if h.Key == a.Key && h.Client != a.Client && (!a.sameToken || h.Fence >= a.Fence) {
					taker = h.Client
					return true
				}
			}
			return false
		})
		cancel()
	}
	return taker, letGo, a.release()
}

// heldIn says whether the aimed hold is still in progress in v.
func (a *aimed) heldIn(v View) bool {
	for _, h := range v.Holders {
		if h.Client == a.Client && h.Key == a.Key && h.Invoked == a.Invoked {
			return true
		}
	}
	return false
}

// takenNote completes the effect e of a fault that took the aimed lease
// away, with what untilTaken saw: a hold let go before anyone took the key
// is no evidence, and the fault did not land.
func (a *aimed) takenNote(e *history.Effect, taker int, letGo bool) {
	switch {
	case taker >= 0:
		e.Note += fmt.Sprintf("; client %d then acquired %s while client %d still held it", taker, a.Key, a.Client)
	case letGo:
		e.Landed = false
		e.Note += fmt.Sprintf("; client %d let go of %s (the run's end or its stretch's bound) before another client took it: nothing shows what the lost lease allowed", a.Client, a.Key)
	default:
		e.Note += fmt.Sprintf("; no other client acquired %s before client %d let go", a.Key, a.Client)
	}
}

// throughBound keeps the client inside until the stretch's bound passes,
// even once another client holds its key, then lets it go: the overlap a
// lost lease lets happen then lasts until the holder leaves, long enough
// that no stall of the harness can pass for its cause. It returns the
// first client seen holding the key meanwhile, while the client still held
// it, or -1.
func (a *aimed) throughBound(ctx context.Context) (int, error) {
	taker := -1
	if left := time.Duration(a.Invoked + a.bound.Nanoseconds() - history.Now()); left > 0 {
		wctx, cancel := context.WithTimeout(ctx, left)
		_ = a.env.Await(wctx, func(v View) bool {
			held, other := a.heldIn(v), -1
			for _, h := range v.Holders {
				if h.Key == a.Key && h.Client != a.Client {
					other = h.Client
				}
			}
			if held && taker < 0 {
				taker = other
			}
			return !held // it let go: nothing more to see
		})
		cancel()
	}
	return taker, a.release()
}

// lostEffect is the effect of a fault that took a lease away on a node
// while its holder was inside (a crash, a clock jump): it landed if the
// lease was still live by its TTL when it was taken away (at), and the
// lease is lost when the holder is left with fewer nodes than the lock's
// quorum. It then keeps the holder inside until another client took the
// key; a kept lease lets it go at once.
func (a *aimed) lostEffect(ctx context.Context, at int64, v votes, what string) (*history.Effect, error) {
	if !a.liveAt(at) {
		err := a.release()
		return &history.Effect{Landed: false, Note: fmt.Sprintf("%s, %s after client %d's acquire of %s: its %s lease had run out by then, nothing was left to lose",
			what, round(time.Duration(at-a.Invoked)), a.Client, a.Key, a.env.Lease())}, err
	}
	if _, holding := holdingOf(a.env, a.Client, a.Key, a.Invoked); !holding {
		err := a.release()
		if lost, ok := snapshot(a.env).Lost[a.Client][a.Key]; ok && lost >= a.Invoked {
			// Its lock told it the lease was lost (a library that takes a
			// lost connection for a lost lock), and it stopped: the fault
			// met the lease. Whether the lease outlived the fault is the
			// nodes' to say: a consensus store that still holds it kept
			// it (the lock gave it up only to be safe), and that is
			// evidence; one that forgot it lost it, and the lock gave it
			// up before anyone could take it, which runs no race.
			note := fmt.Sprintf("%s; client %d's lock reported its lease of %s lost %s after its acquire, and the client stopped", what, a.Client, a.Key, round(time.Duration(lost-a.Invoked)))
			if !v.lost() {
				return &history.Effect{Landed: true, Lease: history.LeaseKept,
					Note: fmt.Sprintf("%s, yet the nodes kept the lease: %s", note, v)}, err
			}
			return &history.Effect{Landed: true, Lease: history.LeaseLost,
				Note: fmt.Sprintf("%s before the fault could take the lease from under it (%s)", note, v)}, err
		}
		// It let go (its stretch ran out) before the fault had done its
		// work: whatever the nodes forgot, no holder was left to overlap
		// with, so the fault did not land (and a node without the key
		// says nothing about it).
		return &history.Effect{Landed: false,
			Note: fmt.Sprintf("%s; client %d had let go of %s by then, before the fault could take it away", what, a.Client, a.Key)}, err
	}
	e := &history.Effect{Landed: true, Note: what + "; " + v.String()}
	if !v.lost() {
		e.Lease = history.LeaseKept
		return e, a.release()
	}
	e.Lease = history.LeaseLost
	taker, letGo, err := a.untilTaken(ctx)
	a.takenNote(e, taker, letGo)
	return e, err
}

// votes are the lock nodes that held the aimed key before a fault and
// after it, against the number a holder needs (the quorum).
type votes struct {
	nodes         int
	before, after []int
	quorum        int
}

func (v votes) lost() bool { return len(v.after) < v.quorum }

func (v votes) String() string {
	if v.nodes == 1 {
		if len(v.after) == 0 {
			return "the node no longer held the lock"
		}
		return "the node still held the lock"
	}
	return fmt.Sprintf("the lock was held on nodes %s before and on %s after; it needs %d of %d", nodeSet(v.before), nodeSet(v.after), v.quorum, v.nodes)
}

func nodeSet(ns []int) string {
	if len(ns) == 0 {
		return "none"
	}
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = "n" + strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// holdersOf returns the indices of the nodes that still hold lease h, asked
// directly (never through a client's link): its key holds its token (as
// the value, or as a field of a hash), or, for a lock whose token says
// nothing about the holder, the key exists. A node that does not answer
// does not count.
func holdersOf(ctx context.Context, env Env, nodes []cluster.Node, h Holding) []int {
	var out []int
	for i, n := range nodes {
		if HasLease(ctx, n, env.Topology().KeyPrefix, h.On(i, len(nodes))) {
			out = append(out, i)
		}
	}
	return out
}

// On is lease h as lock node i of n keeps it: its token is node i's mark
// (locks.Mark: one of a comma-separated mark per node, as RedissonRedLock's;
// the bytes of a token given as token_b64).
func (h Holding) On(i, n int) Holding {
	h.Token = locks.Mark(h.Token, i, n)
	return h
}

// HasLease asks node n directly whether it keeps lease h: a store's
// member by its own means (cluster.LeaseHolder), a Redis node by the key
// (prefix, the one the lock adds, + h.Key) holding h.Token as its value or
// as a field of its hash — or, for a token that says nothing of its holder
// ("" or "1"), by the key's existence.
func HasLease(ctx context.Context, n cluster.Node, prefix string, h Holding) bool {
	if lh, ok := n.(cluster.LeaseHolder); ok {
		// A store's member answers over a session of its own (a
		// PostgreSQL backend forked for it, a ZooKeeper session): give a
		// busy machine time, since a member that does not answer counts as
		// one that lost the lease.
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		held, err := lh.HoldsLease(ctx, h.Key, h.Token)
		return err == nil && held
	}
	ms, err := cluster.LeaseTTL(ctx, n.Addr(), prefix+h.Key, h.Token)
	return err == nil && ms != -2
}

// leaseLeftAtGrant measures how much of lease h was left when its acquire
// returned (h.OK), asking the lock nodes directly: a node that keeps h
// answers its key's PTTL, read at a time after the grant (the answer's
// arrival, so the figure is an upper bound), and one that no longer does
// had at most the time since the grant — or, when seen (a leaseSight kept
// while the acquire was in flight) saw the lease on it, at most what was
// left of it by its last expiry read there: a lock that asks its nodes one
// after another under late replies holds leases that ran out on its first
// nodes before its acquire returned, and on all of them before the nodes
// can be asked afterwards. The lease is lost once fewer than a quorum keep
// it: the quorum-th longest. ok is false when a node does not answer, when
// nothing was read of the lease on any node (the token may not be what the
// lock stores), or when the nodes are a store's members, which say whether
// they keep a lease, not for how long.
func leaseLeftAtGrant(ctx context.Context, env Env, h Holding, seen *leaseSight) (left time.Duration, ok bool) {
	prefix := env.Topology().KeyPrefix
	var lefts []time.Duration
	read := 0
	nodes := env.LockNodes()
	for i, n := range nodes {
		if _, store := n.(cluster.LeaseHolder); store {
			return 0, false
		}
		token := h.On(i, len(nodes)).Token
		ms, err := cluster.LeaseTTL(ctx, n.Addr(), prefix+h.Key, token)
		answered := history.Now()
		if err != nil {
			return 0, false
		}
		since := time.Duration(answered - h.OK)
		switch expiry, saw := seen.expiry(i, token, h.Invoked); {
		case ms == -1: // no expiry: this node never lets the lease go
			lefts, read = append(lefts, time.Duration(1<<62)), read+1
		case ms >= 0:
			lefts, read = append(lefts, since+time.Duration(ms)*time.Millisecond), read+1
		case saw:
			lefts, read = append(lefts, min(since, max(0, time.Duration(expiry-h.OK)))), read+1
		default:
			lefts = append(lefts, since)
		}
	}
	q := quorum(env)
	if read == 0 || len(lefts) < q {
		return 0, false
	}
	slices.Sort(lefts)
	return lefts[len(lefts)-q], true
}

// leaseSight is what the lock nodes said of a key while an acquire was in
// flight: on each node, for each lease mark the key held (a string's value,
// a hash's field; "" for any), when its expiry read last said it would run
// out (an upper bound: the read's answer time plus the PTTL), and the
// first time it was seen.
type leaseSight struct {
	mu    sync.Mutex
	nodes []map[string]sighted
}

type sighted struct{ first, expiry int64 }

// watchLease reads key on every Redis lock node every hundredth of the TTL
// (at least every millisecond) until the returned stop is called (stop waits for the reads to end).
// Store members are not read (nil sight).
func watchLease(ctx context.Context, env Env, key string) (*leaseSight, func()) {
	nodes := env.LockNodes()
	for _, n := range nodes {
		if _, store := n.(cluster.LeaseHolder); store {
			return nil, func() {}
		}
	}
	s := &leaseSight{nodes: make([]map[string]sighted, len(nodes))}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i, n := range nodes {
		s.nodes[i] = map[string]sighted{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cluster.RedisClient(n.Addr())
			defer c.Close()
			for ctx.Err() == nil {
				pttl, marks, exists, err := cluster.KeyMarks(ctx, c, env.Topology().KeyPrefix+key)
				if err == nil && exists {
					s.saw(i, pttl, marks, history.Now())
				}
				select {
				case <-ctx.Done():
				case <-time.After(max(time.Millisecond, env.TTL()/100)):
				}
			}
		}()
	}
	return s, func() { cancel(); wg.Wait() }
}

func (s *leaseSight) saw(i int, pttl int64, marks []string, at int64) {
	expiry := int64(1 << 62) // no expiry
	if pttl >= 0 {
		expiry = at + pttl*int64(time.Millisecond)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range append(marks, "") {
		x, ok := s.nodes[i][m]
		if !ok {
			x.first = at
		}
		x.expiry = expiry
		s.nodes[i][m] = x
	}
}

// expiry says when lease token, first seen on node i at or after from, was
// last read to run out there ("" or "1": any lease of the key).
func (s *leaseSight) expiry(i int, token string, from int64) (int64, bool) {
	if s == nil {
		return 0, false
	}
	if token == "1" {
		token = ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	x, ok := s.nodes[i][token]
	return x.expiry, ok && x.first >= from
}

// quorum is how many lock nodes a holder needs.
func quorum(env Env) int { return max(env.Topology().Quorum, 1) }

// lastedEffect is the effect of a fault that must outlast the lease while it
// lives (a pause of the holder, a slow or cut link): it landed when it began
// while the aimed lease was live and the lease surely ran out before it
// ended — it lasted a whole lease (a renewal may have come just before it),
// or, for a fault that keeps the lease from being given back (frozen: the
// holder stopped, its node frozen, its links cut) on a lease nobody
// renews, it ended past the acquire's return plus the lease (a short pause
// late in a hold outlasts what was left of it). A slow link lets a release
// through, so it must last the whole lease. what names the fault ("client
// 2 was stopped").
//
// A leaseless lock has no lease to outlast: the fault landed when it hit the
// hold, and the grant is kept unless the history shows otherwise (the
// checker judges an overlap).
func (a *aimed) lastedEffect(start, end int64, what string, frozen bool) *history.Effect {
	lasted, lease := time.Duration(end-start), a.env.Lease()
	if a.env.Topology().Leaseless {
		return &history.Effect{Landed: true, Lease: history.LeaseKept,
			Note: fmt.Sprintf("%s for %s while client %d held %s; the lock has no lease that could run out meanwhile", what, round(lasted), a.Client, a.Key)}
	}
	tp := a.env.Topology()
	renewed := tp.KeepsAlive || tp.Renews
	outlived := frozen && !renewed && end >= a.OK+lease.Nanoseconds()
	e := &history.Effect{Landed: a.liveAt(start) && (lasted >= lease || outlived)}
	switch {
	case !a.liveAt(start):
		e.Note = fmt.Sprintf("%s only after the lease of client %d on %s had run out by its TTL", what, a.Client, a.Key)
	case lasted >= lease:
		e.Note = fmt.Sprintf("%s for %s while client %d held %s, past its %s lease", what, round(lasted), a.Client, a.Key, lease)
	case outlived:
		e.Note = fmt.Sprintf("%s for %s while client %d held %s, past the end of its %s lease (granted %s before the fault began)",
			what, round(lasted), a.Client, a.Key, lease, round(time.Duration(start-a.OK)))
	case renewed && frozen:
		e.Note = fmt.Sprintf("%s for %s while client %d held %s, less than its %s lease, which is renewed", what, round(lasted), a.Client, a.Key, lease)
	default:
		e.Note = fmt.Sprintf("%s for %s while client %d held %s, ending before its %s lease did", what, round(lasted), a.Client, a.Key, lease)
	}
	return e
}

func round(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// timeOf maps a history time to a time.Time, for waiting until it.
func timeOf(t int64) time.Time { return time.Now().Add(time.Duration(t - history.Now())) }

// holdingOf finds client's hold of key begun by the acquire invoked at
// invoked, if it is still in progress.
func holdingOf(env Env, client int, key string, invoked int64) (Holding, bool) {
	for _, h := range env.Holders() {
		if h.Client == client && h.Key == key && h.Invoked == invoked {
			return h, true
		}
	}
	return Holding{}, false
}

// snapshot is the workload as the coordinator sees it now.
func snapshot(env Env) View {
	var now View
	_ = env.Await(context.Background(), func(v View) bool { now = v; return true })
	return now
}

// awaitWaiter waits until client c is blocked in an acquire of key: its
// acquire in flight for longer than a try (a tenth of the TTL) while
// another client holds key. It wraps ErrNoTarget when that does not happen
// within triggerWait (an acquire that only tries once never waits: the run
// needs --wait).
func awaitWaiter(ctx context.Context, env Env, proc Processes, c int, key string) error {
	deadline := time.Now().Add(triggerWait(env))
	for {
		if slices.Contains(proc.Acquiring(env.TTL()/10), c) {
			for _, h := range env.Holders() {
				if h.Key == key && h.Client != c {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: client %d was not seen waiting for %s behind another's hold within %v (a blocking acquire needs --wait)", ErrNoTarget, c, key, triggerWait(env))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// aRelease releases a, if any.
func aRelease(a *aimed) error {
	if a == nil {
		return nil
	}
	return a.release()
}
