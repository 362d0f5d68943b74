package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"
)

func startPG(t *testing.T, members int) *pgEnsemble {
	t.Helper()
	if _, err := pgBinDir(); err != nil {
		t.Skip(err)
	}
	s, err := LookupStore(StorePostgres)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	e, err := s.Start(context.Background(), &Local{}, EnsembleSpec{Members: members})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("started %d members in %v", members, time.Since(start).Round(time.Millisecond))
	pe := e.(*pgEnsemble)
	t.Cleanup(func() {
		for _, m := range pe.members {
			m.Stop()
		}
	})
	return pe
}

// pgQueryRow runs one query on a fresh connection straight to n.
func pgQueryRow(t *testing.T, n *pgNode, dest []any, sql string, args ...any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return n.query(ctx, func(c *pgx.Conn) error {
		if dest == nil {
			_, err := c.Exec(ctx, sql, args...)
			return err
		}
		return c.QueryRow(ctx, sql, args...).Scan(dest...)
	})
}

// ourProcs lists every live process whose title names n's cluster: the
// postmaster's children put cluster_name in theirs.
func ourProcs(n *pgNode) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(b), n.ident()) && !strings.Contains(string(b), n.dir) {
			continue
		}
		if st, ok := readProcStat(pid); ok && st.state != 'Z' {
			pids = append(pids, pid)
		}
	}
	return pids
}

