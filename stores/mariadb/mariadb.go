// Package mariadb is the MariaDB store: a primary and its replicas, each
// mariadbd a child of the coordinator on a free port (replication.go), and
// its lock, GET_LOCK (get_lock.go). It is the first store in a folder of its own: everything
// lockchaos knows of MariaDB is here.
package mariadb

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/lockchaos/lockchaos/cluster"
)

// Name is the store's name (a lock's Store).
const Name = "mariadb"

// User is the account the locks log in as: the servers run with
// --skip-grant-tables, so any user name is let in without a password.
const User = "root"

func init() {
	cluster.RegisterStore(cluster.Store{
		Name:        Name,
		Description: "MariaDB: a primary and an asynchronous replica (the binary log, by GTID); failover promotes the replica; named locks live in the server's memory, not replicated",
		Packages:    []string{"mariadb-server"},
		Installed:   func() bool { _, err := serverBin(); return err == nil },
		Services:    []string{"mariadb"},
		Modules:     []string{"github.com/go-sql-driver/mysql"},
		References:  []string{"mariadb-get-lock", "etcd-mutex-fenced"},
		NoClock:     "GET_LOCK has no expiry: no clock of the server decides whether a lock is held",
		AdapterInit: func(addrs []string) map[string]any { return map[string]any{"user": User} },
		Primary:     true,
		FailsOver:   true,
		Start:       start,
	})
}

// serverBin finds mariadbd.
func serverBin() (string, error) { return cluster.ServerBin("mariadbd", "mariadb-server") }

// DSN is go-sql-driver's data source name for the server at addr, every
// request bounded by timeout (0: none).
func DSN(addr string, timeout time.Duration) string {
	c := mysql.NewConfig()
	c.User, c.Net, c.Addr = User, "tcp", addr
	c.Timeout, c.ReadTimeout, c.WriteTimeout = timeout, timeout, timeout
	return c.FormatDSN()
}

// query runs one query on a fresh connection to addr and scans its one
// row into dest.
func query(ctx context.Context, addr, q string, args []any, dest ...any) error {
	db, err := sql.Open("mysql", DSN(addr, 2*time.Second))
	if err != nil {
		return err
	}
	defer db.Close()
	return db.QueryRowContext(ctx, q, args...).Scan(dest...)
}

// ready: the server on addr answers, and keeps its data in dir (ours, not
// another run's on the same port).
func ready(ctx context.Context, addr, dir string) error {
	var datadir string
	if err := query(ctx, addr, "SELECT @@datadir", nil, &datadir); err != nil {
		return err
	}
	if strings.TrimSuffix(datadir, "/") != filepath.Join(dir, "data") {
		return fmt.Errorf("another server answers on %s (its data is in %s)", addr, datadir)
	}
	return nil
}

// holdsLease: the server's named lock key is held by the session the
// lease's token names, the one that holds the token's own named lock
// (IS_USED_LOCK answers each one's holder by connection id).
func holdsLease(ctx context.Context, addr, key, token string) (bool, error) {
	session, err := tokenSession(token)
	if err != nil {
		return false, err
	}
	var same sql.NullBool
	if err := query(ctx, addr, "SELECT IS_USED_LOCK(?) = IS_USED_LOCK(?)", []any{key, session}, &same); err != nil {
		return false, err
	}
	return same.Valid && same.Bool, nil
}
