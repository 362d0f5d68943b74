package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockchaos/lockchaos/locks"
)

// GetLock is MariaDB's named lock, GET_LOCK(key, 0): held by the client's
// connection until RELEASE_LOCK or until the server sees the connection
// end (https://mariadb.com/kb/en/get_lock/). Like PostgreSQL's advisory
// lock it has no lease: a paused holder keeps it, the server's memory
// holds it, and nothing tells a client that a restarted server forgot it
// (it learns at its next request on the broken connection). A lock taken
// twice by one connection must be released twice.
type GetLock struct {
	cfg locks.Config

	mu       sync.Mutex
	db       *sql.DB
	conn     *sql.Conn         // the session; nil until the first acquire, or after an error
	name     string            // the session's own named lock: the lease's mark (token)
	sessions int               // sessions opened, naming them
	grants   uint64            // leases granted, numbering them
	held     map[string]uint64 // keys this session holds: key → lease
}

// hold is a lease's Data: the session it was granted on, and which grant.
type hold struct {
	conn  *sql.Conn
	grant uint64
}

func init() {
	locks.Register(locks.Spec{
		Name:        "mariadb-get-lock",
		Description: "MariaDB's named lock: GET_LOCK(key, 0) on the client's own connection, release with RELEASE_LOCK; held until released or the connection ends",
		Library:     "Go, lockchaos (go-sql-driver/mysql 1.10.1)",
		Weakness:    "no lease: a paused client keeps it (others wait); a restart, or the replica promoted, frees it under its holder",
		Store:       Name, Nodes: 2, Leaseless: true,
		New: func(cfg locks.Config) (locks.Locker, error) {
			return &GetLock{cfg: cfg, held: map[string]uint64{}}, nil
		},
	})
}

// A lease's token names its session by a named lock the session holds
// for as long as it lives, "session:OWNER#N": the server answers the
// holder of a lock by connection id (IS_USED_LOCK), and a restarted server
// hands out the same ids again, so an id alone would take a new session
// for the one that held the lease before the restart.
const sessionPrefix = "session:"

// tokenSession is the session lock a token names.
func tokenSession(token string) (string, error) {
	if !strings.HasPrefix(token, sessionPrefix) || len(token) == len(sessionPrefix) {
		return "", fmt.Errorf("mariadb: token %q names no session (want %sNAME)", token, sessionPrefix)
	}
	return token, nil
}

// opCtx bounds one request by OpTimeout, plus extra (a wait).
func (l *GetLock) opCtx(ctx context.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	if l.cfg.OpTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, l.cfg.OpTimeout+extra)
}

// session returns the open connection, or dials one. One connection, held
// for good: database/sql would otherwise move a query to another
// connection, whose session holds none of this one's locks.
func (l *GetLock) session(ctx context.Context) (*sql.Conn, error) {
	if l.conn != nil {
		return l.conn, nil
	}
	if len(l.cfg.Addrs) < 1 {
		return nil, errors.New("mariadb lock: no address for the server (Config.Addrs)")
	}
	db, err := sql.Open("mysql", DSN(l.cfg.Addrs[0], l.cfg.OpTimeout))
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to mariadb at %s: %w", l.cfg.Addrs[0], err)
	}
	l.sessions++
	name := sessionPrefix + l.cfg.Owner + "#" + strconv.Itoa(l.sessions)
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", name).Scan(&got); err != nil || got.Int64 != 1 {
		conn.Close()
		db.Close()
		return nil, fmt.Errorf("mariadb at %s: the session's own lock %s: %v (got %v)", l.cfg.Addrs[0], name, err, got)
	}
	l.db, l.conn, l.name, l.held = db, conn, name, map[string]uint64{}
	return conn, nil
}

// drop closes the connection: its session's locks end when the server
// sees it go.
func (l *GetLock) drop() {
	if l.conn == nil {
		return
	}
	l.conn.Close()
	l.db.Close()
	l.db, l.conn, l.held = nil, nil, map[string]uint64{}
}

// fail drops the connection after an error, whose outcome is unknown.
func (l *GetLock) fail(what string, err error) error {
	l.drop()
	return fmt.Errorf("%s: %w", what, err)
}

func (l *GetLock) Acquire(ctx context.Context, key string) (locks.Lease, error) {
	return l.AcquireWait(ctx, key, 0)
}

// AcquireWait waits in the server for at most wait: GET_LOCK's timeout is
// in seconds, to the microsecond.
func (l *GetLock) AcquireWait(ctx context.Context, key string, wait time.Duration) (locks.Lease, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := l.opCtx(ctx, wait)
	defer cancel()
	conn, err := l.session(ctx)
	if err != nil {
		return locks.Lease{}, err
	}
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", key, wait.Seconds()).Scan(&got); err != nil {
		return locks.Lease{}, l.fail("GET_LOCK", err)
	}
	switch {
	case !got.Valid:
		return locks.Lease{}, l.fail("GET_LOCK", errors.New("NULL: an error in the server"))
	case got.Int64 != 1:
		return locks.Lease{}, locks.ErrNotAcquired
	}
	l.grants++
	l.held[key] = l.grants
	return locks.Lease{Key: key, Owner: l.cfg.Owner, Token: l.name, Data: hold{conn, l.grants}}, nil
}

// Release runs RELEASE_LOCK on the lease's own session: 0 or NULL there is
// certain (this live session does not hold it). A lease this session
// released already is not released again: the lock counts, and a second
// release would end a newer lease of the same key.
func (l *GetLock) Release(ctx context.Context, lease locks.Lease) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, _ := lease.Data.(hold)
	if l.conn == nil || h.conn != l.conn {
		return errors.New("the lease's connection to mariadb is gone: the server frees its lock only once it sees the connection end")
	}
	if l.held[lease.Key] != h.grant {
		return locks.ErrNotHeld
	}
	delete(l.held, lease.Key)
	ctx, cancel := l.opCtx(ctx, 0)
	defer cancel()
	var released sql.NullInt64
	if err := l.conn.QueryRowContext(ctx, "SELECT RELEASE_LOCK(?)", lease.Key).Scan(&released); err != nil {
		return l.fail("RELEASE_LOCK", err)
	}
	if !released.Valid || released.Int64 != 1 {
		return locks.ErrNotHeld
	}
	return nil
}

func (l *GetLock) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop()
	return nil
}
