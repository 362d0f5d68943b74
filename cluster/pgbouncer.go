package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/internal/ports"
)

// PoolerPgBouncer is the one pooler (Topology.Pooler): PgBouncer in
// transaction mode between the clients and each PostgreSQL member.
const PoolerPgBouncer = "pgbouncer"

// pgBouncer is PgBouncer in front of one PostgreSQL member, as a
// connection pooler is run in production: pool_mode = transaction, so a
// server connection serves a client for one transaction at a time, and one
// server connection in the pool (default_pool_size = 1), so that every
// client's statements share one backend session — what a busy pool does
// by chance, here by construction. A session-level advisory lock taken
// through it belongs to that backend, not to the client: another client's
// pg_try_advisory_lock on the same backend succeeds (PostgreSQL's advisory
// locks are reentrant within a session), and an unlock may land on
// another backend (PgBouncer's own documentation lists session-level
// advisory locks as unusable in transaction mode).
type pgBouncer struct {
	member *pgNode
	dir    string
	port   int
	proc   process
}

// pooledNode is a member as clients see it through its pooler: its address
// is PgBouncer's; signals, restarts and the lease check reach the member.
type pooledNode struct {
	*pgNode
	b *pgBouncer
}

func (p pooledNode) Addr() string { return "127.0.0.1:" + strconv.Itoa(p.b.port) }

// pgBouncerBin finds PgBouncer: on PATH, or where Debian installs it
// (/usr/sbin, on no user's PATH but root's).
func pgBouncerBin() (string, error) {
	bin, err := ServerBin("pgbouncer", "pgbouncer")
	if err != nil {
		return "", fmt.Errorf("--pooler pgbouncer: %w", err)
	}
	return bin, nil
}

// startPgBouncer starts PgBouncer in front of member n, as the user
// PostgreSQL runs as (PgBouncer refuses root too).
func startPgBouncer(ctx context.Context, n *pgNode) (*pgBouncer, error) {
	bin, err := pgBouncerBin()
	if err != nil {
		return nil, err
	}
	dir, err := mkScratch("pgbouncer-" + n.name)
	if err != nil {
		return nil, err
	}
	if n.env.cred != nil {
		if err := os.Chown(dir, int(n.env.cred.Uid), int(n.env.cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("hand %s to the postgres user: %w", dir, err)
		}
	}
	b := &pgBouncer{member: n, dir: dir}
	_, err = ports.Retry(ctx, func(port int) (struct{}, error) {
		b.port = port
		return struct{}{}, b.launch(ctx, bin)
	})
	if err != nil {
		b.stop()
		return nil, err
	}
	return b, nil
}

func (b *pgBouncer) log() string { return filepath.Join(b.dir, "pgbouncer.log") }

func (b *pgBouncer) launch(ctx context.Context, bin string) error {
	users := filepath.Join(b.dir, "users.txt")
	ini := filepath.Join(b.dir, "pgbouncer.ini")
	conf := fmt.Sprintf(`[databases]
postgres = host=127.0.0.1 port=%d dbname=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = 1
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = 1000
server_reset_query =
ignore_startup_parameters = extra_float_digits,application_name
logfile = %s
`, b.member.port, b.port, users, b.log())
	if err := os.WriteFile(users, []byte(`"`+PostgresUser+`" ""`+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(ini, []byte(conf), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(bin, ini)
	cmd.Dir = b.dir
	cmd.Env = b.member.environ()
	cmd.SysProcAttr = serverAttr(&syscall.SysProcAttr{Credential: b.member.env.cred})
	out, err := os.OpenFile(filepath.Join(b.dir, "stderr.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = out, out
	err = b.proc.start(cmd)
	out.Close()
	if err != nil {
		return fmt.Errorf("exec pgbouncer: %w", err)
	}
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := b.member.waitReady(rctx, b.port, b.proc.done()); err != nil {
		b.proc.kill()
		return fmt.Errorf("pgbouncer in front of %s at 127.0.0.1:%d: %w (log: %s %s)", b.member.name, b.port, err,
			logTail(b.log()), logTail(filepath.Join(b.dir, "stderr.log")))
	}
	return nil
}

// stop ends PgBouncer and removes its directory.
func (b *pgBouncer) stop() error {
	b.proc.kill()
	return os.RemoveAll(b.dir)
}
