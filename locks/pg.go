package locks

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The PostgreSQL locks keep their state in the session (advisory locks) or
// in an open transaction (pg-advisory-xact, pg-row) on one connection to
// the primary, Config.Addrs[0]. The lease is that session: it ends when the
// connection does, as the server sees it. Nothing tells the client when the
// server ends it (no Lost channel): a client learns only at its next
// request.
//
// These match cluster.PostgresUser and cluster.PostgresLockTable (the
// ensemble creates both); this package does not import cluster.
const (
	pgUser      = "lockchaos"
	pgLockTable = "lockchaos_locks"
)

// pgClient is one client's dedicated connection. After any error the
// session's state is unknown to us (the server may or may not have done
// what we asked, and may or may not have ended the session), so the
// connection is dropped and the next acquire dials a new one; a lease of
// the old session cannot be released through the new one.
type pgClient struct {
	cfg Config

	mu     sync.Mutex
	conn   *pgx.Conn
	grants uint64           // leases granted, numbering them
	held   map[int64]uint64 // session advisory locks held: key → lease
	open   uint64           // the lease that is the open transaction, 0 for none
}

// pgHold is a lease's Data: the session it was granted on, and which grant
// it was, so that releasing a lease twice, or an older one, is told from
// releasing the current one.
type pgHold struct {
	conn  *pgx.Conn
	grant uint64
}

// registerPG registers one of the PostgreSQL locks. Every one keeps its
// grant in the client's own session on the primary (the standby only stands
// by for a failover: two members), and none has a lease. Without Addrs, New
// is only asked what the lock can do, before any server runs; it dials
// nothing until its first acquire either way.
func registerPG(name, description, weakness string, wrap func(*pgClient) Locker) {
	Register(Spec{
		Name: name, Description: description, Store: "postgres", Leaseless: true, Nodes: 2,
		Library: "Go, lockchaos (pgx 5.7.2)", Weakness: weakness,
		New: func(cfg Config) (Locker, error) { return wrap(&pgClient{cfg: cfg, held: map[int64]uint64{}}), nil },
	})
}

// begin starts an acquire: one request at a time on the client's session
// (c.mu, until done), bounded by OpTimeout plus extra (a wait), on the
// session, dialled if it is not open. done is to be called however it went.
func (c *pgClient) begin(ctx context.Context, extra time.Duration) (context.Context, *pgx.Conn, func(), error) {
	c.mu.Lock()
	ctx, cancel := c.opCtx(ctx, extra)
	done := func() { cancel(); c.mu.Unlock() }
	conn, err := c.session(ctx)
	return ctx, conn, done, err
}

// opCtx bounds one request by OpTimeout, plus extra (a wait).
func (c *pgClient) opCtx(ctx context.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	if c.cfg.OpTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.cfg.OpTimeout+extra)
}

// session returns the open connection, or dials one. A connection still in
// a transaction belongs to a lease the worker gave up on: dropping it ends
// that transaction (and its locks) as soon as the server notices.
func (c *pgClient) session(ctx context.Context) (*pgx.Conn, error) {
	if c.conn != nil && !c.conn.IsClosed() && c.conn.PgConn().TxStatus() == 'I' {
		return c.conn, nil
	}
	c.drop()
	if len(c.cfg.Addrs) < 1 {
		return nil, errors.New("postgres lock: no address for the primary (Config.Addrs)")
	}
	host, port, err := net.SplitHostPort(c.cfg.Addrs[0])
	if err != nil {
		return nil, fmt.Errorf("postgres lock: address %q: %w", c.cfg.Addrs[0], err)
	}
	pcfg, err := pgx.ParseConfig(fmt.Sprintf("host=%s port=%s user=%s dbname=postgres sslmode=disable", host, port, pgUser))
	if err != nil {
		return nil, err
	}
	// One round trip per statement, no prepared statements to lose with a
	// session.
	pcfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	pcfg.RuntimeParams["application_name"] = c.cfg.Owner
	conn, err := pgx.ConnectConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("connect to postgres at %s: %w", c.cfg.Addrs[0], err)
	}
	c.conn, c.held, c.open = conn, map[int64]uint64{}, 0
	return conn, nil
}

// drop closes the connection, if any, without waiting long for a server
// that may not answer.
func (c *pgClient) drop() {
	if c.conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = c.conn.Close(ctx)
	c.conn, c.held, c.open = nil, map[int64]uint64{}, 0
}

// fail drops the connection after an error and returns the error, which
// is indeterminate for the caller.
func (c *pgClient) fail(what string, err error) error {
	c.drop()
	return fmt.Errorf("%s: %w", what, err)
}

// grant records a lease granted on the open connection; xact: the lease is
// the open transaction.
func (c *pgClient) grant(key, token string, k int64, xact bool) Lease {
	c.grants++
	if xact {
		c.open = c.grants
	} else {
		c.held[k] = c.grants
	}
	return Lease{Key: key, Owner: c.cfg.Owner, Token: token, Data: pgHold{c.conn, c.grants}}
}

// leaseConn is the connection lease was granted on, if it is still the
// open one; otherwise the outcome of a release is unknown: the old
// session holds the lock until the server notices it gone.
func (c *pgClient) leaseConn(lease Lease) (*pgx.Conn, pgHold, error) {
	h, _ := lease.Data.(pgHold)
	if c.conn == nil || c.conn.IsClosed() || h.conn != c.conn {
		return nil, h, errors.New("the lease's connection to postgres is gone: the server frees its lock only once it notices the session ended")
	}
	return c.conn, h, nil
}

// commit ends a lease that is an open transaction. COMMIT answered with
// ROLLBACK means the transaction had been aborted, and its locks released
// with it: certainly not held; so is a lease whose transaction this live
// session already ended. Any other failure is indeterminate: a session
// the server ended released the lock, but an error may also have cut the
// connection after the COMMIT took effect.
func (c *pgClient) commit(ctx context.Context, lease Lease) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	conn, h, err := c.leaseConn(lease)
	if err != nil {
		return err
	}
	if h.grant != c.open || conn.PgConn().TxStatus() == 'I' {
		return ErrNotHeld
	}
	ctx, cancel := c.opCtx(ctx, 0)
	defer cancel()
	tag, err := conn.Exec(ctx, "COMMIT")
	c.open = 0
	if err != nil {
		return c.fail("COMMIT", err)
	}
	if tag.String() == "ROLLBACK" {
		return ErrNotHeld
	}
	return nil
}

// rollback ends a transaction that took no lock; a failure costs only the
// connection.
func (c *pgClient) rollback(ctx context.Context, conn *pgx.Conn) {
	if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
		c.drop()
	}
}

func (c *pgClient) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop()
	return nil
}

// pgKey is the advisory lock key of a lock key: FNV-1a, stable across
// clients and runs.
func pgKey(key string) int64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return int64(h.Sum64())
}

// pgLockNotAvailable: NOWAIT or lock_timeout found the lock held
// (SQLSTATE 55P03, lock_not_available).
func pgLockNotAvailable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "55P03"
}
