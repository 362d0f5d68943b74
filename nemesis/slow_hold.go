package nemesis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// SlowHold makes the holder's critical section outlive its TTL with no
// fault at all: the business operation is simply slow (the seeds' first
// warning). The worker is not paused — it keeps running, and a lock with a
// watchdog keeps renewing — it just does not leave its critical section
// until `by` has passed since its acquire. A lock without renewal is held by
// two clients once the lease runs out; a renewing lock should survive this,
// which is what tells it apart from pause-client. Mechanism: the worker's
// stretch (workload/control.go), bounded by `by` rather than by the lease.
type SlowHold struct {
	By time.Duration `opt:"by" default:"2ttl" margin:"0.1ttl..3ttl" help:"how long after its acquire the holder stays in its critical section"`
}

func init() {
	Register(Spec{
		Name:        "slow-hold",
		Description: "the holder's critical section runs past the TTL, process running (no pause, no network fault)",
		Action:      history.ActionSlow,
		New:         func() Nemesis { return new(SlowHold) },
	})
}

// Applies: the lock must have a lease for the hold to outlast.
func (s *SlowHold) Applies(t Topology) error { return leased("slow-hold", t) }

func (s *SlowHold) Inject(ctx context.Context, env Env, step Step) (*Fault, error) {
	by := s.By
	a, err := aimAt(ctx, env, step, by)
	if err != nil {
		return nil, err
	}
	f := &Fault{
		Target:   "client " + strconv.Itoa(a.Client),
		Params:   map[string]string{"by": by.String(), "key": a.Key},
		Clients:  []int{a.Client},
		Aim:      a.aim(),
		Start:    a.armed, // its holds of the key were kept inside from then on
		Duration: time.Duration(a.Invoked + by.Nanoseconds() - history.Now()),
	}
	f.Heal = func(context.Context) error {
		err := a.release()
		lease := env.Lease()
		// A hold no longer than the lease ends as the lease does:
		// nothing outlived it.
		f.Effect = &history.Effect{Landed: by > lease,
			Note: fmt.Sprintf("client %d stayed in its critical section on %s for %s after its acquire, its lease is %s", a.Client, a.Key, by, lease)}
		return err
	}
	return f, nil
}
