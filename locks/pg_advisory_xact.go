package locks

import (
	"context"
	"fmt"
)

// PGAdvisoryXact is PostgreSQL's transaction-level advisory lock: the lease
// is an open transaction, released by COMMIT or by anything that ends the
// transaction (an error in it, the session's end). Like the session lock,
// it outlives a client that is paused or cut off for as long as the
// server keeps the session; idle_in_transaction_session_timeout, off by
// default, would bound it.
type PGAdvisoryXact struct{ c *pgClient }

func init() {
	registerPG("pg-advisory-xact", "PostgreSQL transaction advisory lock: BEGIN; pg_try_advisory_xact_lock(hash(key)), held while the transaction is open, release with COMMIT", "as `pg-advisory`", func(c *pgClient) Locker { return &PGAdvisoryXact{c: c} })
}

func (l *PGAdvisoryXact) Acquire(ctx context.Context, key string) (Lease, error) {
	ctx, conn, done, err := l.c.begin(ctx, 0)
	defer done()
	if err != nil {
		return Lease{}, err
	}
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		return Lease{}, l.c.fail("BEGIN", err)
	}
	k := pgKey(key)
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock($1)", k).Scan(&ok); err != nil {
		return Lease{}, l.c.fail("pg_try_advisory_xact_lock", err)
	}
	if !ok {
		l.c.rollback(ctx, conn)
		return Lease{}, ErrNotAcquired
	}
	return l.c.grant(key, fmt.Sprintf("xact:%d:%d", conn.PgConn().PID(), k), k, true), nil
}

func (l *PGAdvisoryXact) Release(ctx context.Context, lease Lease) error {
	return l.c.commit(ctx, lease)
}

func (l *PGAdvisoryXact) Close() error { return l.c.Close() }
