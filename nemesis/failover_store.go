package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/proxy"
)

// Stores is the capability to act on the ensemble of the lock's store.
type Stores interface {
	// Ensemble is the run's ensemble.
	Ensemble() cluster.Ensemble
}

// cutWhileFree cuts the standby's replication (CutReplication, which
// first lets it catch up) at a moment when nobody holds a lock: the
// clients are asked to rest once they are done with what they are doing
// (hush), and let go once it is cut. A row or key of a hold whose release
// came after the cut would shield the next holder on the promoted standby
// until its lease ran out, and hide the loss (shedlock-jdbc's row, its
// lock_until ahead, beside a holder kept inside less than a lease). When
// the lock does not fall free within a TTL it cuts anyway.
func cutWhileFree(ctx context.Context, env Env, p cluster.Promoting, key string) (restore func(context.Context) error, err error) {
	unhush := hush(ctx, env, key)
	defer unhush()
	wctx, cancel := context.WithTimeout(ctx, env.TTL())
	_ = env.Await(wctx, func(v View) bool { return len(v.Holders) == 0 })
	cancel()
	restore, err = p.CutReplication(ctx)
	if err != nil && restore != nil {
		err = errors.Join(err, restore(ctx))
	}
	return restore, err
}

// storeFailover is failover for a lock of another store: the store fails
// over its own way (cluster.Elected.FailOver) while the step's client
// holds its key and is kept inside its critical section — etcd's or
// ZooKeeper's leader is killed and the others elect a new one;
// PostgreSQL's standby, MariaDB's replica is promoted (a store with a
// primary: cluster.Store.Primary). On a store with a primary, cut (all,
// promoted) first stops the standby's replication (Promoting.CutReplication),
// as on Redis: the holder's acquire, which comes after, is on the old
// primary alone, and the standby is promoted without it — asynchronous
// replication's lossy promotion, by construction. With cut=none the
// standby replays all the primary wrote before it is promoted, and the
// clients are cut off first (every client link disabled: their
// connections close, new ones are refused), so that nothing is written to
// the old primary that the promoted one could lack: the promotion then
// takes away only what the store never replicates (a session's locks),
// not what a lag would. A consensus store replicates before it answers:
// it has nothing to cut. Every client link of a lock node whose serving
// member changed is pointed at the new one, as a moved virtual IP would
// be, and the links are enabled again. Then it asks the
// members that serve now whether the lease survived: a consensus store
// replicated it before granting it; a PostgreSQL lock lives in the old
// primary's memory only, and the next client takes it on the new one.
func (f *Failover) storeFailover(ctx context.Context, env Env, step Step) (*Fault, error) {
	st, err := capability[Stores](env, "the store's ensemble")
	if err != nil {
		return nil, err
	}
	net, err := linksOf(env)
	if err != nil {
		return nil, err
	}
	store := env.Topology().Store
	e, ok := st.Ensemble().(cluster.Elected)
	if !ok {
		return nil, fmt.Errorf("failover: the run has no %s ensemble that elects its leader", store)
	}
	if p, ok := e.(cluster.Promoting); ok && !p.HasStandby() {
		// Nothing to promote: a missed step, said so, not a failure of the
		// run, and no harm done — no holder is waited for, and the clients
		// are not cut off for nothing.
		return nil, fmt.Errorf("%w: %s: %v", ErrNoTarget, store, cluster.ErrNoStandby)
	}
	primary := false
	if s, err := cluster.LookupStore(store); err == nil {
		primary = s.Primary
	}
	restore := func(context.Context) error { return nil }
	if p, ok := e.(cluster.Promoting); ok && primary && f.Cut != "none" {
		if restore, err = cutWhileFree(ctx, env, p, step.Key); err != nil {
			return nil, fmt.Errorf("failover: %w", err)
		}
	}
	a, held, err := aimHolder(ctx, env, step, stretchBound(env), f.Votes)
	if err != nil {
		return nil, errors.Join(err, restore(ctx))
	}
	var cut []*proxy.Link
	if primary {
		for _, l := range net.Proxies().Links(nil, nil) {
			if l.Member == "" {
				l.Disable()
				cut = append(cut, l)
			}
		}
	}
	reconnect := func() error {
		var errs []error
		for _, l := range cut {
			errs = append(errs, l.Enable())
		}
		cut = nil
		return errors.Join(errs...)
	}
	before := env.LockNodes()
	start := history.Now()
	from, to, heal, ferr := e.FailOver(ctx)
	if errors.Is(ferr, cluster.ErrNoStandby) {
		// Nothing was failed over: a missed step, said so, not a failure
		// of the run.
		if err := errors.Join(reconnect(), a.release(), restore(ctx)); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", ErrNoTarget, ferr)
	}
	members := e.Members()
	params := map[string]string{"store": store, "holder": strconv.Itoa(a.Client), "key": a.Key}
	if primary {
		params["cut"] = f.Cut
	}
	fault := &Fault{Params: params, Aim: a.aim(), Start: start, Heal: heal}
	if ferr != nil {
		if heal == nil && to < 0 {
			fault = nil // FailOver did no harm
		} else {
			fault.Target = fmt.Sprintf("%s: failover (did not complete)", store)
			if from >= 0 && from < len(members) {
				fault.Target = fmt.Sprintf("%s: failover from %s (did not complete)", store, members[from].Name())
			}
		}
		return fault, errors.Join(fmt.Errorf("failover of the %s ensemble: %w", store, ferr), reconnect(), a.release(), restore(ctx))
	}
	if i := slices.Index(before, members[from]); i >= 0 {
		fault.Nodes = []int{i}
	}
	params["from"], params["to"] = members[from].Name(), members[to].Name()
	if p, ok := e.(cluster.Promoting); ok {
		if note := p.PromotionNote(); note != "" {
			params["promotion"] = note
		}
	}
	// In the store's own words: a consensus store's leader is killed and
	// another elected; PostgreSQL's standby is promoted over its primary.
	fault.Target = fmt.Sprintf("%s: leader %s killed, %s elected", store, members[from].Name(), members[to].Name())
	if primary {
		fault.Target = fmt.Sprintf("%s: standby %s promoted over primary %s", store, members[to].Name(), members[from].Name())
	}
	if heal != nil {
		// The old leader stays down this long, then restarts; the old
		// primary stays cut off, then is rebuilt as a standby.
		fault.Duration = f.Duration
	}
	after := env.LockNodes()
	for i := range after {
		if i < len(before) && before[i] != after[i] {
			if err := redirect(net.Proxies(), i, after[i].Addr()); err != nil {
				return fault, errors.Join(fmt.Errorf("failover of the %s ensemble: %w", store, err), reconnect(), a.release())
			}
		}
	}
	if err := reconnect(); err != nil {
		return fault, errors.Join(fmt.Errorf("failover of the %s ensemble: %w", store, err), a.release())
	}
	v := votes{nodes: len(after), before: held, after: holdersOf(ctx, env, after, a.Holding), quorum: quorum(env)}
	what := fmt.Sprintf("%s led %s after %s was failed over", members[to].Name(), store, members[from].Name())
	if primary {
		what = fmt.Sprintf("%s was the primary after %s was failed over", members[to].Name(), members[from].Name())
		if f.Cut != "none" {
			what += " (its replication cut before the holder's acquire)"
		}
	}
	// The failover began while the lease lived; how long the election
	// took does not change that.
	fault.Effect, err = a.lostEffect(ctx, start, v, what)
	return fault, err
}
