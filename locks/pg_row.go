package locks

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// PGRow locks the key's row in a table: SELECT … FOR UPDATE NOWAIT in an
// open transaction, released by COMMIT. The row lock itself is written to
// the table (the row's xmax) and replicated, but only as the id of a
// transaction the standby never sees end: once promoted, it takes that
// transaction for aborted (no session of its own runs it) and grants the
// row again.
type PGRow struct{ c *pgClient }

func init() {
	registerPG("pg-row", "PostgreSQL row lock: SELECT … FOR UPDATE NOWAIT on the key's row in an open transaction, release with COMMIT", "as `pg-advisory`", func(c *pgClient) Locker { return &PGRow{c: c} })
}

func (l *PGRow) Acquire(ctx context.Context, key string) (Lease, error) {
	ctx, conn, done, err := l.c.begin(ctx, 0)
	defer done()
	if err != nil {
		return Lease{}, err
	}
	// The row must exist to be locked; DO NOTHING neither waits for nor
	// disturbs a holder's lock on it.
	if _, err := conn.Exec(ctx, "INSERT INTO "+pgLockTable+" (name) VALUES ($1) ON CONFLICT DO NOTHING", key); err != nil {
		return Lease{}, l.c.fail("insert the lock row", err)
	}
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		return Lease{}, l.c.fail("BEGIN", err)
	}
	var one int
	err = conn.QueryRow(ctx, "SELECT 1 FROM "+pgLockTable+" WHERE name = $1 FOR UPDATE NOWAIT", key).Scan(&one)
	switch {
	case err == nil:
	case pgLockNotAvailable(err):
		l.c.rollback(ctx, conn)
		return Lease{}, fmt.Errorf("%w: %v", ErrNotAcquired, err)
	case errors.Is(err, pgx.ErrNoRows):
		// Nothing deletes lock rows; should one vanish, the next acquire
		// inserts it again.
		l.c.rollback(ctx, conn)
		return Lease{}, fmt.Errorf("the lock row of %q vanished", key)
	default:
		return Lease{}, l.c.fail("SELECT … FOR UPDATE NOWAIT", err)
	}
	return l.c.grant(key, fmt.Sprintf("row:%d", conn.PgConn().PID()), 0, true), nil
}

func (l *PGRow) Release(ctx context.Context, lease Lease) error {
	return l.c.commit(ctx, lease)
}

func (l *PGRow) Close() error { return l.c.Close() }
