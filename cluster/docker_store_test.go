package cluster

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// On the docker backend every store's members run in containers of the
// store's image, and every fault the nemeses use works on them as on
// local members: SIGSTOP stops the server's process, the store's own
// failover elects or promotes another member, a restart brings a member
// back on its port and data, and Stop leaves no container and no process.
func TestStoresRunInContainers(t *testing.T) {
	for _, name := range []string{StoreEtcd, StoreZooKeeper, StorePostgres} {
		t.Run(name, func(t *testing.T) {
			d := newDocker(t)
			ctx := context.Background()
			st, err := LookupStore(name)
			if err != nil {
				t.Fatal(err)
			}
			members := 3
			if st.Primary {
				members = 2
			}
			started, err := st.Start(ctx, d, EnsembleSpec{Members: members})
			if err != nil {
				t.Fatal(err)
			}
			e := started.(Elected)
			stopped := false
			stop := func() {
				if !stopped {
					stopped = true
					for _, m := range e.Members() {
						if err := m.Stop(); err != nil {
							t.Errorf("stop %s: %v", m.Name(), err)
						}
					}
					e.Close()
				}
			}
			t.Cleanup(stop)

			// One container per member, and each member's process is the
			// main process of one of them.
			ids := containers(t, d.RunID())
			if len(ids) != members {
				t.Fatalf("%d containers for %d members", len(ids), members)
			}
			pids := map[int]bool{}
			for _, m := range e.Members() {
				pid := m.(interface{ Pid() int }).Pid()
				cg, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
				in := false
				for _, id := range ids {
					in = in || strings.Contains(string(cg), id)
				}
				if !in {
					t.Errorf("%s (pid %d) is in no container of the run: cgroup %q", m.Name(), pid, strings.TrimSpace(string(cg)))
				}
				pids[pid] = true
			}

			lead, err := e.Leader(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// A pause stops the member's process where it is, and ends.
			paused := e.Members()[(lead+1)%members]
			pid := paused.(interface{ Pid() int }).Pid()
			if err := paused.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			// Every thread of a JVM stops, not at once.
			waitStopped(pid, 5*time.Second)
			if s := processState(t, pid); s != "T" {
				t.Errorf("%s after SIGSTOP: state %s, want T", paused.Name(), s)
			}
			if err := paused.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}

			from, to, heal, err := e.FailOver(ctx)
			if err != nil {
				t.Fatalf("fail over: %v", err)
			}
			if from != lead || to == from {
				t.Errorf("failed over from %d to %d; the leader was %d", from, to, lead)
			}
			if now, err := e.Leader(ctx); err != nil || now != to {
				t.Errorf("leader after failover: %d, %v; want %d", now, err, to)
			}
			if heal != nil {
				if err := heal(ctx); err != nil {
					t.Fatalf("heal: %v", err)
				}
			}
			// The heal put the member back in a role the next failover
			// can use (PostgreSQL's old primary rebuilt in its
			// directory, in a new container, as a standby of the new
			// one), and it fails over again.
			from2, to2, heal, err := e.FailOver(ctx)
			if err != nil {
				t.Fatalf("second failover: %v", err)
			}
			if from2 != to || to2 == from2 {
				t.Errorf("second failover from %d to %d; the leader was %d", from2, to2, to)
			}
			if now, err := e.Leader(ctx); err != nil || now != to2 {
				t.Errorf("leader after the second failover: %d, %v; want %d", now, err, to2)
			}
			if heal != nil {
				if err := heal(ctx); err != nil {
					t.Fatalf("heal of the second failover: %v", err)
				}
			}
			to = to2
			// A crash and restart of a member that does not lead.
			other := e.Members()[(to+1)%members]
			if err := other.Restart(ctx); err != nil {
				t.Fatalf("restart %s: %v", other.Name(), err)
			}
			if len(containers(t, d.RunID())) != members {
				t.Errorf("%d containers after a failover and a restart, want %d (one per member)", len(containers(t, d.RunID())), members)
			}

			stop()
			if left := containers(t, d.RunID()); len(left) > 0 {
				t.Errorf("containers left after Stop: %v", left)
			}
			for _, m := range e.Members() {
				pid := m.(interface{ Pid() int }).Pid()
				pids[pid] = true
			}
			for pid := range pids {
				if st, ok := readProcStat(pid); ok && st.state != 'Z' {
					t.Errorf("process %d of the ensemble still runs after Stop", pid)
				}
			}
		})
	}
}
