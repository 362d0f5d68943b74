package locks_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/locks"
)

// Curator marks a working connection SUSPENDED when a background operation
// gives up on a connection loss (with no retries, the adapter's option
// retries=0, its default until 2026-11: after an acquire that failed,
// FindAndDeleteProtectedNodeInBackground gives up again and again, as in
// CURATOR-106, when its JVM is starved), lets acquire succeed
// meanwhile, and once SUSPENDED has lasted the session timeout closes the
// session itself: the node of a lock granted in between goes while its
// holder works. Seen in the matrix (curator-mutex+pause-node, CI): clients
// 1 and 2 both held lock:0 for 40 ms, the LOST event reaching the adapter
// after its release. Curator's documentation says a holder cannot be sure
// of its lock after SUSPENDED until RECONNECTED; the adapter reports a
// grant made in that state lost at once.
//
// Three adapters contend for one key on a real ensemble whose leader is
// paused (SIGSTOP) four times for 2 s, their JVMs starved all along (40 ms
// stopped in every 60: Curator's spinning retry then starts in most runs).
// A hold lasts 200 ms, until its release is sent; when its node goes
// meanwhile, its holder must have been told (lost) first. The adapter that
// trusted such grants failed this in 1 of 3 invocations here. A run in
// which no grant came while SUSPENDED is no evidence either way and is run
// again.
func TestCuratorMutexTellsAHolderBeforeItsNodeGoes(t *testing.T) {
	spec, err := locks.Lookup("curator-mutex")
	if err != nil {
		t.Fatal(err)
	}
	for try := 1; ; try++ {
		var suspended int
		var untold []string
		t.Run(fmt.Sprint("run", try), func(t *testing.T) { suspended, untold = curatorRound(t, spec) })
		if len(untold) > 0 {
			t.Fatalf("lock nodes went while their holders held them, untold (no lost before): %s", strings.Join(untold, "; "))
		}
		if suspended > 0 {
			t.Logf("run %d: %d grants came while Curator was SUSPENDED or LOST, none trusted", try, suspended)
			return
		}
		if try == 3 {
			t.Skip("no grant came while Curator was SUSPENDED in three runs: no evidence either way")
		}
		t.Logf("run %d: no grant came while Curator was SUSPENDED: running it again", try)
	}
}

// curatorRound runs the contention once: how many grants came while
// Curator was SUSPENDED or LOST (the adapters' logs), and the holds whose
// node went untold.
func curatorRound(t *testing.T, spec locks.Spec) (suspended int, untold []string) {
	e := startStore(t, "zookeeper", 3)
	addrs := servingAddrs(e)
	admin := zkAdmin(t, addrs)
	ctx := context.Background()
	dir := t.TempDir()
	var clients []locks.Locker
	for i := 0; i < 3; i++ {
		// No retries: the spinning clean-up that makes grants come while
		// SUSPENDED (with the default, one retry, few or none come).
		clients = append(clients, curatorClient(t, spec, addrs, fmt.Sprint("c", i), "0", filepath.Join(dir, fmt.Sprint(i, ".log"))))
	}
	start := time.Now()
	since := func() string { return fmt.Sprintf("t=%.2fs", time.Since(start).Seconds()) }
	stop := make(chan struct{})
	defer starve(t, adapterPids(t, "curator-adapter"))()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var owners []int64 // the session of each untold hold's node
	for i, l := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				actx, cancel := context.WithTimeout(ctx, time.Second)
				lease, err := l.Acquire(actx, "k")
				cancel()
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				granted := since()
				// Held for 200 ms, until the release is sent; a watch on
				// its node says whether it went meanwhile.
				releasing, gone := make(chan struct{}), make(chan struct{})
				go func() {
					defer close(gone)
					ok, stat, ev, err := admin.ExistsW(lease.Token)
					if err == nil && !ok {
						// ZooKeeper's reads are not linearizable: the
						// admin's server may be a follower that has not
						// applied the create yet (a run beside CPU hogs
						// saw a node "gone" 30 ms after its grant). Synced
						// with the leader, it answers again.
						if _, err = admin.Sync(lease.Token); err == nil {
							ok, stat, ev, err = admin.ExistsW(lease.Token)
						}
					}
					if err != nil {
						return // no answer: nothing known
					}
					if ok {
						select {
						case e := <-ev:
							if e.Type != zk.EventNodeDeleted || zkClosed(releasing) {
								return
							}
						case <-releasing:
							return
						}
					}
					if !zkClosed(lease.Lost) && !zkClosed(releasing) {
						mu.Lock()
						untold = append(untold, fmt.Sprintf("client %d's %s, granted at %s, gone at %s", i, lease.Token, granted, since()))
						if stat != nil {
							owners = append(owners, stat.EphemeralOwner)
						} else {
							owners = append(owners, 0)
						}
						mu.Unlock()
					}
				}()
				time.Sleep(200 * time.Millisecond)
				close(releasing)
				rctx, cancel := context.WithTimeout(ctx, time.Second)
				l.Release(rctx, lease)
				cancel()
				<-gone
			}
		}()
	}
	for round := 0; round < 4; round++ {
		time.Sleep(2 * time.Second)
		lead, err := e.Leader(ctx)
		if err != nil {
			continue // electing still
		}
		m := e.Members()[lead]
		t.Logf("%s: leader %d paused for 2 s", since(), lead)
		if err := m.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		if err := m.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(4 * time.Second)
	close(stop)
	wg.Wait()
	for i := range clients {
		b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprint(i, ".log")))
		suspended += strings.Count(string(b), "granted while SUSPENDED or LOST") + strings.Count(string(b), "SUSPENDED or LOST just after the grant")
	}
	// A session the servers expired is the ensemble's doing, not Curator's:
	// a leader paused past the session expires, once it runs again, the
	// sessions its followers kept alive meanwhile (their syncLimit is longer
	// than the session), and a holder granted just then learns it only
	// after its node went. Only the sessions Curator closed count here.
	var logs strings.Builder
	for _, m := range e.Members() {
		b, _ := os.ReadFile(m.Log())
		logs.Write(b)
	}
	var closedByCurator []string
	for k, u := range untold {
		if owners[k] != 0 && strings.Contains(logs.String(), fmt.Sprintf("Expiring session 0x%x,", owners[k])) {
			t.Logf("%s: its session 0x%x was expired by the servers (a leader paused past the session), not closed by Curator", u, owners[k])
			continue
		}
		closedByCurator = append(closedByCurator, u)
	}
	return suspended, closedByCurator
}

