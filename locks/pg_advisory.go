package locks

import (
	"context"
	"fmt"
	"time"
)

// PGAdvisory is PostgreSQL's session-level advisory lock: held by the
// client's session until it unlocks or the session ends. The server keeps
// a session, and so the lock, as long as it sees the connection open:
// a client that is paused, or cut off by a network that drops its
// packets, keeps the lock for as long as the server's TCP stack takes to
// give up on it (hours by default; no idle timeout by default). Locks are
// not replicated: a promoted standby grants them again.
type PGAdvisory struct{ c *pgClient }

func init() {
	registerPG("pg-advisory", "PostgreSQL session advisory lock: pg_try_advisory_lock(hash(key)) on the client's own connection, release with pg_advisory_unlock", "no lease: a paused client keeps it (others wait); a restart or a promoted standby frees it under its holder", func(c *pgClient) Locker { return &PGAdvisory{c: c} })
}

func (l *PGAdvisory) Acquire(ctx context.Context, key string) (Lease, error) {
	ctx, conn, done, err := l.c.begin(ctx, 0)
	defer done()
	if err != nil {
		return Lease{}, err
	}
	k := pgKey(key)
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", k).Scan(&ok); err != nil {
		return Lease{}, l.c.fail("pg_try_advisory_lock", err)
	}
	if !ok {
		return Lease{}, ErrNotAcquired
	}
	return l.lease(key, k), nil
}

func (l *PGAdvisory) lease(key string, k int64) Lease {
	return l.c.grant(key, fmt.Sprintf("advisory:%d:%d", l.c.conn.PgConn().PID(), k), k, false)
}

// AcquireWait waits in the server's lock queue, pg_advisory_lock under a
// lock_timeout of the wait.
func (l *PGAdvisory) AcquireWait(ctx context.Context, key string, wait time.Duration) (Lease, error) {
	ctx, conn, done, err := l.c.begin(ctx, wait)
	defer done()
	if err != nil {
		return Lease{}, err
	}
	timeout := fmt.Sprintf("%dms", max(1, wait.Milliseconds())) // 0 would wait for ever
	if _, err := conn.Exec(ctx, "SELECT set_config('lock_timeout', $1, false)", timeout); err != nil {
		return Lease{}, l.c.fail("set lock_timeout", err)
	}
	k := pgKey(key)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", k); err != nil {
		if pgLockNotAvailable(err) {
			return Lease{}, fmt.Errorf("%w: %v", ErrNotAcquired, err)
		}
		return Lease{}, l.c.fail("pg_advisory_lock", err)
	}
	return l.lease(key, k), nil
}

// Release unlocks on the lease's own session: false there is certain (the
// session is alive and does not hold it). A lease this session already
// released is not unlocked again: advisory locks count, and a second
// unlock would release a newer lease of the same key.
func (l *PGAdvisory) Release(ctx context.Context, lease Lease) error {
	l.c.mu.Lock()
	defer l.c.mu.Unlock()
	conn, h, err := l.c.leaseConn(lease)
	if err != nil {
		return err
	}
	k := pgKey(lease.Key)
	if l.c.held[k] != h.grant {
		return ErrNotHeld
	}
	delete(l.c.held, k)
	ctx, cancel := l.c.opCtx(ctx, 0)
	defer cancel()
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", k).Scan(&ok); err != nil {
		return l.c.fail("pg_advisory_unlock", err)
	}
	if !ok {
		return ErrNotHeld
	}
	return nil
}

func (l *PGAdvisory) Close() error { return l.c.Close() }
