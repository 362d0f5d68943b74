package nemesis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// CancelClient cancels a client's release or acquire in flight, the way its
// language does it: a cancelled context for a lock written in Go, a cancel request
// for an adapter (docs/protocol.md), which cancels the call its way — an
// asyncio task, a Future, an AbortController, a thread's interrupt. The
// client then does what a careful caller does with a release whose outcome
// it does not know: it releases again. A lock that kept its state straight
// through the cancel releases the key then; one that forgot it still held
// the key (redis-py's asyncio Lock before 7.2.0 cleared its token before it
// sent the release: redis-py#3847) answers that it holds nothing and leaves
// the key on the node, for the rest of its lease — for good, with no
// expiry.
//
// With after 0 (the default) the cancel comes before the lock's call can
// send anything: the Go lock's context is cancelled before the call, an
// adapter reads the cancel in the same write as the release. It landed
// when the lock answered the release cancelled and the release had not
// reached the lock's nodes: cancelled before it ran (after 0), or the
// release after it released the key, or left it there (asked directly)
// while the lock said it held nothing.
//
// An acquire (op=acquire) cancelled in flight has an outcome the caller
// does not know either: the lock may have granted it, unseen. A careful
// caller gives back what it may hold when the lock says what that is (an
// adapter's cancelled answer with a token: a Redisson lock's owner is its
// thread), and otherwise leaves it to the lease's expiry. The cancel
// lands when the lock answered the acquire cancelled: the call was in
// flight (after > 0: still waiting for the key, or its reply) or had not
// begun (after 0). What it leaves behind — a key held by no one, renewed
// (redisson#7272) or not — is the checker's to find: a key stuck past its
// lease is a finding of its own.
type CancelClient struct {
	Op    string        `opt:"op" default:"release" oneof:"release,acquire" help:"which call to cancel: release, or acquire (after > 0 cancels a waiting acquire)"`
	After time.Duration `opt:"after" default:"0s" help:"how long after the call's invoke to cancel it (0: before the lock's call sends anything)"`
}

func init() {
	Register(Spec{
		Name:        "cancel-client",
		Description: "cancel a client's release or acquire in flight, its language's way (context, asyncio task, thread interrupt, AbortController: a cancel request to an adapter); the client then releases again",
		Action:      history.ActionCancel,
		New:         func() Nemesis { return new(CancelClient) },
	})
}

// Applies refuses a lock whose adapter does not cancel a request.
func (c *CancelClient) Applies(t Topology) error {
	if !t.Cancels {
		return fmt.Errorf("cancel-client cancels a call in flight, and lock %s's adapter does not say it cancels one (cancel: true in its lock.yaml, docs/protocol.md)", t.Lock)
	}
	return nil
}

func (c *CancelClient) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	can, err := capability[Canceller](env, "cancelling a client's call in flight")
	if err != nil {
		return nil, err
	}
	cl := step.Client
	asked, err := can.CancelNext(cl, c.Op, c.After)
	if err != nil {
		return nil, err
	}
	f := &Fault{
		Target:  "client " + strconv.Itoa(cl) + " (its next " + c.Op + ")",
		Params:  map[string]string{"op": c.Op, "after": c.After.String()},
		Clients: []int{cl},
		Start:   asked,
	}
	if c.Op == history.Acquire {
		return c.acquire(ctx, env, f, cl, asked)
	}
	// The release the client was asked to cancel, once it came back.
	var r Release
	if !c.cameBack(ctx, env, f, cl, func(v View) bool {
		x, ok := v.Cancelled[cl]
		if ok && x.Invoked >= asked && x.Outcome != "" {
			r = x
			return true
		}
		return false
	}) {
		return f, nil
	}
	cancelled := r.Outcome == history.Info && strings.HasPrefix(r.Error, history.ErrCancelled)
	// What the client's release after it did: what the cancel tested.
	var again Release
	actx, cancel := context.WithTimeout(ctx, 5*env.TTL()+2*env.Hold()+5*time.Second)
	if cancelled {
		_ = env.Await(actx, func(v View) bool {
			x := v.Releases[cl]
			if x.Invoked > r.Invoked && x.Outcome != "" {
				again = x
				return true
			}
			return v.Exited[cl]
		})
	}
	cancel()
	// A release after it that released the key shows the cancelled one
	// had not reached the nodes. One that did not: whether the lease is
	// still there, asked directly, tells a release that had reached them
	// from a lock that forgot it held the key.
	still := -1
	if cancelled && again.Outcome != history.OK && r.Token != "" {
		still = len(holdersOf(ctx, env, env.LockNodes(), Holding{Client: cl, Key: r.Key, Token: r.Token}))
	}
	note := fmt.Sprintf("client %d's release of %s", cl, r.Key)
	landed := false
	switch {
	case !cancelled:
		note += fmt.Sprintf(" was asked to cancel, and came back %s%s: the lock finished it first, or does not cancel it there", r.Outcome, errorNote(r.Error))
	case again.Outcome == history.OK:
		landed = true
		note += " came back cancelled, before it reached the lock's nodes; its release after it released the key"
	case again.Outcome == "":
		note += " came back cancelled; its release after it did not come back in time"
	case still > 0:
		landed = true
		note += fmt.Sprintf(" came back cancelled; its release after it ended %s%s with the lease still on %d of %d lock nodes: the lock forgot it held the key",
			again.Outcome, errorNote(again.Error), still, len(env.LockNodes()))
	case still == 0 && c.After <= 0:
		// Cancelled before its call ran (by construction): the lock
		// itself gave the lease up (it ended its session on the cancel).
		landed = true
		note += fmt.Sprintf(" came back cancelled before it ran; its release after it ended %s%s, the lease gone from the lock's nodes: the lock gave it up on the cancel", again.Outcome, errorNote(again.Error))
	case still == 0:
		note += fmt.Sprintf(" came back cancelled; its release after it ended %s%s, and the lease was gone from the lock's nodes: the cancelled release may have reached them", again.Outcome, errorNote(again.Error))
	default:
		note += fmt.Sprintf(" came back cancelled; its release after it ended %s%s (the nodes were not asked: no token)", again.Outcome, errorNote(again.Error))
	}
	f.Effect = &history.Effect{Landed: landed, Note: note}
	return f, nil
}