// eventually polls cond for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPostgresPrimaryStandbyFailOver(t *testing.T) {
	e := startPG(t, 2)
	ctx := context.Background()
	pg0, pg1 := e.members[0], e.members[1]
	if pg0.Name() != "pg0" || pg1.Name() != "pg1" {
		t.Fatalf("members %s, %s", pg0.Name(), pg1.Name())
	}
	if l, err := e.Leader(ctx); err != nil || l != 0 {
		t.Fatalf("Leader = %d, %v; want 0", l, err)
	}
	if s := e.Serving(); len(s) != 1 || s[0] != Node(pg0) {
		t.Fatalf("Serving = %v, want [pg0]", s)
	}
	var streaming bool
	if err := pgQueryRow(t, pg0, []any{&streaming}, "SELECT EXISTS (SELECT 1 FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming')", pg1.ident()); err != nil || !streaming {
		t.Fatalf("standby not streaming: %v, %v", streaming, err)
	}
	// What the primary commits reaches the standby.
	if err := pgQueryRow(t, pg0, nil, "INSERT INTO "+PostgresLockTable+" VALUES ('k1')"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the standby sees the primary's row", func() bool {
		var n int
		return pgQueryRow(t, pg1, []any{&n}, "SELECT count(*) FROM "+PostgresLockTable+" WHERE name = 'k1'") == nil && n == 1
	})
	if err := pgQueryRow(t, pg1, nil, "INSERT INTO "+PostgresLockTable+" VALUES ('k2')"); err == nil {
		t.Fatal("the standby accepted a write")
	}

	// A crashed standby restarts into streaming again.
	if err := pg1.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := pg1.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := pg0.waitStreaming(ctx, pg1); err != nil {
		t.Fatal(err)
	}

	// A row the primary committed that the standby has not received yet
	// (its WAL receiver stopped) is on the promoted standby all the same:
	// FailOver waits for the standby to catch up before it promotes.
	var receiver int
	if err := pgQueryRow(t, pg1, []any{&receiver}, "SELECT pid FROM pg_stat_wal_receiver"); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(receiver, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := pgQueryRow(t, pg0, nil, "INSERT INTO "+PostgresLockTable+" VALUES ('k3')"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	type failedOver struct {
		from, to int
		heal     func(context.Context) error
		err      error
	}
	done := make(chan failedOver, 1)
	go func() {
		from, to, heal, err := e.FailOver(ctx)
		done <- failedOver{from, to, heal, err}
	}()
	time.Sleep(500 * time.Millisecond)
	var inRecovery bool
	if err := pgQueryRow(t, pg1, []any{&inRecovery}, "SELECT pg_is_in_recovery()"); err != nil || !inRecovery {
		t.Fatalf("the standby was promoted before it had the primary's last row: in recovery %v, %v", inRecovery, err)
	}
	if err := syscall.Kill(receiver, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	f := <-done
	from, to, heal, err := f.from, f.to, f.heal, f.err
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failover in %v (the standby's WAL receiver stopped for 500 ms of it)", time.Since(start).Round(time.Millisecond))
	if note := e.PromotionNote(); note != "" {
		t.Errorf("a promotion that waited for the standby notes %q; want nothing", note)
	}
	var n int
	if err := pgQueryRow(t, pg1, []any{&n}, "SELECT count(*) FROM "+PostgresLockTable+" WHERE name = 'k3'"); err != nil || n != 1 {
		t.Fatalf("the promoted standby lacks the row the primary committed before the failover: %d rows, %v", n, err)
	}
	// heal rebuilds the old primary as a standby (checked below, after
	// what the failover left).
	if from != 0 || to != 1 || heal == nil {
		t.Fatalf("FailOver = %d, %d, heal %v", from, to, heal != nil)
	}
	if err := pgQueryRow(t, pg1, nil, "INSERT INTO "+PostgresLockTable+" VALUES ('k2')"); err != nil {
		t.Fatalf("the promoted standby refuses a write: %v", err)
	}
	if l, err := e.Leader(ctx); err != nil || l != 1 {
		t.Fatalf("Leader after failover = %d, %v; want 1", l, err)
	}
	if s := e.Serving(); len(s) != 1 || s[0] != Node(pg1) {
		t.Fatalf("Serving after failover = %v, want [pg1]", s)
	}
	// The old primary is left running, a primary still.
	if err := pgQueryRow(t, pg0, []any{&inRecovery}, "SELECT pg_is_in_recovery()"); err != nil || inRecovery {
		t.Fatalf("old primary: in recovery %v, %v", inRecovery, err)
	}
	// Until heal, there is no standby to promote.
	if _, _, _, err := e.FailOver(ctx); !errors.Is(err, ErrNoStandby) {
		t.Fatalf("second FailOver: %v, want ErrNoStandby", err)
	}
	// heal rebuilds the old primary as a standby of the new one: it is in
	// recovery, streams from pg1, and the next failover promotes it back.
	if err := heal(ctx); err != nil {
		t.Fatalf("heal: %v", err)
	}
	if err := pgQueryRow(t, pg0, []any{&inRecovery}, "SELECT pg_is_in_recovery()"); err != nil || !inRecovery {
		t.Fatalf("rebuilt old primary: in recovery %v, %v; want a standby", inRecovery, err)
	}
	// A primary that does not answer (paused here) cannot say how far its
	// WAL went: the standby is promoted with what it has, and the
	// promotion says so.
	if err := pg1.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	from, to, heal, err = e.FailOver(ctx)
	if err := pg1.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err != nil || from != 1 || to != 0 || heal == nil {
		t.Fatalf("FailOver after heal = %d, %d, heal %v, %v; want 1 → 0", from, to, heal != nil, err)
	}
	if note := e.PromotionNote(); !strings.Contains(note, "pg1 did not say how far its WAL went") {
		t.Errorf("promotion over a paused primary notes %q; want why it did not wait", note)
	}
}

// A pause and a crash reach every process of a member, not only the
// postmaster: its backends hold the locks.
func TestPostgresSignalsReachTheWholeGroupAndRestartRecovers(t *testing.T) {
	e := startPG(t, 1)
	ctx := context.Background()
	pg0 := e.members[0]
	// A client session: a backend of pg0 that holds an advisory lock.
	conn, err := pgx.Connect(ctx, pg0.conninfo())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(7)"); err != nil {
		t.Fatal(err)
	}
	backend := int(conn.PgConn().PID())
	pm := pg0.Pid()
	procs := pg0.procs(pm)
	if len(procs) < 3 || !contains(procs, backend) || !contains(procs, pm) {
		t.Fatalf("member's processes = %v, want the postmaster %d, its workers and backend %d", procs, pm, backend)
	}
	state := func(p int) byte {
		st, ok := readProcStat(p)
		if !ok || st.state == 'Z' {
			return 0
		}
		return st.state
	}

	if err := pg0.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// (A process of the list may have exited meanwhile: the backend of a
	// connection of Start's that was closing.)
	eventually(t, "every process of the member stopped", func() bool {
		for _, p := range procs {
			if s := state(p); s != 'T' && s != 0 {
				return false
			}
		}
		return state(pm) == 'T' && state(backend) == 'T'
	})
	if err := pg0.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every process of the member resumed", func() bool {
		for _, p := range procs {
			if state(p) == 'T' {
				return false
			}
		}
		return true
	})
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("the resumed backend does not answer: %v", err)
	}

	if err := pg0.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no process of the killed member left", func() bool {
		for _, p := range procs {
			if state(p) != 0 {
				return false
			}
		}
		return len(ourProcs(pg0)) == 0
	})
	if err := pg0.Signal(syscall.SIGCONT); !errors.Is(err, ErrNotRunning) {
		t.Errorf("signal to a killed member: %v, want ErrNotRunning", err)
	}
	start := time.Now()
	if err := pg0.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart (crash recovery) in %v", time.Since(start).Round(time.Millisecond))
	if pg0.Pid() == pm {
		t.Error("restart did not start a new postmaster")
	}
	var n int
	if err := pgQueryRow(t, pg0, []any{&n}, "SELECT count(*) FROM "+PostgresLockTable); err != nil {
		t.Fatalf("restarted member: %v", err)
	}
	// The crash ended the session: its lock is gone.
	var got bool
	if err := pgQueryRow(t, pg0, []any{&got}, "SELECT pg_try_advisory_lock(7)"); err != nil || !got {
		t.Errorf("advisory lock of the crashed session still held: %v, %v", got, err)
	}
	if !strings.Contains(readFile(pg0.Log()), "database system was interrupted") {
		t.Errorf("log does not show crash recovery: %s", pg0.logTail())
	}
}