// adapterPids are this process's children whose command line holds name.
func adapterPids(t *testing.T, name string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err1 := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		cmd, err2 := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err1 != nil || err2 != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, not ")".
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) && strings.Contains(string(cmd), name) {
			pids = append(pids, pid)
		}
	}
	if len(pids) == 0 {
		t.Fatalf("no child process runs %s", name)
	}
	return pids
}

// starve keeps pids stopped 40 ms in every 60 (SIGSTOP, SIGCONT) until the
// function it returns is called, which leaves them running.
func starve(t *testing.T, pids []int) (done func()) {
	stop := make(chan struct{})
	finished := make(chan struct{})
	signal := func(sig syscall.Signal) {
		for _, p := range pids {
			syscall.Kill(p, sig)
		}
	}
	go func() {
		defer close(finished)
		defer signal(syscall.SIGCONT)
		for {
			signal(syscall.SIGSTOP)
			select {
			case <-stop:
				return
			case <-time.After(40 * time.Millisecond):
			}
			signal(syscall.SIGCONT)
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() { close(stop); <-finished }
}

// Curator's clean-up of a protected node recurses until StackOverflowError
// when its retry policy allows no retry (docs/findings/curator-protected-node-
// clean-up-recursion.md). An acquire whose create gets no answer queues
// FindAndDeleteProtectedNodeInBackground; while the client has no
// connection and the operation is older than the connection timeout,
// each try goes straight to the retry policy, and when the policy says no,
// retriesExhausted resets the retry count, not the start time, and runs the
// operation again on the same stack. With one retry the try is queued with
// a sleep instead. Both adapters here acquire once while every member of
// the ensemble is frozen (SIGSTOP), and stay cut off for 4 s; then the
// adapters' logs are read. By construction: no timing decides it.
func TestCuratorWithoutRetriesRecursesInItsProtectedNodeCleanUp(t *testing.T) {
	spec, err := locks.Lookup("curator-mutex")
	if err != nil {
		t.Fatal(err)
	}
	e := startStore(t, "zookeeper", 3)
	addrs := servingAddrs(e)
	ctx := context.Background()
	dir := t.TempDir()
	retries := []string{"0", "1"}
	var clients []locks.Locker
	for _, r := range retries {
		clients = append(clients, curatorClient(t, spec, addrs, "r"+r, r, filepath.Join(dir, r+".log")))
	}
	for _, m := range e.Members() {
		if err := m.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	resume := func() {
		for _, m := range e.Members() {
			m.Signal(syscall.SIGCONT) // twice (the defer) is harmless
		}
	}
	defer resume()
	var wg sync.WaitGroup
	for i, l := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			actx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			if lease, err := l.Acquire(actx, "k"); err == nil {
				t.Errorf("retries=%s: granted %s while every member was frozen", retries[i], lease.Token)
			}
		}()
	}
	wg.Wait()
	time.Sleep(4 * time.Second)
	resume()
	overflowed := func(r string) bool {
		b, err := os.ReadFile(filepath.Join(dir, r+".log"))
		if err != nil {
			t.Fatal(err)
		}
		// The frames, when the JVM could still print them, name
		// FindAndDeleteProtectedNodeInBackground$1.retriesExhausted.
		return strings.Contains(string(b), "java.lang.StackOverflowError")
	}
	if !overflowed("0") {
		t.Errorf("retries=0: no StackOverflowError in the adapter's log (%s)", filepath.Join(dir, "0.log"))
	}
	if overflowed("1") {
		t.Errorf("retries=1: a StackOverflowError in the adapter's log")
	}
}

// curatorClient starts a curator-mutex client with a 1 s session and op
// timeout and the given retries, logging to logPath; it is closed when the
// test ends.
func curatorClient(t *testing.T, spec locks.Spec, addrs []string, owner, retries, logPath string) locks.Locker {
	t.Helper()
	opts := decode(t, spec, map[string]string{"retries": retries}, time.Second)
	store, err := cluster.LookupStore(spec.Store)
	if err != nil {
		t.Fatal(err)
	}
	l, err := spec.New(locks.Config{Addrs: addrs, StoreInit: store.AdapterInit(addrs), TTL: time.Second, OpTimeout: time.Second, Owner: owner, Options: opts, LogPath: logPath})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.(locks.Starter).Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.(interface{ Close() error }).Close() })
	return l
}
