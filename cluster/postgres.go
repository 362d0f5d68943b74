package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"

	"github.com/lockchaos/lockchaos/internal/ports"
)

// StorePostgres is PostgreSQL: a primary and streaming standbys, each a
// postmaster started from its own scratch directory.
const StorePostgres = "postgres"

// PostgresUser is the superuser every member is initialised with (trust
// authentication on loopback: no password). The locks log in as this user
// to the postgres database.
const PostgresUser = "lockchaos"

// PostgresLockTable is the pg-row lock's table: one row per key, locked
// with SELECT … FOR UPDATE NOWAIT. Start creates it on the primary before
// the standby is cloned, so every member has it.
const PostgresLockTable = "lockchaos_locks"

const postgresInstall = "apt-get install -y postgresql"

// pgBinGlob is where Debian's packages put the server binaries, one
// directory per major version; none of them is on PATH.
var pgBinGlob = "/usr/lib/postgresql/*/bin"

func init() {
	RegisterStore(Store{
		Name:     StorePostgres,
		Packages: []string{"postgresql", "pgbouncer"},
		Installed: func() bool {
			_, err := pgBinDir()
			_, perr := pgBouncerBin()
			return err == nil && perr == nil
		},
		Services:    []string{"postgresql", "pgbouncer"},
		Modules:     []string{"github.com/jackc/pgx/v5"},
		References:  []string{"pg-advisory", "etcd-mutex-fenced"},
		NoClock:     "PostgreSQL's advisory and row locks have no expiry: no clock of the server decides whether a lock is held",
		Description: "PostgreSQL: a primary and an asynchronous streaming standby; failover promotes the standby",
		Primary:     true,
		AdapterInit: func(addrs []string) map[string]any {
			if len(addrs) == 0 {
				return nil
			}
			host, port, _ := strings.Cut(addrs[0], ":")
			return map[string]any{"dsn": pgDSN(host, port)}
		},
		FailsOver: true,
		Start:     startPostgres,
	})
}

// pgEnsemble is a primary and its standbys. The standbys stream from the
// primary directly, not through the clients' proxies: a client partition
// does not cut replication.
type pgEnsemble struct {
	members []*pgNode
	// bouncers are the members' poolers, in the same order (--pooler
	// pgbouncer); nil without one.
	bouncers []*pgBouncer

	failMu sync.Mutex // one failover at a time

	mu      sync.Mutex
	primary int // index in members of the primary clients are served by

	note string // the last promotion's PromotionNote, under failMu
	// cut is the standby whose replication CutReplication stopped, -1
	// for none (under failMu).
	cut int
}

// startPostgres starts spec.Members servers: pg0 initialised by initdb, the
// others cloned from it by pg_basebackup as streaming standbys. It returns
// once every standby streams, so a failover right after start loses
// nothing that was committed before it.
func startPostgres(ctx context.Context, backend Backend, spec EnsembleSpec) (Ensemble, error) {
	if spec.Members < 1 {
		return nil, fmt.Errorf("postgres: %d members: need at least 1 (the primary)", spec.Members)
	}
	env, err := newPGEnv()
	if err != nil {
		return nil, err
	}
	// On the docker backend the postmasters run in containers; initdb and
	// pg_basebackup, which only write the member's directory, run here.
	if env.box, err = storeBox(ctx, backend, StorePostgres); err != nil {
		return nil, err
	}
	e := &pgEnsemble{cut: -1}
	fail := func(err error) (Ensemble, error) {
		e.Close()
		for _, m := range e.members {
			m.Stop()
		}
		return nil, err
	}
	for i := 0; i < spec.Members; i++ {
		name := "pg" + strconv.Itoa(i)
		var n *pgNode
		var err error
		if i == 0 {
			n, err = env.startPrimary(ctx, name)
		} else {
			n, err = env.startStandby(ctx, name, e.members[0])
		}
		if err != nil {
			return fail(fmt.Errorf("start postgres member %s: %w", name, err))
		}
		e.members = append(e.members, n)
	}
	for _, sb := range e.members[1:] {
		if err := e.members[0].waitStreaming(ctx, sb); err != nil {
			return fail(err)
		}
	}
	switch spec.Pooler {
	case "":
	case PoolerPgBouncer:
		// On the docker backend too, PgBouncer runs on this machine (the
		// store's image does not carry it), in front of the member's
		// container on the host network.
		for _, m := range e.members {
			b, err := startPgBouncer(ctx, m)
			if err != nil {
				return fail(err)
			}
			e.bouncers = append(e.bouncers, b)
		}
	default:
		return fail(fmt.Errorf("--pooler %q: want %s", spec.Pooler, PoolerPgBouncer))
	}
	return e, nil
}

func (e *pgEnsemble) Members() []Node { return asNodes(e.members) }

