package mariadb

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/logtail"
)

// ensemble is a primary and its replicas, MariaDB's own asynchronous
// replication (the binary log, by GTID), each replica reading the primary
// directly, not through the clients' proxies: a client partition does not
// cut replication. A named lock lives in the memory of the server whose
// session took it and is never written to the binary log, so a promoted
// replica holds none of the primary's locks (https://mariadb.com/kb/en/get_lock/:
// "not replicated").
type ensemble struct {
	members []*member

	failMu sync.Mutex // one failover at a time

	mu      sync.Mutex
	primary int // index in members of the primary clients are served by
	ids     uint32
}

// member is one mariadbd: its server id, whether it replicates, and
// whether its next start begins from an empty data directory (a rejoin).
type member struct {
	*cluster.Server
	id      atomic.Uint32
	replica atomic.Bool
	wipe    atomic.Bool
}

// marker is the database the primary creates at start: a replica that
// has it streams from the primary.
const marker = "lockchaos"

// start starts spec.Members servers: mdb0 the primary, the others its
// replicas. It returns once every replica has what the primary wrote, so
// a failover right after start finds a replica that follows.
func start(ctx context.Context, backend cluster.Backend, spec cluster.EnsembleSpec) (cluster.Ensemble, error) {
	bin, err := serverBin()
	if err != nil {
		return nil, err
	}
	e := &ensemble{}
	fail := func(err error) (cluster.Ensemble, error) {
		for _, m := range e.members {
			m.Stop()
		}
		return nil, err
	}
	for i := range max(spec.Members, 1) {
		m := &member{}
		m.id.Store(e.nextID())
		m.replica.Store(i > 0)
		s, err := cluster.StartServer(ctx, backend, cluster.ServerSpec{
			Store: Name, Name: "mdb" + strconv.Itoa(i),
			Command: func(dir string, port int) *exec.Cmd {
				return exec.Command(bin, m.args(dir, port)...)
			},
			Ready:      ready,
			HoldsLease: holdsLease,
		})
		if err != nil {
			return fail(err)
		}
		m.Server = s
		e.members = append(e.members, m)
	}
	if err := run(ctx, e.members[0].Addr(), append(slices.Clone(gtidTable), "CREATE DATABASE "+marker)...); err != nil {
		return fail(fmt.Errorf("mariadb: write to the primary mdb0: %w", err))
	}
	for _, r := range e.members[1:] {
		if err := r.follow(ctx, e.members[0]); err != nil {
			return fail(err)
		}
	}
	return e, nil
}

// nextID is a server id no member has had: a replica skips the events of
// its own id, so a rejoined member needs a new one to apply what it wrote
// as the primary.
func (e *ensemble) nextID() uint32 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ids++
	return e.ids
}

// args are mariadbd's flags: no option file, its data in dir, no
// accounts (--skip-grant-tables), a small InnoDB, which GET_LOCK does not
// use, and the binary log, which carries everything a replica applies
// (what it applied too, so that it can serve replicas once promoted). A
// replica is read-only. The server refuses to run as root unless told to.
func (m *member) args(dir string, port int) []string {
	data := filepath.Join(dir, "data")
	if m.wipe.Swap(false) {
		os.RemoveAll(data)
	}
	os.MkdirAll(data, 0o755)
	a := []string{
		"--no-defaults",
		"--datadir=" + data,
		"--socket=" + filepath.Join(dir, "mariadb.sock"),
		"--pid-file=" + filepath.Join(dir, "mariadb.pid"),
		"--port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1",
		"--skip-grant-tables",
		"--server-id=" + strconv.FormatUint(uint64(m.id.Load()), 10),
		"--log-bin=binlog",
		"--log-slave-updates",
		"--innodb-buffer-pool-size=8M",
		"--innodb-log-file-size=4M",
	}
	if m.replica.Load() {
		a = append(a, "--read-only")
	}
	if os.Geteuid() == 0 {
		a = append(a, "--user=root")
	}
	return a
}

