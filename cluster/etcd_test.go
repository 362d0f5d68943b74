package cluster

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/ports"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

func startEtcdForTest(t *testing.T) *EtcdEnsemble {
	t.Helper()
	s, err := LookupStore(StoreEtcd)
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Start(context.Background(), &Local{}, EnsembleSpec{Members: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopEtcd(e.(*EtcdEnsemble)) })
	return e.(*EtcdEnsemble)
}

func stopEtcd(e *EtcdEnsemble) {
	for _, m := range e.Members() {
		m.Stop()
	}
	e.Close()
}

// ourEtcds lists the etcd processes this test process started and that
// still run: Pdeathsig and Stop must leave none.
func ourEtcds(t *testing.T) []int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var pids []int
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 || !strings.Contains(s[:i], "(etcd") {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
			pid, _ := strconv.Atoi(strings.Fields(s)[0])
			pids = append(pids, pid)
		}
	}
	return pids
}

// putKey writes key through the members still running.
func putKey(t *testing.T, e *EtcdEnsemble, key string) {
	t.Helper()
	var eps []string
	for _, m := range e.members {
		eps = append(eps, m.endpoint())
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: eps, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, key, "x"); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// eventuallyHolds polls m until its own copy of the keyspace has key: a
// restarted member catches up from the leader after it answers.
func eventuallyHolds(t *testing.T, m *EtcdMember, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		ok, err := m.HoldsLease(ctx, key, key)
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("member %s never had %s (last error %v)", m.name, key, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func TestEtcdEnsembleLeadsFailsOverRestartsAndCleansUp(t *testing.T) {
	began := time.Now()
	e := startEtcdForTest(t)
	t.Logf("start: %v", time.Since(began))
	ctx := context.Background()
	if len(e.Members()) != 3 || len(e.Serving()) != 3 {
		t.Fatalf("members %d, serving %d, want 3 and 3", len(e.Members()), len(e.Serving()))
	}
	for i, m := range e.members {
		if m.Name() != "etcd"+strconv.Itoa(i) {
			t.Errorf("member %d is named %q", i, m.Name())
		}
		if port, _ := strconv.Atoi(strings.TrimPrefix(m.Addr(), "127.0.0.1:")); port >= ports.EphemeralLow() {
			t.Errorf("member port %d is in the ephemeral range", port)
		}
	}
	// Two answers in a row name the same member: a fresh ensemble beside
	// busy cores may still elect again (a heartbeat missed), so the
	// leader may change between two asks, but not every time.
	lead, again := -1, -2
	var err error
	for try := 0; try < 10 && again != lead; try++ {
		if lead, err = e.Leader(ctx); err != nil {
			t.Fatal(err)
		}
		if again, err = e.Leader(ctx); err != nil {
			t.Fatal(err)
		}
		if again != lead {
			t.Logf("Leader said %d, then %d: an election meanwhile", lead, again)
			time.Sleep(500 * time.Millisecond)
		}
	}
	if again != lead {
		t.Fatalf("Leader never said the same twice in a row in 10 tries (last %d, then %d)", lead, again)
	}

	began = time.Now()
	from, to, heal, err := e.FailOver(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failover: %v", time.Since(began))
	if from != lead || to == from || to < 0 {
		t.Fatalf("FailOver from %d to %d; the leader was %d", from, to, lead)
	}
	if err := e.members[from].Signal(0); !errors.Is(err, ErrNotRunning) {
		t.Errorf("the old leader's process: %v, want ErrNotRunning", err)
	}
	if now, err := e.leader(ctx, from); err != nil || now != to {
		t.Errorf("after FailOver the survivors follow %d (%v), want %d", now, err, to)
	}
	// A write while the old leader is down reaches it once it rejoins.
	putKey(t, e, "written-while-down")
	began = time.Now()
	if err := heal(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("heal: %v", time.Since(began))
	eventuallyHolds(t, e.members[from], "written-while-down")
	if _, err := e.Leader(ctx); err != nil {
		t.Errorf("no leader after heal: %v", err)
	}

	// A follower killed outright restarts on its data and rejoins.
	f := (to + 1) % 3
	if f == from {
		f = (f + 1) % 3
	}
	fm := e.members[f]
	oldPid := fm.Pid()
	if err := fm.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-fm.proc.done()
	if err := fm.Signal(syscall.SIGSTOP); !errors.Is(err, ErrNotRunning) {
		t.Errorf("signal to a killed member: %v, want ErrNotRunning", err)
	}
	putKey(t, e, "written-while-killed")
	began = time.Now()
	if err := fm.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart: %v", time.Since(began))
	if fm.Pid() == oldPid {
		t.Error("Restart did not start a new process")
	}
	eventuallyHolds(t, fm, "written-while-killed")
	if b, err := os.ReadFile(fm.Log()); err != nil || strings.Count(string(b), "starting an etcd server") < 2 {
		t.Errorf("log %s does not hold both starts (%v)", fm.Log(), err)
	}

	var dirs []string
	for _, m := range e.members {
		dirs = append(dirs, m.dir)
	}
	stopEtcd(e)
	for _, d := range dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("member directory %s left behind", d)
		}
	}
	if pids := ourEtcds(t); len(pids) > 0 {
		t.Errorf("etcd processes %v still running after Stop", pids)
	}
}

// Another listener on a member's port (another run's server, a proxy) makes
// that member exit at start-up; the ensemble starts again on other ports
// and leaves nothing of the failed attempt running.
func TestEtcdStartMovesOffATakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	orig := etcdPorts
	calls := 0
	etcdPorts = func(ctx context.Context, n int) ([]int, error) {
		calls++
		ps, err := orig(ctx, n)
		if calls == 1 && err == nil {
			ps[2] = taken // member 1's client port
		}
		return ps, err
	}
	defer func() { etcdPorts = orig }()

	e := startEtcdForTest(t)
	if calls < 2 {
		t.Errorf("ports picked %d times, want a second pick after the taken port", calls)
	}
	for _, m := range e.members {
		if m.clientPort == taken || m.peerPort == taken {
			t.Errorf("member %s uses the taken port %d", m.name, taken)
		}
	}
	if _, err := e.Leader(context.Background()); err != nil {
		t.Error(err)
	}
	// Another ensemble's etcd on a member's port answers too, and is told
	// apart by its member name.
	other := &EtcdMember{name: "etcd0", etcdName: "etcd0-lockchaos-someone-else", clientPort: e.members[0].clientPort}
	if err := other.identify(context.Background()); !errors.Is(err, errImpostor) {
		t.Errorf("another ensemble's member on the port: %v, want errImpostor", err)
	}
	if err := e.members[0].identify(context.Background()); err != nil {
		t.Errorf("our own member: %v", err)
	}
	stopEtcd(e)
	if pids := ourEtcds(t); len(pids) > 0 {
		t.Errorf("etcd processes %v still running after Stop", pids)
	}
}

func TestEtcdStartSaysWhatItNeeds(t *testing.T) {
	s, err := LookupStore(StoreEtcd)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", t.TempDir())
	_, err = s.Start(context.Background(), &Local{}, EnsembleSpec{Members: 3})
	if err == nil || !strings.Contains(err.Error(), s.Install()) {
		t.Errorf("missing etcd: %v", err)
	}
}
