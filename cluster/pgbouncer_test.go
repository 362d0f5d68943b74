package cluster

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgConnect opens a simple-protocol connection to addr, as the locks do.
func pgConnect(t *testing.T, addr string) *pgx.Conn {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	cfg, err := pgx.ParseConfig("host=" + host + " port=" + port + " user=" + PostgresUser + " dbname=postgres sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// TestPgBouncerInTransactionModeSharesOneSession: through the pooler, two
// clients' pg_try_advisory_lock of one key both succeed — their statements
// run on one backend session, whose advisory locks are reentrant — while a
// client connected straight to the server is refused, since the lock is
// held. Serving gives the pooler's address, the members stay the servers,
// and Close leaves no PgBouncer running.
func TestPgBouncerInTransactionModeSharesOneSession(t *testing.T) {
	if _, err := pgBinDir(); err != nil {
		t.Skip(err)
	}
	s, err := LookupStore(StorePostgres)
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Start(context.Background(), &Local{}, EnsembleSpec{Members: 1, Pooler: PoolerPgBouncer})
	if err != nil {
		t.Fatal(err) // make setup installs pgbouncer: a missing one is a failure here
	}
	pe := e.(*pgEnsemble)
	t.Cleanup(func() {
		pe.Close()
		for _, m := range pe.members {
			m.Stop()
		}
	})
	served := e.Serving()[0]
	if served.Addr() == pe.members[0].Addr() || served.Name() != pe.members[0].Name() {
		t.Fatalf("serving %s at %s, member %s at %s: want the member's name at the pooler's address", served.Name(), served.Addr(), pe.members[0].Name(), pe.members[0].Addr())
	}
	ctx := context.Background()
	try := func(c *pgx.Conn) (ok bool, pid int) {
		t.Helper()
		if err := c.QueryRow(ctx, "SELECT pg_try_advisory_lock(42), pg_backend_pid()").Scan(&ok, &pid); err != nil {
			t.Fatal(err)
		}
		return ok, pid
	}
	a, b := pgConnect(t, served.Addr()), pgConnect(t, served.Addr())
	okA, pidA := try(a)
	okB, pidB := try(b)
	if !okA || !okB || pidA != pidB {
		t.Errorf("through the pooler: client A %v on backend %d, client B %v on backend %d; want both granted on one backend", okA, pidA, okB, pidB)
	}
	direct := pgConnect(t, pe.members[0].Addr())
	if ok, pid := try(direct); ok || pid == pidA {
		t.Errorf("straight to the server: granted %v on backend %d; want refused on a backend of its own (the lock is held on %d)", ok, pid, pidA)
	}
	pid := pe.bouncers[0].proc.pid()
	dir := pe.bouncers[0].dir
	if err := pe.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("PgBouncer (pid %d) still runs after Close: %v", pid, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("PgBouncer's directory %s is left after Close: %v", dir, err)
	}
	pe.bouncers = nil
}
