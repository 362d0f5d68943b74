package nemesis

import (
	"context"
	"errors"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/locks"
)

// What a client's acquire in flight was granted, and what it did with the
// grant: shared by the faults that act while an acquire is on its way
// (pause-client phase=acquire and phase=wait, client-clock).

// holdBeside waits, a few holds at most, for a client other than c to
// begin a hold of key, and keeps it inside that hold (a stretch: its
// worker lets go at its lease less a margin from its acquire, on its own)
// until the caller lets it go (aimed.release): a stale grant c acts on
// once woken, or once its replies go on, then overlaps that hold by
// construction, however slowly the machine lets c get to it. A fresh hold
// that no stretch reaches may come first (beside); the caller's heldAt
// tells whether the grant came while it lasted. Nil, with
// no error, when no other client held key in time (or every other one is
// kept by another fault, or has exited: the run is ending).
func holdBeside(ctx context.Context, env Env, c int, key string) (*aimed, error) {
	r, err := armBeside(ctx, env, c, key)
	if err != nil || r == nil {
		return nil, err
	}
	return r.beside(ctx)
}

// armBeside is holdBeside's first half, for a fault that knows early
// that it will need the hold: the clients but c are asked now to stay
// inside their next hold of key (nil when none could be).
func armBeside(ctx context.Context, env Env, c int, key string) (*armedAll, error) {
	r, err := armAll(ctx, env, key, stretchBound(env), c)
	if err != nil && (errors.Is(err, ErrNoTarget) || ctx.Err() != nil) {
		return nil, nil // none to ask, or the run is ending
	}
	return r, err
}

// beside is holdBeside's second half: a hold of the key in force by a
// client other than the one not asked — one an armed client began after
// it was asked, less than half its bound ago, kept inside; or, not kept,
// any hold begun less than half a hold ago (a blocking acquire queued for
// the key since before the clients were asked is granted by an acquire
// the stretch does not reach: taken while fresh, as it comes). Nil when
// none came in a few holds.
func (r *armedAll) beside(ctx context.Context) (*aimed, error) {
	if r == nil {
		return nil, nil
	}
	env := r.env
	wctx, cancel := context.WithTimeout(ctx, max(2*(env.Hold()+env.TTL()), time.Second))
	defer cancel()
	var h Holding
	kept := false
	err := env.Await(wctx, func(v View) bool {
		now := history.Now()
		for _, x := range v.Holders {
			if x.Client == r.except || x.Key != r.key {
				continue
			}
			at, armed := r.at[x.Client]
			kept = armed && x.Invoked >= at && now-x.OK < (r.bound/2).Nanoseconds()
			if kept || now-x.OK < (env.Hold()/2).Nanoseconds() {
				h = x
				return true
			}
		}
		return false
	})
	if err != nil {
		uerr := r.letGo(-1)
		if ctx.Err() != nil || wctx.Err() != nil {
			return nil, uerr // none came, or the run is ending
		}
		return nil, errors.Join(err, uerr)
	}
	if !kept {
		return &aimed{env: env, Holding: h, released: true}, r.letGo(-1)
	}
	a := &aimed{env: env, proc: r.proc, Holding: h, bound: r.bound, armed: r.at[h.Client]}
	if err := r.letGo(h.Client); err != nil {
		return nil, errors.Join(err, a.release())
	}
	return a, nil
}

// kept says how the hold a stale grant was let act beside lasted, for a
// fault's note.
func (a *aimed) kept() string {
	if a.proc == nil {
		return "a fresh one, not kept inside"
	}
	return "kept inside until the answer, up to its lease less a margin"
}

// heldAt says whether hold h was still in force at history time at (a
// time before v): still held in v, or released by a release invoked after
// at with no grant to its client since.
func heldAt(v View, h Holding, at int64) bool {
	if at == 0 {
		return false
	}
	for _, x := range v.Holders {
		if x.Client == h.Client && x.Key == h.Key && x.OK == h.OK {
			return true
		}
	}
	r := v.Releases[h.Client]
	return v.Granted[h.Client] == h.Invoked && r.Key == h.Key && r.Invoked > at
}

// untilAcquired waits, a few TTLs at most, until client c's acquire
// invoked at invoked has ended and any hold it began is over, and returns
// that acquire as it ended (Outcome "" when that is not known: the wait
// ran out, or the tracker saw a later acquire first).
func untilAcquired(ctx context.Context, env Env, c int, invoked int64) Acquire {
	ctx, cancel := context.WithTimeout(ctx, 5*env.TTL()+2*env.Hold())
	defer cancel()
	var ended Acquire
	_ = env.Await(ctx, func(v View) bool {
		a := v.Acquires[c]
		if a.Invoked != invoked {
			return true
		}
		ended = a
		for _, h := range v.Holders {
			if h.Client == c {
				return false
			}
		}
		return a.Outcome != ""
	})
	return ended
}