func (e *pgEnsemble) Serving() []Node {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.bouncers != nil {
		return []Node{pooledNode{e.members[e.primary], e.bouncers[e.primary]}}
	}
	return []Node{e.members[e.primary]}
}

// Close stops the poolers.
func (e *pgEnsemble) Close() error {
	var errs []error
	for _, b := range e.bouncers {
		errs = append(errs, b.stop())
	}
	return errors.Join(errs...)
}

// Leader asks every member whether it is in recovery. After a failover the
// old primary still runs and says it is not, like the new one: the primary
// is then the one on the later timeline (promotion starts a new one), as an
// operator would judge it.
func (e *pgEnsemble) Leader(ctx context.Context) (int, error) {
	type answer struct {
		primary  bool
		timeline int64
		err      error
	}
	answers := make([]answer, len(e.members))
	var wg sync.WaitGroup
	for i, m := range e.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A new session forks a backend: seconds on a busy machine.
			qctx, cancel := boundCtx(ctx, 5*time.Second)
			defer cancel()
			var a answer
			a.err = m.query(qctx, func(c *pgx.Conn) error {
				return c.QueryRow(qctx, `SELECT NOT pg_is_in_recovery(),
  CASE WHEN pg_is_in_recovery() THEN 0
  ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int8 END`).Scan(&a.primary, &a.timeline)
			})
			answers[i] = a
		}()
	}
	wg.Wait()
	leader, tie := -1, false
	var errs []string
	for i, a := range answers {
		switch {
		case a.err != nil:
			errs = append(errs, fmt.Sprintf("%s: %v", e.members[i].name, a.err))
		case !a.primary:
		case leader < 0 || a.timeline > answers[leader].timeline:
			leader, tie = i, false
		case a.timeline == answers[leader].timeline:
			tie = true
		}
	}
	if leader < 0 {
		return -1, fmt.Errorf("postgres: no member answers as primary (%s)", strings.Join(errs, "; "))
	}
	if tie {
		return -1, fmt.Errorf("postgres: two members answer as primary on timeline %d", answers[leader].timeline)
	}
	return leader, nil
}

// standby is the primary and the first standby, -1 when none is left.
func (e *pgEnsemble) standby() (primary, standby int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, m := range e.members {
		if i != e.primary && m.standby {
			return e.primary, i
		}
	}
	return e.primary, -1
}

// HasStandby: cluster.Promoting.
func (e *pgEnsemble) HasStandby() bool {
	_, to := e.standby()
	return to >= 0
}

// PromotionNote: cluster.Promoting.
func (e *pgEnsemble) PromotionNote() string {
	e.failMu.Lock()
	defer e.failMu.Unlock()
	return e.note
}

// ErrNoStandby: a PostgreSQL failover found no standby to promote (a
// one-member ensemble, --nodes 1). Nothing was done: the nemesis records a
// missed step, not a failure of the run.
var ErrNoStandby = errors.New("no standby left to promote")

// FailOver promotes the first standby, the way an operator (or Patroni)
// would when the primary looks dead, once the standby has replayed every
// change the primary made (catchUp): the nemesis has cut the clients off
// the primary before, so every committed row reaches the new primary, and
// what a failover takes away is only what is not replicated — the locks of
// the old primary's sessions, which the new primary grants again. (A
// promotion that loses committed rows is another fault.) The old primary
// is left running, a primary still. heal rebuilds it as a standby of the
// new one (rejoin), as an operator would before trusting the ensemble
// again: so every failover has a standby to promote, however many a run
// schedules.
func (e *pgEnsemble) FailOver(ctx context.Context) (from, to int, heal func(context.Context) error, err error) {
	e.failMu.Lock()
	defer e.failMu.Unlock()
	from, to = e.standby()
	if to < 0 {
		return from, -1, nil, fmt.Errorf("postgres: fail over from %s: %w", e.members[from].name, ErrNoStandby)
	}
	n := e.members[to]
	pctx, cancel := boundCtx(ctx, 30*time.Second)
	defer cancel()
	var note string
	if e.cut == to {
		// Cut on purpose (CutReplication): promoted with what it had.
		note = fmt.Sprintf("promoted with what it had received when its replication from %s was cut, without the rest", e.members[from].name)
	} else if note, err = catchUp(pctx, e.members[from], n); err != nil {
		return from, -1, nil, fmt.Errorf("postgres: promote %s: %w (log: %s)", n.name, err, n.logTail())
	}
	e.note = note
	err = n.query(pctx, func(c *pgx.Conn) error {
		var ok bool
		if err := c.QueryRow(pctx, "SELECT pg_promote(true, 30)").Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return errors.New("pg_promote returned false (not promoted within 30 s)")
		}
		return nil
	})
	if err != nil {
		return from, to, nil, fmt.Errorf("postgres: promote %s: %w (log: %s)", n.name, err, n.logTail())
	}
	// Promoted: it is the primary now, whether or not the wait below ends
	// in time.
	e.cut = -1
	e.mu.Lock()
	n.standby = false
	e.primary = to
	e.mu.Unlock()
	// Promotion ends recovery; assigning a transaction id proves writes are
	// accepted.
	for {
		err = n.query(pctx, func(c *pgx.Conn) error {
			_, err := c.Exec(pctx, "SELECT pg_current_xact_id()")
			return err
		})
		if err == nil {
			break
		}
		select {
		case <-pctx.Done():
			return from, to, nil, fmt.Errorf("postgres: promoted %s does not accept writes: %v (log: %s)", n.name, err, n.logTail())
		case <-time.After(10 * time.Millisecond):
		}
	}
	old := e.members[from]
	heal = func(ctx context.Context) error {
		e.failMu.Lock()
		defer e.failMu.Unlock()
		return old.rejoin(ctx, n, &e.mu)
	}
	return from, to, heal, nil
}

