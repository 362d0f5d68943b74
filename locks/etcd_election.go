package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"
)

// EtcdElection is etcd's leader election, concurrency.Election, used as a
// lock the way services use it to pick one active instance: Campaign
// blocks until this session's key is the oldest under the election's
// prefix, and the caller then acts as leader. Its keys are etcd-mutex's (a
// key under KEY/ per session lease), its session is etcd-mutex's, and so
// are its release and lease.
//
// After waiting for the keys before its own to go, Campaign returns
// without asking whether its own key still exists — the check etcd added
// to Mutex.Lock for etcd#11456, never to Campaign (client v3.5.17 here;
// unchanged in v3.7.3). A candidate whose session expired while it waited
// is told it leads, with no key: a candidate that came after the expiry
// leads too. etcd#19597 (open) asks that a wait end when its own key goes,
// and PR #22387 (open) would make Campaign return ErrElectionNotLeader then.
type EtcdElection struct{ *EtcdMutex }

func init() {
	Register(Spec{
		Name:        "etcd-election",
		Description: "etcd's concurrency.Election (Campaign to acquire, bounded by the wait or the op timeout; resign to release) on etcd-mutex's session lease, kept alive by the library; Campaign does not check after waiting that its session survived",
		Library:     "Go, etcd client/v3 3.5.17 `concurrency`",
		Weakness:    "`Campaign` never got `Lock`'s check: a candidate paused past its session while it waited is told it leads, beside the next leader (`pause-client phase=wait`; a finding: docs/findings/etcd-election-campaign-after-session-expiry.md)",
		Store:       "etcd",
		KeepsAlive:  true,
		Nodes:       3,
		New: func(cfg Config) (Locker, error) {
			m, err := newEtcdMutex(cfg, false)
			if err != nil {
				return nil, err
			}
			return EtcdElection{m}, nil
		},
	})
}

// Acquire is a campaign that does not queue behind a leader: refused at
// once when the election has one, else a campaign bounded by the op
// timeout (an election has no try).
func (l EtcdElection) Acquire(ctx context.Context, key string) (Lease, error) {
	return l.campaign(ctx, key, 0, true)
}

// AcquireWait campaigns, waiting up to wait for the leaders before it.
func (l EtcdElection) AcquireWait(ctx context.Context, key string, wait time.Duration) (Lease, error) {
	return l.campaign(ctx, key, wait, false)
}

func (l EtcdElection) campaign(ctx context.Context, key string, wait time.Duration, try bool) (Lease, error) {
	s, err := l.session(ctx)
	if err != nil {
		return Lease{}, err
	}
	e := concurrency.NewElection(s, key)
	wctx, cancel := context.WithTimeout(ctx, wait+l.op)
	defer cancel()
	if try {
		if _, err = e.Leader(wctx); err == nil {
			err = ErrNotAcquired // the election has a leader: not campaigned
		} else if errors.Is(err, concurrency.ErrElectionNoLeader) {
			err = nil
		}
	}
	if err == nil {
		// A campaign whose context ends resigns, deleting its key.
		err = e.Campaign(wctx, l.cfg.Owner)
	}
	if err != nil {
		s.Orphan()
		l.revoke(ctx, s.Lease()) // deletes its key, whatever became of it
		switch {
		case errors.Is(err, ErrNotAcquired):
			return Lease{}, fmt.Errorf("%w: the election has a leader", ErrNotAcquired)
		case wctx.Err() != nil && ctx.Err() == nil:
			return Lease{}, fmt.Errorf("%w: not leader within %v", ErrNotAcquired, wait+l.op)
		}
		return Lease{}, fmt.Errorf("etcd-election: campaign: %w", err)
	}
	return l.lease(s, key, e.Key(), e.Rev()), nil
}
