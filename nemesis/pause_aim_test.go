package nemesis

import (
	"context"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// A pause of a holder is aimed at the hold it stops. The stop waits in
// the first stretched hold that reaches the end of its work; when the
// first one the pause waited for ends before (its lock reported it lost,
// or its work outlasted the stretch's bound on a busy machine), the
// client's next hold waits, and the pause stops that one. Aimed at the
// first, a pause that landed was judged to have begun after its hold had
// ended, and its overlap blamed on "the lock's own check" (issue 42.5,
// seen with an adapter lock).
func TestAPauseIsAimedAtTheHoldItStops(t *testing.T) {
	t.Parallel()
	env := newFakeEnv()
	env.waits = map[int]Wait{}
	n, err := (&PauseClient{}).withDuration(t, "1ms")
	if err != nil {
		t.Fatal(err)
	}
	const c, key = 1, "lock:0"
	type injected struct {
		f   *Fault
		err error
	}
	done := make(chan injected, 1)
	go func() {
		f, err := n.Inject(context.Background(), env, Step{Client: c, Key: key})
		done <- injected{f, err}
	}()
	waitFor(t, func() bool { env.mu.Lock(); defer env.mu.Unlock(); return env.stretched[c] == key })
	env.hold(c, key) // the first stretched hold: the pause waits for its wait
	first := env.Holders()[0]
	time.Sleep(5 * time.Millisecond)

	// It ends without waiting; the next hold waits.
	env.mu.Lock()
	env.holders = nil
	env.mu.Unlock()
	env.hold(c, key)
	next := env.Holders()[0]
	env.mu.Lock()
	env.waits[c] = Wait{At: history.Now(), Holding: next}
	close(env.changed)
	env.changed = make(chan struct{})
	env.mu.Unlock()

	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	if got.f.Heal != nil {
		_ = got.f.Heal(context.Background())
	}
	if a := got.f.Aim; a == nil || a.Since != next.OK {
		t.Errorf("the pause is aimed at %+v; want the hold that waited for it (ok at %d), not the first (ok at %d)", a, next.OK, first.OK)
	}
}
