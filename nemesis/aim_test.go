package nemesis

import (
	"context"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

// A fault that takes a lease away from a holder that has already let go
// lands only when the holder's lock told it the lease was lost (a library
// that takes a lost connection for a lost lock, as Curator and kazoo
// advise): then the lock gave the lease up in time, and a safe verdict is
// evidence. A holder that let go for no such reason (its stretch ran out)
// leaves the fault without effect, whatever the nodes forgot.
func TestAFaultOnAHolderThatLetGoLandsOnlyOnALostEvent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lost   bool
		landed bool
		says   string
	}{
		{"its lock reported the lease lost", true, true, "reported its lease of lock:0 lost"},
		{"its stretch ran out", false, false, "had let go of lock:0 by then"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newFakeEnv()
			invoked := history.Now()
			a := &aimed{env: env, proc: env, Holding: Holding{Client: 1, Key: "lock:0", Invoked: invoked, OK: invoked}}
			if tc.lost {
				env.lost = map[int]map[string]int64{1: {"lock:0": invoked + 1}}
			}
			// No hold of client 1 in the env: it has let go.
			e, err := a.lostEffect(context.Background(), invoked, votes{nodes: 3, before: []int{0, 1, 2}, quorum: 1}, "lock node 2 was back")
			if err != nil {
				t.Fatal(err)
			}
			if e.Landed != tc.landed || !strings.Contains(e.Note, tc.says) {
				t.Errorf("landed %v (want %v), note %q (want it to say %q)", e.Landed, tc.landed, e.Note, tc.says)
			}
			if tc.landed && e.Lease != history.LeaseLost {
				t.Errorf("lease %q, want lost", e.Lease)
			}
		})
	}
}