func TestPostgresStopLeavesNothing(t *testing.T) {
	e := startPG(t, 2)
	var procs [][]int
	for _, m := range e.members {
		procs = append(procs, m.procs(m.Pid()))
	}
	// One member paused: Stop must still end it.
	if err := e.members[1].Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for _, m := range e.members {
		if err := m.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	for i, m := range e.members {
		for _, p := range procs[i] {
			if st, ok := readProcStat(p); ok && st.state != 'Z' {
				t.Errorf("%s: process %d left", m.name, p)
			}
		}
		if p := ourProcs(m); len(p) > 0 {
			t.Errorf("%s: processes %v left", m.name, p)
		}
		if _, err := os.Stat(m.dir); !os.IsNotExist(err) {
			t.Errorf("%s: directory %s left", m.name, m.dir)
		}
	}
}

// The orphan cleanup removes the System V segment of a member killed
// outright, and only a segment that member's own postmaster created: one
// that another process created since under the id its postmaster.pid
// names (a server lockchaos did not start) is left alone.
func TestPostgresOrphanCleanupRemovesOnlyItsOwnSegment(t *testing.T) {
	e := startPG(t, 1)
	n := e.members[0]
	key, id, ok := pgShmOf(n.data())
	if !ok {
		t.Fatalf("postmaster.pid names no segment: %q", readFile(filepath.Join(n.data(), "postmaster.pid")))
	}
	var ds unix.SysvShmDesc
	if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &ds); err != nil || int64(ds.Perm.Key) != key || int(ds.Cpid) != n.Pid() {
		t.Fatalf("segment %d: %v, key %d (want %d), creator %d (want the postmaster %d)", id, err, ds.Perm.Key, key, ds.Cpid, n.Pid())
	}
	n.kill() // SIGKILL: the postmaster cannot remove its segment
	if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &ds); err != nil {
		t.Fatalf("segment %d is gone after a SIGKILL: %v; the test needs it left", id, err)
	}
	creator := filepath.Join(n.dir, pgShmCreator)
	mine := readFile(creator)
	// As if another process had created it: not ours, left alone.
	if err := os.WriteFile(creator, []byte(strconv.Itoa(n.Pid()+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if !releaseOrphan(n.dir) {
		t.Fatal("the cleanup says something is still attached")
	}
	if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &ds); err != nil {
		t.Fatalf("a segment another process created was removed: %v", err)
	}
	if err := os.WriteFile(creator, []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	if !releaseOrphan(n.dir) {
		t.Fatal("the cleanup says something is still attached")
	}
	// The postmaster's children may still be attached while they notice
	// its death and exit: the segment is then marked for destruction,
	// and the kernel frees it as the last of them detaches.
	if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &ds); err == nil && ds.Perm.Mode&shmDest == 0 {
		t.Fatalf("segment %d of the killed member is still there and not marked for destruction (ipcs -m; %d attached)", id, ds.Nattch)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &ds); err != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("segment %d of the killed member is still there, %d attached (ipcs -m)", id, ds.Nattch)
		}
	}
}