// CutReplication: cluster.Promoting. Once the standby has replayed what
// the primary had written (catchUp), its primary_conninfo is emptied
// (ALTER SYSTEM, then a reload): its WAL receiver stops, no other starts,
// and it stays a standby with what it had received. restore sets the
// conninfo it had back.
func (e *pgEnsemble) CutReplication(ctx context.Context) (restore func(context.Context) error, err error) {
	e.failMu.Lock()
	defer e.failMu.Unlock()
	from, to := e.standby()
	if to < 0 {
		return nil, fmt.Errorf("postgres: cut replication: %w", ErrNoStandby)
	}
	n := e.members[to]
	qctx, cancel := boundCtx(ctx, 10*time.Second)
	defer cancel()
	// A primary that does not answer (paused by another fault) cannot say
	// how far it wrote: the standby is cut with what it has, and whether
	// a holder's row is lost is the promoted server's to say.
	if _, err := catchUp(qctx, e.members[from], n); err != nil {
		return nil, fmt.Errorf("postgres: cut the replication of %s: %w", n.name, err)
	}
	var conninfo string
	if err := n.query(qctx, func(c *pgx.Conn) error { return c.QueryRow(qctx, "SHOW primary_conninfo").Scan(&conninfo) }); err != nil {
		return nil, fmt.Errorf("postgres: cut the replication of %s: %w", n.name, err)
	}
	err = n.setConninfo(qctx, "")
	for err == nil {
		var receiving bool
		err = n.query(qctx, func(c *pgx.Conn) error {
			return c.QueryRow(qctx, "SELECT EXISTS (SELECT 1 FROM pg_stat_wal_receiver)").Scan(&receiving)
		})
		if err == nil && !receiving {
			break
		}
		select {
		case <-qctx.Done():
			err = errors.Join(err, fmt.Errorf("its WAL receiver still ran: %w", qctx.Err()))
		case <-time.After(10 * time.Millisecond):
		}
	}
	restore = func(ctx context.Context) error {
		e.failMu.Lock()
		defer e.failMu.Unlock()
		if e.cut != to {
			return nil // promoted since: a primary, which receives nothing
		}
		e.cut = -1
		qctx, cancel := boundCtx(ctx, 10*time.Second)
		defer cancel()
		if err := n.setConninfo(qctx, conninfo); err != nil {
			return fmt.Errorf("postgres: restore the replication of %s: %w (log: %s)", n.name, err, n.logTail())
		}
		return nil
	}
	e.cut = to
	if err != nil {
		return restore, fmt.Errorf("postgres: cut the replication of %s: %w (log: %s)", n.name, err, n.logTail())
	}
	return restore, nil
}

// setConninfo sets a standby's primary_conninfo and reloads its
// configuration: "" stops its WAL receiver, a conninfo starts one.
func (n *pgNode) setConninfo(ctx context.Context, conninfo string) error {
	return n.query(ctx, func(c *pgx.Conn) error {
		// ALTER SYSTEM takes no parameters: a literal, quotes doubled.
		if _, err := c.Exec(ctx, "ALTER SYSTEM SET primary_conninfo = '"+strings.ReplaceAll(conninfo, "'", "''")+"'"); err != nil {
			return err
		}
		_, err := c.Exec(ctx, "SELECT pg_reload_conf()")
		return err
	})
}

