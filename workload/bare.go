package workload

import (
	"context"
	"errors"

	"github.com/lockchaos/lockchaos/locks"
)

// BareCycles runs the cycle of a worker — acquire a random key, read the
// resource, write it back plus one, release — with cfg's lock and nodes,
// in this process, recording nothing and talking to no coordinator, until
// ctx ends (between cycles: a cycle under way finishes); it returns how
// many acquires succeeded. It is a yardstick for
// make bench: what Go and go-redis alone make of the cycle on this machine,
// so that the harness's own cost (events, coordinator, processes) shows
// beside it. It never runs in a real run.
func BareCycles(ctx context.Context, cfg Config) (int64, error) {
	w, err := newWorker(cfg, nil)
	if err != nil {
		return 0, err
	}
	defer w.close()
	var n int64
	op := context.Background()
	for ctx.Err() == nil {
		key := KeyName(w.rng.IntN(w.cfg.Keys))
		opCtx, cancel := context.WithTimeout(op, w.cfg.OpTimeout)
		lease, err := w.locker.Acquire(opCtx, key)
		cancel()
		if errors.Is(err, locks.ErrNotAcquired) {
			continue
		}
		if err != nil {
			return n, err
		}
		n++
		v, err := w.res.Read(op, key, lease.Fence)
		if err == nil {
			err = w.res.Write(op, key, v+1, lease.Fence)
		}
		if err != nil {
			return n, err
		}
		opCtx, cancel = context.WithTimeout(op, w.cfg.OpTimeout)
		err = w.locker.Release(opCtx, lease)
		cancel()
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
