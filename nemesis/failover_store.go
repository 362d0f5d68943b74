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

// storeFailover is failover for a lock of another store: the store fails
// over its own way (cluster.Elected.FailOver) while the step's client
// holds its key and is kept inside its critical section — etcd's or
// ZooKeeper's leader is killed and the others elect a new one;
// PostgreSQL's standby, MariaDB's replica is promoted (a store with a
// primary: cluster.Store.Primary). A store with a primary has its
// clients cut off first (every client link disabled: their connections
// close, new ones are refused), so that nothing is written to the old
// primary that the promoted one could lack: a promotion then takes away
// only what the store never replicates, by construction, not by how far
// the standby lagged. Every client link of a lock node whose serving
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
	a, held, err := aimHolder(ctx, env, step, stretchBound(env), f.Votes)
	if err != nil {
		return nil, err
	}
	primary := false
	if s, err := cluster.LookupStore(store); err == nil {
		primary = s.Primary
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
		if err := errors.Join(reconnect(), a.release()); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", ErrNoTarget, ferr)
	}
	members := e.Members()
	params := map[string]string{"store": store, "holder": strconv.Itoa(a.Client), "key": a.Key}
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
		return fault, errors.Join(fmt.Errorf("failover of the %s ensemble: %w", store, ferr), reconnect(), a.release())
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
	}
	// The failover began while the lease lived; how long the election
	// took does not change that.
	fault.Effect, err = a.lostEffect(ctx, start, v, what)
	return fault, err
}