// catchUp waits until standby has replayed the WAL that primary has
// written so far (pg_current_wal_lsn), so that a promotion keeps every
// committed change. A primary that does not answer (dead, or paused by
// another fault) has nothing more to give: the standby is promoted with
// what it has, and note says so (a promotion that may lose committed
// rows).
func catchUp(ctx context.Context, primary, standby *pgNode) (note string, err error) {
	var lsn string
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	err = primary.query(qctx, func(c *pgx.Conn) error {
		return c.QueryRow(qctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn)
	})
	cancel()
	if err != nil {
		return fmt.Sprintf("promoted with what it had replayed, without waiting for the rest: %s did not say how far its WAL went within 2 s (%v)", primary.name, err), nil
	}
	for {
		var done bool
		err := standby.query(ctx, func(c *pgx.Conn) error {
			return c.QueryRow(ctx, "SELECT coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)", lsn).Scan(&done)
		})
		if err == nil && done {
			return "", nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("it had not replayed the primary's WAL up to %s", lsn)
			}
			return "", fmt.Errorf("standby did not catch up with %s: %w", primary.name, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// rejoin makes n, an old primary cut off by a failover, a standby of
// primary again: its processes are killed (the sessions that still held
// locks there end), its data directory is cloned anew from primary
// (pg_basebackup -R: the old timeline cannot follow the new one), and it
// starts on its own port and streams before rejoin returns.
func (n *pgNode) rejoin(ctx context.Context, primary *pgNode, mu *sync.Mutex) error {
	n.kill()
	n.removeShm(5 * time.Second)
	if err := os.RemoveAll(n.data()); err != nil {
		return fmt.Errorf("postgres: rejoin %s: remove its old data: %w", n.name, err)
	}
	if err := n.tool(ctx, "pg_basebackup", "-D", n.data(), "-R", "-X", "stream",
		"--checkpoint=fast", "--no-sync", "-d", primary.conninfo()); err != nil {
		return fmt.Errorf("postgres: rejoin %s as a standby of %s: %w", n.name, primary.name, err)
	}
	if err := n.relaunch(ctx); err != nil {
		return fmt.Errorf("postgres: rejoin %s: %w", n.name, err)
	}
	if err := primary.waitStreaming(ctx, n); err != nil {
		return fmt.Errorf("postgres: rejoin %s: %w", n.name, err)
	}
	mu.Lock()
	n.standby = true
	mu.Unlock()
	return nil
}

// pgEnv is what starting a member needs: the binaries and whom to run them
// as.
type pgEnv struct {
	bin  string
	cred *syscall.Credential // nil: run as ourselves
	box  *storeContainers    // nil: the postmasters are our children
}

// newPGEnv finds the server binaries and, when we are root, the postgres
// user: PostgreSQL refuses to run as root. Its processes get the user by
// SysProcAttr.Credential, set in the forked child before exec, so the
// postmaster is still our own child (runuser or su would fork it under
// themselves, and our signals and Pdeathsig would reach them instead).
func newPGEnv() (*pgEnv, error) {
	bin, err := pgBinDir()
	if err != nil {
		return nil, err
	}
	env := &pgEnv{bin: bin}
	if os.Geteuid() != 0 {
		return env, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("postgres: running as root, and PostgreSQL refuses to run as root: no postgres user to run it as (%v); `%s` creates one", err, postgresInstall)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	env.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return env, nil
}

// pgBinDir is the newest directory that has postgres, initdb and
// pg_basebackup, among Debian's and PATH's.
func pgBinDir() (string, error) {
	dirs, _ := filepath.Glob(pgBinGlob)
	sort.Slice(dirs, func(i, j int) bool { return pgMajor(dirs[i]) > pgMajor(dirs[j]) })
	if p, err := exec.LookPath("postgres"); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		ok := true
		for _, b := range []string{"postgres", "initdb", "pg_basebackup"} {
			if st, err := os.Stat(filepath.Join(d, b)); err != nil || st.Mode()&0o111 == 0 {
				ok = false
			}
		}
		if ok {
			return d, nil
		}
	}
	return "", fmt.Errorf("postgres: server binaries (postgres, initdb, pg_basebackup) not found in %s or PATH: install them with `%s` (Debian/Ubuntu)", pgBinGlob, postgresInstall)
}

// pgMajor is the version in /usr/lib/postgresql/<version>/bin.
func pgMajor(dir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return v
}

// newNode makes the member's scratch directory, owned by the user the
// server runs as: it holds the data directory, the socket and the log.
func (env *pgEnv) newNode(name string) (*pgNode, error) {
	dir, err := mkScratch(name)
	if err != nil {
		return nil, fmt.Errorf("make a directory for postgres member %s: %w", name, err)
	}
	if env.cred != nil {
		if err := os.Chown(dir, int(env.cred.Uid), int(env.cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("hand %s to the postgres user: %w", dir, err)
		}
	}
	n := &pgNode{env: env, name: name, dir: dir}
	n.proc.box = env.box.member(name, dir)
	return n, nil
}

func (env *pgEnv) startPrimary(ctx context.Context, name string) (*pgNode, error) {
	n, err := env.newNode(name)
	if err != nil {
		return nil, err
	}
	if err := n.tool(ctx, "initdb", "-D", n.data(), "-U", PostgresUser, "-A", "trust",
		"-E", "UTF8", "--no-locale", "--no-sync", "--no-instructions"); err != nil {
		n.Stop()
		return nil, err
	}
	if err := n.launchOnFreePort(ctx); err != nil {
		n.Stop()
		return nil, err
	}
	qctx, cancel := boundCtx(ctx, 10*time.Second)
	defer cancel()
	err = n.query(qctx, func(c *pgx.Conn) error {
		_, err := c.Exec(qctx, "CREATE TABLE "+PostgresLockTable+" (name text PRIMARY KEY)")
		return err
	})
	if err != nil {
		n.Stop()
		return nil, fmt.Errorf("create the pg-row lock's table: %w", err)
	}
	return n, nil
}

// startStandby clones primary with pg_basebackup -R, which also writes
// the standby's primary_conninfo and standby.signal.
func (env *pgEnv) startStandby(ctx context.Context, name string, primary *pgNode) (*pgNode, error) {
	n, err := env.newNode(name)
	if err != nil {
		return nil, err
	}
	n.standby = true
	if err := n.tool(ctx, "pg_basebackup", "-D", n.data(), "-R", "-X", "stream",
		"--checkpoint=fast", "--no-sync", "-d", primary.conninfo()); err != nil {
		n.Stop()
		return nil, err
	}
	if err := n.launchOnFreePort(ctx); err != nil {
		n.Stop()
		return nil, err
	}
	return n, nil
}

// pgNode is one postmaster and its children. Each child (backend, WAL
// sender and receiver, background worker) makes itself the leader of a
// process group of its own as it starts (setsid, so that the postmaster can
// signal its descendants), so no one group holds the member: Signal
// finds the children and signals each. A SIGSTOP to the postmaster alone
// would leave the backends that hold the locks running; a SIGKILL to it
// alone would leave them running until they notice.
type pgNode struct {
	env     *pgEnv
	name    string
	dir     string
	port    int
	standby bool    // still a standby (under the ensemble's mu)
	proc    process // the postmaster
}

func (n *pgNode) Name() string { return n.name }
func (n *pgNode) Addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }
func (n *pgNode) Log() string  { return filepath.Join(n.dir, "postgres.log") }
func (n *pgNode) data() string { return filepath.Join(n.dir, "data") }

// ident is the member's cluster_name, unique to it (its directory's
// name): what proves that the server on its port is the one we started.
func (n *pgNode) ident() string { return filepath.Base(n.dir) }

func (n *pgNode) conninfo() string { return pgConninfo(n.port) }

// pgConninfo is how the coordinator connects to a server (or its pooler)
// on a loopback port.
func pgConninfo(port int) string { return pgDSN("127.0.0.1", strconv.Itoa(port)) }

// pgDSN is the libpq connection string of the server at host:port, as
// PostgresUser to the postgres database: the members' own, and the one an
// adapter's init carries (AdapterInit).
func pgDSN(host, port string) string {
	return fmt.Sprintf("host=%s port=%s user=%s dbname=postgres sslmode=disable", host, port, PostgresUser)
}

func (n *pgNode) logTail() string { return logTail(n.Log()) }

// sysProcAttr runs a member's programs as the user PostgreSQL runs as, in
// a process group of their own (serverAttr): one signal reaches the
// postmaster and a child not yet in a group of its own. Pdeathsig kills
// the postmaster if the coordinator dies without cleaning up, and its
// children exit when they see the postmaster gone.
func (n *pgNode) sysProcAttr() *syscall.SysProcAttr {
	return serverAttr(&syscall.SysProcAttr{Credential: n.env.cred})
}

// environ is ours without the PG* variables that would point libpq (in
// pg_basebackup) elsewhere, with a HOME the postgres user can read.
func (n *pgNode) environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "LC_") && !strings.HasPrefix(kv, "LANG") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+n.dir, "LC_ALL=C")
}