// rivalGranted watches the acquires of clients other than c that are in
// flight in v until each has ended (an op timeout and a TTL at most), and
// returns a client whose acquire was granted — the key found on the lock
// nodes beside c's acquire may have been its — or -1. An acquire whose end
// it did not see (the client had begun another first) counts as granted
// when that client was granted it or a later one (View.Granted). see is
// shown every view it waits through.
func rivalGranted(ctx context.Context, env Env, v View, c int, see func(View)) int {
	rivals := map[int]int64{}
	for x, a := range v.Acquires {
		if x != c && a.Outcome == "" {
			rivals[x] = a.Invoked
		}
	}
	if len(rivals) == 0 {
		return -1
	}
	t := env.Topology().OpTimeout
	if t == 0 {
		t = env.TTL()
	}
	ctx, cancel := context.WithTimeout(ctx, t+env.TTL())
	defer cancel()
	granted := -1
	_ = env.Await(ctx, func(v View) bool {
		see(v)
		for x, inv := range rivals {
			switch a := v.Acquires[x]; {
			case a.Invoked == inv && a.Outcome == history.OK,
				a.Invoked != inv && v.Granted[x] >= inv: // granted, or one after it was
				granted = x
				return true
			case a.Invoked != inv || a.Outcome != "" || v.Exited[x]:
				delete(rivals, x) // refused (or ended unseen, and nothing granted since)
			}
		}
		return len(rivals) == 0
	})
	if len(rivals) > 0 && granted < 0 {
		for x := range rivals {
			granted = x // not seen to end in time
		}
	}
	return granted
}

// ownGrant asks the Redis lock nodes for key while client c's acquire acq
// is in flight and nobody is known to hold or release it (at v), and
// counts the nodes whose key is most likely c's grant, of found with a
// key: the marks the key carries then (its value, or its hash's fields)
// must be none of the other clients' tokens — of the acquires in flight at
// v, once they ended (rivalGranted), and of every hold and release seen in
// the fifth of the TTL after, inside the lease c's grant would have (a
// client whose acquire the coordinator had not seen yet may have set the
// key; on a quorum lock another client may win the other nodes meanwhile,
// as it may). A lock whose tokens say nothing of their holder ("" or "1")
// counts no node once another client held or released in that time.
func ownGrant(ctx context.Context, env Env, v View, c int, acq Acquire) (own, found int) {
	nodes, prefix := env.LockNodes(), env.Topology().KeyPrefix
	marks := make([][]string, len(nodes))
	for i, n := range nodes {
		client := cluster.RedisClient(n.Addr())
		_, m, exists, err := cluster.KeyMarks(ctx, client, prefix+acq.Key)
		client.Close()
		if err == nil && exists {
			marks[i], found = m, found+1
		}
	}
	if found == 0 {
		return 0, 0
	}
	others, seen := map[string]bool{}, map[int]bool{} // their tokens, and the clients seen with one
	see := func(w View) {
		for _, h := range w.Holders {
			if h.Client != c {
				others[h.Token], seen[h.Client] = true, true
			}
		}
		for x, r := range w.Releases {
			if x != c && r.Invoked > acq.Invoked {
				others[r.Token], seen[x] = true, true
			}
		}
	}
	see(v)
	rival := rivalGranted(ctx, env, v, c, see)
	until := time.Now().Add(env.TTL() / 5)
	for time.Now().Before(until) && ctx.Err() == nil {
		see(snapshot(env))
		time.Sleep(time.Millisecond)
	}
	see(snapshot(env))
	if others[""] || others["1"] {
		return 0, found // a token that names nobody: any key may be its
	}
	if rival >= 0 && !seen[rival] {
		return 0, found // granted beside it, and its token never seen
	}
	for i, m := range marks {
		mine := len(m) > 0
		for _, mark := range m {
			for t := range others {
				if mark == locks.Mark(t, i, len(nodes)) {
					mine = false
				}
			}
		}
		if mine {
			own++
		}
	}
	return own, found
}

// releasing says whether a client other than c has a release in flight in
// v: its key may still be on the lock nodes although nobody holds it.
func releasing(v View, c int) bool {
	for x, r := range v.Releases {
		if x != c && r.Outcome == "" {
			return true
		}
	}
	return false
}

// errorNote is an operation's error for a fault's note: " (error)", or
// nothing.
func errorNote(e string) string {
	if e == "" {
		return ""
	}
	return " (" + e + ")"
}