// shmDest is Linux's SHM_DEST mode bit: the segment is removed and goes
// when its last process detaches.
const shmDest = 0o1000

// HoldsLease asks one member: a lock held on the primary is not held on
// the standby, nor after its session ends.
func TestPostgresHoldsLease(t *testing.T) {
	e := startPG(t, 2)
	ctx := context.Background()
	pg0, pg1 := e.members[0], e.members[1]
	conn, err := pgx.Connect(ctx, pg0.conninfo())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	pid := strconv.Itoa(int(conn.PgConn().PID()))
	const k = -5_000_000_000 // both halves of a negative key
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(k)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO "+PostgresLockTable+" VALUES ('r')"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT * FROM "+PostgresLockTable+" WHERE name = 'r' FOR UPDATE NOWAIT"); err != nil {
		t.Fatal(err)
	}
	holds := func(n *pgNode, key, token string) bool {
		t.Helper()
		ok, err := n.HoldsLease(ctx, key, token)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	adv := "advisory:" + pid + ":" + strconv.FormatInt(k, 10)
	if !holds(pg0, "a", adv) || !holds(pg0, "r", "row:"+pid) {
		t.Error("the primary does not say it holds the session's locks")
	}
	if holds(pg0, "a", "advisory:"+pid+":5") || holds(pg0, "s", "row:"+pid) || holds(pg0, "r", "row:1") {
		t.Error("the primary says it holds locks nobody took")
	}
	if holds(pg1, "a", adv) || holds(pg1, "r", "row:"+pid) {
		t.Error("the standby says it holds the primary's locks")
	}
	if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	if holds(pg0, "r", "row:"+pid) || !holds(pg0, "a", adv) {
		t.Error("after COMMIT: the row lock is held, or the session's advisory lock is not")
	}
	conn.Close(ctx)
	eventually(t, "the closed session's lock released", func() bool { return !holds(pg0, "a", adv) })
	if _, err := pg0.HoldsLease(ctx, "a", "bogus"); err == nil {
		t.Error("a malformed token was accepted")
	}
}