// gtidTable makes the table where a server records its GTID position, on
// this session only (not in the binary log): the servers start from an
// empty data directory, without the system tables, and a primary reads the
// table too when a replica asks for its log by GTID.
var gtidTable = []string{
	"SET SESSION sql_log_bin = 0",
	"CREATE DATABASE IF NOT EXISTS mysql",
	`CREATE TABLE IF NOT EXISTS mysql.gtid_slave_pos (domain_id INT UNSIGNED NOT NULL,
  sub_id BIGINT UNSIGNED NOT NULL, server_id INT UNSIGNED NOT NULL, seq_no BIGINT UNSIGNED NOT NULL,
  PRIMARY KEY (domain_id, sub_id)) ENGINE=InnoDB`,
	"SET SESSION sql_log_bin = 1",
}

// follow makes m a replica of primary, from the start of its binary log
// (by GTID), and waits until it has the primary's marker database.
func (m *member) follow(ctx context.Context, primary *member) error {
	_, port, _ := net.SplitHostPort(primary.Addr())
	err := run(ctx, m.Addr(), append(slices.Clone(gtidTable),
		"CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT="+port+", MASTER_USER='"+User+"', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1",
		"START SLAVE")...)
	if err != nil {
		return fmt.Errorf("mariadb: make %s a replica of %s: %w", m.Name(), primary.Name(), err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		var n int
		err := query(wctx, m.Addr(), "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", []any{marker}, &n)
		if err == nil && n == 1 {
			return nil
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("mariadb: %s does not replicate %s within 30 s (%v; %s)", m.Name(), primary.Name(), err, m.replicaError(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// replicaError is what SHOW SLAVE STATUS says went wrong, for an error.
func (m *member) replicaError(ctx context.Context) string {
	db, err := sql.Open("mysql", DSN(m.Addr(), 2*time.Second))
	if err != nil {
		return err.Error()
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SHOW SLAVE STATUS")
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if !rows.Next() {
		return "no replication configured"
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return err.Error()
	}
	out := ""
	for i, c := range cols {
		switch c {
		case "Slave_IO_Running", "Slave_SQL_Running", "Last_IO_Error", "Last_SQL_Error":
			out += fmt.Sprintf("%s=%q ", c, vals[i].String)
		}
	}
	return out + "log: " + strings.Join(logtail.File(m.Log(), 3, nil), " | ")
}

func (e *ensemble) Members() []cluster.Node {
	out := make([]cluster.Node, len(e.members))
	for i, m := range e.members {
		out[i] = m.Server
	}
	return out
}

func (e *ensemble) Serving() []cluster.Node {
	e.mu.Lock()
	defer e.mu.Unlock()
	return []cluster.Node{e.members[e.primary].Server}
}

func (e *ensemble) Close() error { return nil }

// Leader is the primary, once it answers as one (writable). After a
// failover the old primary still runs, writable too, cut off from the
// clients: the primary is the one promoted last.
func (e *ensemble) Leader(ctx context.Context) (int, error) {
	e.mu.Lock()
	p := e.primary
	e.mu.Unlock()
	var ro int
	if err := query(ctx, e.members[p].Addr(), "SELECT @@read_only", nil, &ro); err != nil {
		return -1, fmt.Errorf("mariadb: the primary %s does not answer: %w", e.members[p].Name(), err)
	}
	if ro != 0 {
		return -1, fmt.Errorf("mariadb: the primary %s is read-only", e.members[p].Name())
	}
	return p, nil
}

// replica is the primary and the first replica, -1 when none is left.
func (e *ensemble) replica() (primary, replica int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, m := range e.members {
		if i != e.primary && m.replica.Load() {
			return e.primary, i
		}
	}
	return e.primary, -1
}

// HasStandby: cluster.Promoting.
func (e *ensemble) HasStandby() bool {
	_, to := e.replica()
	return to >= 0
}

// PromotionNote: cluster.Promoting. The replica is promoted as it is, the
// primary's binary log applied or not: GET_LOCK's locks are not
// replicated, so no lock of the store's is lost by a lag.
func (e *ensemble) PromotionNote() string {
	return "promoted without waiting for the replica to apply the rest of the primary's binary log"
}

// CutReplication: cluster.Promoting. Once the replica has applied the
// primary's binary log up to where it was (its GTID position), the
// replica's I/O thread stops: it receives nothing more (its SQL thread
// applies what it had received). restore starts it again, unless a
// failover promoted the replica meanwhile.
func (e *ensemble) CutReplication(ctx context.Context) (restore func(context.Context) error, err error) {
	e.failMu.Lock()
	defer e.failMu.Unlock()
	from, to := e.replica()
	if to < 0 {
		return nil, fmt.Errorf("mariadb: cut replication: %w", cluster.ErrNoStandby)
	}
	n := e.members[to]
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var pos string
	var waited int
	if err := query(cctx, e.members[from].Addr(), "SELECT @@gtid_binlog_pos", nil, &pos); err != nil {
		return nil, fmt.Errorf("mariadb: cut the replication of %s: the primary's position: %w", n.Name(), err)
	}
	if err := query(cctx, n.Addr(), "SELECT MASTER_GTID_WAIT(?, 8)", []any{pos}, &waited); err != nil || waited != 0 {
		return nil, fmt.Errorf("mariadb: cut the replication of %s: it did not apply the primary's binary log up to %s within 8 s (%d, %v)", n.Name(), pos, waited, err)
	}
	if err := run(cctx, n.Addr(), "STOP SLAVE IO_THREAD"); err != nil {
		return nil, fmt.Errorf("mariadb: cut the replication of %s: %w", n.Name(), err)
	}
	return func(ctx context.Context) error {
		e.failMu.Lock()
		defer e.failMu.Unlock()
		if !n.replica.Load() {
			return nil // promoted since: a primary, which receives nothing
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := run(cctx, n.Addr(), "START SLAVE IO_THREAD"); err != nil {
			return fmt.Errorf("mariadb: restore the replication of %s: %w", n.Name(), err)
		}
		return nil
	}, nil
}

// FailOver promotes the first replica, as an operator (or MaxScale) would
// when the primary looks dead: replication stopped and forgotten, writes
// allowed. The old primary is left running, a primary still, its
// sessions holding whatever named locks they hold: the promoted replica
// has none of them, and grants them again. heal makes the old primary a
// replica of the new one, from an empty data directory under a new
// server id, as an operator would rebuild it before trusting it again: so
// every failover has a replica to promote.
func (e *ensemble) FailOver(ctx context.Context) (from, to int, heal func(context.Context) error, err error) {
	e.failMu.Lock()
	defer e.failMu.Unlock()
	from, to = e.replica()
	if to < 0 {
		return from, -1, nil, fmt.Errorf("mariadb: fail over from %s: %w", e.members[from].Name(), cluster.ErrNoStandby)
	}
	n := e.members[to]
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := run(pctx, n.Addr(), "STOP SLAVE", "RESET SLAVE ALL", "SET GLOBAL read_only = OFF"); err != nil {
		return from, -1, nil, fmt.Errorf("mariadb: promote %s: %w", n.Name(), err)
	}
	n.replica.Store(false)
	e.mu.Lock()
	e.primary = to
	e.mu.Unlock()
	old := e.members[from]
	heal = func(ctx context.Context) error {
		e.failMu.Lock()
		defer e.failMu.Unlock()
		old.replica.Store(true)
		old.id.Store(e.nextID())
		old.wipe.Store(true)
		if err := old.Restart(ctx); err != nil {
			return fmt.Errorf("mariadb: restart %s to rejoin as a replica: %w", old.Name(), err)
		}
		return old.follow(ctx, n)
	}
	return from, to, heal, nil
}

// run runs statements in order on one session of the server at addr.
func run(ctx context.Context, addr string, stmts ...string) error {
	db, err := sql.Open("mysql", DSN(addr, 5*time.Second))
	if err != nil {
		return err
	}
	defer db.Close()
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, s := range stmts {
		if _, err := c.ExecContext(ctx, s); err != nil {
			first, _, _ := strings.Cut(s, "\n")
			return fmt.Errorf("%s: %w", first, err)
		}
	}
	return nil
}