func (n *pgNode) openLog() (*os.File, error) {
	return os.OpenFile(n.Log(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
}

// tool runs initdb or pg_basebackup to completion, its output in the log.
func (n *pgNode) tool(ctx context.Context, name string, args ...string) error {
	logf, err := n.openLog()
	if err != nil {
		return err
	}
	defer logf.Close()
	tctx, cancel := boundCtx(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(tctx, filepath.Join(n.env.bin, name), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env, cmd.Dir = n.environ(), n.dir
	cmd.SysProcAttr = n.sysProcAttr()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w (log: %s)", name, err, n.logTail())
	}
	return nil
}

// launchOnFreePort picks the member's port for good: a restart reuses it.
func (n *pgNode) launchOnFreePort(ctx context.Context) error {
	_, err := ports.Retry(ctx, func(port int) (struct{}, error) {
		n.port = port
		return struct{}{}, n.launch(ctx)
	})
	return err
}

func (n *pgNode) args() []string {
	set := func(kv ...string) []string {
		var a []string
		for _, s := range kv {
			a = append(a, "-c", s)
		}
		return a
	}
	return append([]string{"-D", n.data(), "-p", strconv.Itoa(n.port), "-k", n.dir},
		set(
			"listen_addresses=127.0.0.1",
			"cluster_name="+n.ident(),
			// Memory (the scratch directory) makes fsync free anyway; off
			// saves the system calls. A crash of the process loses nothing
			// either way: the kernel keeps what was written.
			"fsync=off",
			// Dynamic shared memory in the data directory, removed with it,
			// not in /dev/shm where a killed server would leave it.
			"dynamic_shared_memory_type=mmap",
			"logging_collector=off",
		)...)
}

// launch starts the postmaster and waits until it answers as itself.
func (n *pgNode) launch(ctx context.Context) error {
	logf, err := n.openLog()
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(n.env.bin, "postgres"), n.args()...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env, cmd.Dir = n.environ(), n.dir
	cmd.SysProcAttr = n.sysProcAttr()
	err = n.proc.start(cmd)
	logf.Close()
	if err != nil {
		return fmt.Errorf("exec postgres: %w", err)
	}
	// The postmaster's pid on this machine (in a container too): the
	// creator of the segment it will name in postmaster.pid, by which the
	// orphan cleanup tells our segment from any other server's.
	if err := os.WriteFile(filepath.Join(n.dir, pgShmCreator), []byte(strconv.Itoa(n.proc.pid())), 0o644); err != nil {
		n.kill()
		return fmt.Errorf("record the postmaster of %s: %w", n.name, err)
	}
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := n.waitReady(rctx, n.port, n.proc.done()); err != nil {
		n.kill()
		return fmt.Errorf("postgres %s at %s: %w (log: %s)", n.name, n.Addr(), err, n.logTail())
	}
	return nil
}

// waitReady polls until what listens on port — the member itself, or its
// pooler — answers with the member's cluster_name, or ctx ends, or the
// process that should listen there exits (it could not bind the port, say).
func (n *pgNode) waitReady(ctx context.Context, port int, exited <-chan struct{}) error {
	var last error
	for {
		var name string
		last = pgQuery(ctx, port, func(c *pgx.Conn) error {
			return c.QueryRow(ctx, "SELECT current_setting('cluster_name')").Scan(&name)
		})
		if last == nil {
			if name != n.ident() {
				return fmt.Errorf("%w: it is %q", errImpostor, name)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("did not answer: %w (last: %v)", ctx.Err(), last)
		case <-exited:
			return errors.New("exited during start-up")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitStreaming waits until standby sb streams from n (the walreceiver
// names itself by its cluster_name).
func (n *pgNode) waitStreaming(ctx context.Context, sb *pgNode) error {
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var last error
	for {
		var streaming bool
		last = n.query(wctx, func(c *pgx.Conn) error {
			return c.QueryRow(wctx, "SELECT EXISTS (SELECT 1 FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming')", sb.ident()).Scan(&streaming)
		})
		if last == nil && streaming {
			return nil
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("postgres standby %s does not stream from %s: %v, last: %v (standby log: %s; primary log: %s)",
				sb.name, n.name, wctx.Err(), last, sb.logTail(), n.logTail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// query runs f on a fresh superuser connection straight to the member.
func (n *pgNode) query(ctx context.Context, f func(*pgx.Conn) error) error {
	return pgQuery(ctx, n.port, f)
}

// pgQuery runs f on a connection of its own to the server (or pooler) on
// port, in the simple protocol (a pooler in transaction mode keeps no
// prepared statements).
func pgQuery(ctx context.Context, port int, f func(*pgx.Conn) error) error {
	cfg, err := pgx.ParseConfig(pgConninfo(port))
	if err != nil {
		return err
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	cfg.RuntimeParams["application_name"] = "lockchaos-coordinator"
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		c.Close(cctx)
	}()
	return f(c)
}

// Pid is the postmaster's process id, also its process group's.
func (n *pgNode) Pid() int { return n.proc.pid() }

// Signal sends sig to every process of the member. For SIGSTOP and
// SIGKILL the postmaster is stopped first, so that it forks no child the
// signal would miss. A member whose postmaster has exited gives
// ErrNotRunning.
func (n *pgNode) Signal(sig syscall.Signal) error {
	return n.proc.signalWith("postgres member "+n.name, sig, func(pm *os.Process) error {
		return n.signalAll(pm.Pid, sig)
	})
}

func (n *pgNode) signalAll(pm int, sig syscall.Signal) error {
	freeze := sig == syscall.SIGSTOP || sig == syscall.SIGKILL
	if freeze {
		// The postmaster's own group: itself, and a child forked but not
		// yet in a group of its own.
		if err := syscall.Kill(-pm, syscall.SIGSTOP); err != nil {
			return err
		}
		waitStopped(pm, time.Second)
	}
	for _, p := range n.procs(pm) {
		if p != pm {
			_ = syscall.Kill(p, sig)
		}
	}
	return syscall.Kill(-pm, sig)
}

// procs lists the member's live processes: the postmaster, its children,
// and any process whose title names the member's cluster (every
// PostgreSQL process puts cluster_name in its title), which finds the
// children of a postmaster already gone.
func (n *pgNode) procs(pm int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	ident := []byte(n.ident())
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, ok := readProcStat(pid)
		if !ok || st.state == 'Z' {
			continue
		}
		if pid == pm || st.ppid == pm {
			pids = append(pids, pid)
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(b, ident) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitStopped waits until process pid is stopped ('T' in /proc).
func waitStopped(pid int, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if st, ok := readProcStat(pid); !ok || st.state == 'T' || st.state == 'Z' {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Restart kills what is left of the member and starts the postmaster
// again on its directory and port: crash recovery for a primary, recovery
// and streaming again for a standby (a promoted one stays a primary).
func (n *pgNode) Restart(ctx context.Context) error {
	n.kill()
	// A killed backend may still be attached to the old shared memory
	// while it exits; the new postmaster refuses to start until none is
	// ("pre-existing shared memory block is still in use").
	n.removeShm(5 * time.Second)
	if err := n.relaunch(ctx); err != nil {
		return fmt.Errorf("restart postgres member %s: %w", n.name, err)
	}
	return nil
}

// relaunch starts the postmaster again on the member's own port, waiting
// for the port while a killed server's processes still hold it (onOwnPort).
func (n *pgNode) relaunch(ctx context.Context) error {
	return onOwnPort(ctx, []int{n.port}, func() error { return n.launch(ctx) }, func(err error) bool {
		return strings.Contains(err.Error(), "could not create listen socket") || strings.Contains(err.Error(), "Address already in use")
	})
}

// kill sends SIGKILL to every process of the member (it also ends a
// stopped one) and waits until none is left: a backend still attached to
// the old shared memory would make the next postmaster refuse to start.
func (n *pgNode) kill() {
	pm, exited := n.proc.state()
	if exited == nil {
		return
	}
	select {
	case <-exited:
	default:
		_ = n.signalAll(pm, syscall.SIGKILL)
		<-exited
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := n.procs(pm)
		if len(left) == 0 || time.Now().After(deadline) {
			return
		}
		for _, p := range left {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Stop ends the member and removes its directory. A running postmaster
// gets SIGQUIT (immediate shutdown: it ends its children and, unlike a
// SIGKILL, removes its System V shared memory, which would otherwise stay
// until reboot); a stubborn one, SIGKILL.
func (n *pgNode) Stop() error {
	if pm, exited := n.proc.state(); exited != nil {
		select {
		case <-exited:
		default:
			_ = n.signalAll(pm, syscall.SIGCONT)
			_ = syscall.Kill(pm, syscall.SIGQUIT)
			select {
			case <-exited:
			case <-time.After(3 * time.Second):
			}
		}
		n.kill()
	}
	n.removeShm(time.Second)
	return os.RemoveAll(n.dir)
}

// pgShmCreator, in a member's directory, holds the pid of its latest
// postmaster as this machine sees it: postmaster.pid names the System V
// segment and its key, but only a segment that postmaster created
// (shm_cpid) is ours to remove, never one of a server lockchaos did not
// start that got the same id or key since. The docker backend's
// watchdog reads it too (startWatchdog).
const pgShmCreator = "shm-creator"

func init() {
	// A member killed with its coordinator (Pdeathsig) leaves its segment.
	orphanCleanups = append(orphanCleanups, func(dir string) bool {
		return (&pgNode{dir: dir}).removeOrphanShm()
	})
}

// removeOrphanShm removes the segment of a member whose coordinator is
// gone, once its postmaster is dead: no postmaster will start on that
// directory again, so the backends that are still exiting (they notice
// the postmaster's death at their next wait, which a busy machine
// delays) need not have detached — the kernel frees a removed segment at
// their last detach. It says false while the postmaster still runs (in a
// container not removed yet): the directory, which names the segment,
// must then stay.
func (n *pgNode) removeOrphanShm() bool {
	id, creator, ok := n.ourShm()
	if !ok {
		return true
	}
	if processAlive(creator) {
		return false
	}
	_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
	return true
}

// removeShm removes the System V segment of a killed postmaster once
// nothing is attached to it any more (waiting up to limit): the next
// postmaster on the directory refuses to start while a process is still
// attached to the segment its postmaster.pid names. It says whether none
// of ours is left.
func (n *pgNode) removeShm(limit time.Duration) bool {
	id, creator, ok := n.ourShm()
	if !ok {
		return true
	}
	// A process that is exiting may be gone from /proc's view of the
	// member (its command line goes with its memory) and still attached.
	for deadline := time.Now().Add(limit); ; time.Sleep(5 * time.Millisecond) {
		var ds unix.SysvShmDesc
		if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &ds); err != nil || int(ds.Cpid) != creator {
			return true
		}
		if ds.Nattch == 0 {
			_, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil)
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// ourShm finds the member's segment: the one its postmaster.pid names,
// with that key, created by the postmaster lockchaos started last
// (pgShmCreator). ok is false when there is none, or none provably ours.
func (n *pgNode) ourShm() (id, creator int, ok bool) {
	key, id, ok := pgShmOf(n.data())
	if !ok {
		return 0, 0, false
	}
	b, err := os.ReadFile(filepath.Join(n.dir, pgShmCreator))
	if err != nil {
		return 0, 0, false
	}
	if creator, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
		return 0, 0, false
	}
	var ds unix.SysvShmDesc
	if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &ds); err != nil || int64(ds.Perm.Key) != key || int(ds.Cpid) != creator {
		return 0, 0, false
	}
	return id, creator, true
}

// pgShmOf reads the System V segment's key and id from line 7 of the
// postmaster.pid in data, which the postmaster writes as it creates it.
func pgShmOf(data string) (key int64, id int, ok bool) {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return 0, 0, false
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 7 {
		return 0, 0, false
	}
	f := strings.Fields(lines[6])
	if len(f) != 2 {
		return 0, 0, false
	}
	key, err1 := strconv.ParseInt(f[0], 10, 64)
	id, err2 := strconv.Atoi(f[1])
	return key, id, err1 == nil && err2 == nil
}

type procStat struct {
	state byte
	ppid  int
}

// readProcStat reads a process's state and parent from /proc/PID/stat;
// its name, in parentheses, may hold anything.
func readProcStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return procStat{}, false
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procStat{}, false
	}
	return procStat{state: f[0][0], ppid: ppid}, true
}

// HoldsLease asks this member alone whether the session a lease names
// still holds its lock here. The token is what the postgres locks return:
// "advisory:PID:K" and "xact:PID:K" for advisory locks on the 64-bit key K
// (in pg_locks, held by backend PID), "row:PID" for pg-row (the key's row
// is locked by the transaction backend PID has open: its xmax is that
// transaction's id).
func (n *pgNode) HoldsLease(ctx context.Context, key, token string) (bool, error) {
	f := strings.Split(token, ":")
	if len(f) < 2 {
		return false, fmt.Errorf("postgres lease token %q: want KIND:PID[:KEY]", token)
	}
	var q string
	var args []any
	var pid int64
	var err error
	if f[0] == "shedlock" {
		// ShedLock's row (adapters/java/shedlock-jdbc): the name's
		// lock_until is still the one this grant wrote (UTC, whole
		// milliseconds) and has not passed by the server's clock.
		ms, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return false, fmt.Errorf("postgres lease token %q: %w", token, err)
		}
		q = `SELECT EXISTS (SELECT 1 FROM shedlock WHERE name = $1
  AND lock_until = (to_timestamp($2::float8 / 1000) AT TIME ZONE 'UTC') AND lock_until > (now() AT TIME ZONE 'UTC'))`
		args = []any{key, ms}
	} else if f[0] == "int_lock" && len(f) == 3 {
		// Spring Integration's JdbcLockRegistry
		// (adapters/java/spring-jdbc-lock-registry): the key's row
		// (LOCK_KEY, a UUID of the key) is still this client's, and its
		// EXPIRED_AFTER (UTC) has not passed by the server's clock.
		q = `SELECT EXISTS (SELECT 1 FROM int_lock WHERE lock_key = $1 AND client_id = $2
  AND expired_after >= (now() AT TIME ZONE 'UTC'))`
		args = []any{f[1], f[2]}
	} else if pid, err = strconv.ParseInt(f[1], 10, 32); err != nil {
		return false, fmt.Errorf("postgres lease token %q: %w", token, err)
	}
	switch {
	case q != "":
	case (f[0] == "advisory" || f[0] == "xact") && len(f) == 3:
		k, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return false, fmt.Errorf("postgres lease token %q: %w", token, err)
		}
		// A bigint advisory key shows as classid (high 32 bits) and objid
		// (low 32 bits), objsubid 1.
		q = `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
  AND pid = $1 AND objsubid = 1 AND ((classid::int8 << 32) | objid::int8) = $2)`
		args = []any{pid, k}
	case f[0] == "row" && len(f) == 2:
		q = `SELECT EXISTS (SELECT 1 FROM ` + PostgresLockTable + ` l JOIN pg_stat_activity a
  ON a.backend_xid = l.xmax WHERE l.name = $2 AND a.pid = $1)`
		args = []any{pid, key}
	default:
		return false, fmt.Errorf("postgres lease token %q: unknown kind", token)
	}
	qctx, cancel := boundCtx(ctx, 5*time.Second)
	defer cancel()
	var held bool
	err = n.query(qctx, func(c *pgx.Conn) error { return c.QueryRow(qctx, q, args...).Scan(&held) })
	if err != nil {
		return false, fmt.Errorf("ask postgres member %s about lease %s: %w", n.name, token, err)
	}
	return held, nil
}

// boundCtx is ctx with a deadline no later than d from now.
func boundCtx(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
