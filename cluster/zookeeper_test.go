package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startZK starts a three-server ensemble for one test and stops it after.
func startZK(t *testing.T) *zkEnsemble {
	t.Helper()
	st, err := LookupStore(StoreZooKeeper)
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	e, err := st.Start(context.Background(), &Local{}, EnsembleSpec{Members: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ensemble of 3 up with a leader in %v", time.Since(begin).Round(time.Millisecond))
	for _, s := range e.(*zkEnsemble).members {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.Pid()))
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "VmRSS:") {
				t.Logf("%s's JVM: %s", s.name, strings.Join(strings.Fields(l), " "))
			}
		}
	}
	t.Cleanup(func() {
		for _, m := range e.Members() {
			m.Stop()
		}
	})
	return e.(*zkEnsemble)
}

func TestZooKeeperLeaderFailOverRestartStop(t *testing.T) {
	e := startZK(t)
	ctx := context.Background()
	members := e.Members()
	if len(members) != 3 || len(e.Serving()) != 3 {
		t.Fatalf("%d members, %d serving; want 3 and 3", len(members), len(e.Serving()))
	}
	lead, err := e.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if again, err := e.Leader(ctx); err != nil || again != lead {
			t.Fatalf("leader moved from %d to %d (%v) with no fault", lead, again, err)
		}
	}
	for _, m := range members {
		if _, ok := m.(LeaseHolder); !ok {
			t.Fatalf("%s is no LeaseHolder", m.Name())
		}
		if held, err := m.(LeaseHolder).HoldsLease(ctx, "k", "/lockchaos/k/none"); err != nil || held {
			t.Fatalf("%s holds a node nobody created: %v, %v", m.Name(), held, err)
		}
	}

	begin := time.Now()
	from, to, heal, err := e.FailOver(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("failover %s -> %s in %v", members[from].Name(), members[to].Name(), time.Since(begin).Round(time.Millisecond))
	if from != lead || to == from {
		t.Fatalf("failover from %d to %d; the leader was %d", from, to, lead)
	}
	if err := members[from].Signal(syscall.SIGCONT); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("signal to the killed leader: %v, want ErrNotRunning", err)
	}
	begin = time.Now()
	if err := heal(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("healed (old leader restarted and serving) in %v", time.Since(begin).Round(time.Millisecond))
	if mode, _, err := e.members[from].mode(ctx); err != nil || mode != "follower" {
		t.Fatalf("healed old leader is %q (%v), want a follower", mode, err)
	}
	if now, err := e.Leader(ctx); err != nil || now != to {
		t.Fatalf("leader after heal %d (%v), want %d", now, err, to)
	}

	// A follower killed outright restarts on its ports and rejoins.
	f := e.members[(to+1)%3]
	old := f.Pid()
	if err := f.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-f.proc.done()
	begin = time.Now()
	if err := f.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed follower restarted and serving in %v", time.Since(begin).Round(time.Millisecond))
	if f.Pid() == old {
		t.Fatal("restart kept the old process")
	}
	if mode, _, err := f.mode(ctx); err != nil || mode != "follower" {
		t.Fatalf("restarted member is %q (%v), want a follower", mode, err)
	}
	if b, err := os.ReadFile(f.Log()); err != nil || len(b) == 0 {
		t.Fatalf("log %s: %v", f.Log(), err)
	}

	for _, s := range e.members {
		pid, dir := s.Pid(), s.dir
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("%s's JVM (pid %d) still runs after Stop", s.name, pid)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s's directory %s left behind", s.name, dir)
		}
	}
}