// A coordinator killed outright takes its members with it: Pdeathsig
// kills each postmaster, and its children exit when they see it gone.
func TestPostgresDiesWithItsCoordinator(t *testing.T) {
	if os.Getenv("LOCKCHAOS_PG_COORDINATOR") == "1" {
		e := startPG(t, 2)
		for _, m := range e.members {
			fmt.Printf("member %s %d\n", m.ident(), m.Pid())
		}
		fmt.Println("ready")
		time.Sleep(time.Minute)
		return
	}
	if _, err := pgBinDir(); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPostgresDiesWithItsCoordinator$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LOCKCHAOS_PG_COORDINATOR=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var members []*pgNode
	sc := bufio.NewScanner(out)
	for sc.Scan() && sc.Text() != "ready" {
		var ident string
		var pid int
		if _, err := fmt.Sscanf(sc.Text(), "member %s %d", &ident, &pid); err == nil {
			members = append(members, &pgNode{dir: filepath.Join(ScratchDir(), ident)})
		}
	}
	if len(members) != 2 {
		t.Fatalf("the coordinator did not start its members: %d", len(members))
	}
	for _, m := range members {
		if len(ourProcs(m)) < 3 {
			t.Fatalf("%s: processes %v, want the postmaster and its children", m.ident(), ourProcs(m))
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	for _, m := range members {
		eventually(t, m.ident()+": no process left after its coordinator was killed", func() bool { return len(ourProcs(m)) == 0 })
		m.removeShm(time.Second) // what the killed coordinator could not
	}
	RemoveOrphanDirs()
}

func TestMissingPostgresSaysWhatToInstall(t *testing.T) {
	old := pgBinGlob
	pgBinGlob = t.TempDir() + "/*/bin"
	defer func() { pgBinGlob = old }()
	t.Setenv("PATH", t.TempDir())
	_, err := startPostgres(context.Background(), &Local{}, EnsembleSpec{Members: 1})
	if err == nil || !strings.Contains(err.Error(), "apt-get install -y postgresql") {
		t.Errorf("error = %v", err)
	}
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// CutReplication stops the standby's replication: a row the primary
// commits afterwards never reaches it, and a failover promotes it without
// that row (the lossy promotion of asynchronous replication); restore, on
// a standby not promoted, lets what the primary committed meanwhile
// reach it.
func TestPostgresCutReplicationLosesLaterCommitsToAPromotion(t *testing.T) {
	e := startPG(t, 2)
	ctx := context.Background()
	pg0, pg1 := e.members[0], e.members[1]
	count := func(n *pgNode, name string) int {
		var c int
		if err := pgQueryRow(t, n, []any{&c}, "SELECT count(*) FROM "+PostgresLockTable+" WHERE name = $1", name); err != nil {
			t.Fatal(err)
		}
		return c
	}
	insert := func(name string) {
		if err := pgQueryRow(t, pg0, nil, "INSERT INTO "+PostgresLockTable+" VALUES ($1)", name); err != nil {
			t.Fatal(err)
		}
	}

	// Cut, then restored: what was committed meanwhile arrives.
	restore, err := e.CutReplication(ctx)
	if err != nil {
		t.Fatal(err)
	}
	insert("during-cut")
	if err := restore(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the standby receives what the primary committed while it was cut off, once restored", func() bool { return count(pg1, "during-cut") == 1 })

	// Cut, then promoted: the row committed after the cut is not there.
	restore, err = e.CutReplication(ctx)
	if err != nil {
		t.Fatal(err)
	}
	insert("after-cut")
	var senders int
	if err := pgQueryRow(t, pg0, []any{&senders}, "SELECT count(*) FROM pg_stat_replication WHERE application_name = $1", pg1.ident()); err != nil || senders != 0 {
		t.Fatalf("the primary still sends to the cut standby: %d senders, %v", senders, err)
	}
	from, to, heal, err := e.FailOver(ctx)
	if err != nil || from != 0 || to != 1 {
		t.Fatalf("FailOver = %d, %d, %v", from, to, err)
	}
	if n := count(pg1, "after-cut"); n != 0 {
		t.Fatalf("the promoted standby has the row committed after its replication was cut (%d)", n)
	}
	if n := count(pg1, "during-cut"); n != 1 {
		t.Fatalf("the promoted standby lacks a row it had received before the cut (%d)", n)
	}
	if note := e.PromotionNote(); !strings.Contains(note, "replication from pg0 was cut") {
		t.Errorf("PromotionNote = %q; want it to say the replication was cut", note)
	}
	// Promoted, it is a primary: restore has nothing to do.
	if err := restore(ctx); err != nil {
		t.Fatal(err)
	}
	if err := heal(ctx); err != nil {
		t.Fatal(err)
	}
	// The rebuilt old primary streams from the new one (its conninfo
	// written anew by pg_basebackup, the promoted one's emptied one
	// notwithstanding).
	if err := pg1.waitStreaming(ctx, pg0); err != nil {
		t.Fatalf("the rebuilt standby does not stream: %v", err)
	}
}