// acquire follows client cl's acquire that it was asked (at asked) to
// cancel, and the release a careful caller makes after it.
func (c *CancelClient) acquire(ctx context.Context, env Env, f *Fault, cl int, asked int64) (*Fault, error) {
	var a Acquire
	if !c.cameBack(ctx, env, f, cl, func(v View) bool {
		x, ok := v.CancelledAcquires[cl]
		if ok && x.Invoked >= asked && x.Outcome != "" {
			a = x
			return true
		}
		return false
	}) {
		return f, nil
	}
	note := fmt.Sprintf("client %d's acquire of %s", cl, a.Key)
	if a.Outcome != history.Info || !strings.HasPrefix(a.Error, history.ErrCancelled) {
		f.Effect = &history.Effect{Note: note + fmt.Sprintf(" was asked to cancel, and came back %s%s: the lock finished it first, or does not cancel it there", a.Outcome, errorNote(a.Error))}
		return f, nil
	}
	if c.After <= 0 {
		note += " came back cancelled before its call ran"
	} else {
		note += fmt.Sprintf(" came back cancelled %v after its invoke, in flight", time.Duration(a.Done-a.Invoked).Round(time.Millisecond))
	}
	// The release a careful caller makes of what the lock said it may
	// hold: before the client's next acquire, or none.
	var r Release
	rctx, cancel := context.WithTimeout(ctx, 2*env.TTL()+5*time.Second)
	_ = env.Await(rctx, func(v View) bool {
		if x := v.Releases[cl]; x.Invoked > a.Done && x.Outcome != "" {
			r = x
			return true
		}
		return v.Acquires[cl].Invoked > a.Invoked || v.Exited[cl]
	})
	cancel()
	if r.Invoked != 0 {
		note += fmt.Sprintf("; the release of what it may have taken ended %s%s", r.Outcome, errorNote(r.Error))
	} else {
		note += "; the lock named nothing it may have taken, to release"
	}
	f.Effect = &history.Effect{Landed: true, Note: note}
	return f, nil
}

// cameBack waits until done says client cl's call that it was asked to
// cancel came back; when it did not (the run ended, the client exited, or
// it made no such call in time), f's effect says so and it is false.
func (c *CancelClient) cameBack(ctx context.Context, env Env, f *Fault, cl int, done func(View) bool) bool {
	came := false
	wctx, cancel := context.WithTimeout(ctx, triggerWait(env))
	werr := env.Await(wctx, func(v View) bool {
		came = done(v)
		return came || v.Exited[cl]
	})
	cancel()
	switch {
	case came:
		return true
	case ctx.Err() != nil:
		f.Effect = &history.Effect{Note: "the run ended before the client's next " + c.Op}
	case werr == nil:
		f.Effect = &history.Effect{Note: fmt.Sprintf("client %d exited before its next %s", cl, c.Op)}
	default:
		f.Effect = &history.Effect{Note: fmt.Sprintf("client %d made no %s within %v (%v)", cl, c.Op, triggerWait(env), werr)}
	}
	return false
}
