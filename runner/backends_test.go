package runner_test

import (
	"cmp"
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/procs"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/runner/runtest"
	"github.com/lockchaos/lockchaos/settings"
	"github.com/lockchaos/lockchaos/workload"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// The docker backend changes where redis-server runs, not what the faults
// do: the same scenarios reach the same verdicts on local processes and on
// containers. Without a Docker engine this fails, saying to run make setup.
func TestLocalAndDockerBackendsReachTheSameVerdicts(t *testing.T) {
	scenarios := []struct {
		name, lock string
		nemeses    []string
		hold       time.Duration
		want       checker.Verdict
		ttl        time.Duration // 300 ms when 0
	}{
		{"no fault", "token-lua", nil, 20 * ms, checker.Safe, 0},
		{"client paused past its TTL", "set-nx-px", []string{"pause-client"}, 60 * ms, checker.Violation, 0},
		// A paused lock node, on a lock whose verdict does not depend on
		// which request the freeze catches: Redlock keeps a majority of its
		// five nodes and checks how long its acquire took (token-lua may or
		// may not get a late OK for an expired lease, so two backends could
		// disagree by luck). Its per-node timeout is a twentieth of the
		// TTL: 600 ms leaves each node 30 ms, where a busy machine's round
		// trip to a container took 15 ms (median; 15 ms was refused before
		// the run as a majority never gathered).
		{"lock node paused", "redlock", []string{"pause-node"}, 20 * ms, checker.Safe, 600 * ms},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			for _, n := range sc.nemeses {
				if _, err := nemesis.Lookup(n); err != nil {
					t.Skipf("nemesis %s is not registered: %v", n, err)
				}
			}
			verdicts := map[string]checker.Verdict{}
			ttl := cmp.Or(sc.ttl, 300*ms)
			for _, backend := range []string{"local", "docker"} {
				c := settings.Run{
					Lock:     sc.lock,
					Nemeses:  sc.nemeses,
					Duration: 5 * time.Second,
					Seed:     11,
					Out:      t.TempDir(),
					Workload: workload.Workload{Clients: 4, Keys: 1, TTL: ttl, Hold: sc.hold, Think: 10 * ms},
					Topology: cluster.Topology{Backend: backend},
				}
				res, err := runtest.RunEvidence(t, &c)
				// A run the checker could not decide (a container that a
				// busy machine stalled for seconds, so that the final
				// counter was never read) says nothing about the backends:
				// run it again, as for no evidence.
				for attempt := 2; err == nil && res.Verdict == checker.Inconclusive && attempt <= 3; attempt++ {
					t.Logf("%s: inconclusive (%s); running it again", backend, res.Summary)
					c.Out = t.TempDir()
					res, err = runtest.RunEvidence(t, &c)
				}
				if err != nil {
					t.Fatalf("%s backend: %v", backend, err)
				}
				t.Logf("%s: %s: %s", backend, res.Verdict, res.Summary)
				verdicts[backend] = res.Verdict
				if sc.want != "" && res.Verdict != sc.want {
					t.Errorf("%s backend: verdict %s, want %s", backend, res.Verdict, sc.want)
				}
			}
			if verdicts["local"] != verdicts["docker"] {
				t.Errorf("the backends disagree: local %s, docker %s", verdicts["local"], verdicts["docker"])
			}
			if left := ourContainers(t); len(left) > 0 {
				t.Errorf("containers left after the runs: %v", left)
			}
		})
	}
}

// On docker the sentinels are containers too, and they still decide a real
// failover that loses the lock, as local redis-sentinel processes do in
// TestFailoverDecidedBySentinelsLosesTheLock (nemesis/failover_sentinel_test.go).
// The test watches what runs during the run: sentinel containers of this
// process, and no local redis-sentinel child.
func TestSentinelsAreContainersOnDockerAndDecideTheFailover(t *testing.T) {
	c := runtest.FaultConfig(t, "token-lua", []string{"failover-sentinel"})
	// As TestFailoverDecidedBySentinelsLosesTheLock: the lease outlasts
	// Sentinel's decision, and the nemesis keeps the holder inside.
	c.TTL, c.Hold, c.Think, c.FaultInterval, c.Duration = 10*time.Second, 200*ms, 100*ms, 300*ms, 14*time.Second
	c.Replicas, c.Sentinels, c.Backend = 1, 3, "docker"
	seen := map[string]bool{}
	var mu sync.Mutex
	stop := make(chan struct{})
	watched := make(chan struct{})
	// The watcher ends before the test does, however it ends (a run that
	// fails ends it from RunFaults, by t.Fatal).
	stopWatching := sync.OnceFunc(func() { close(stop); <-watched })
	defer stopWatching()
	go func() {
		defer close(watched)
		for {
			list, err := listOurContainers()
			if err != nil {
				t.Errorf("list containers during the run: %v", err)
				return
			}
			var names []string
			for _, c := range list {
				names = append(names, c.Labels[cluster.LabelNode])
			}
			for _, p := range procs.Children("redis-") {
				names = append(names, "local "+p)
			}
			mu.Lock()
			for _, n := range names {
				seen[n] = true
			}
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-time.After(200 * ms):
			}
		}
	}()
	res, _ := runtest.RunFaults(t, &c)
	stopWatching()
	runtest.Verdict(t, res, checker.Violation)
	if p := runtest.FirstLanded(t, res).Params; p["promoted-by"] != "3 sentinels" || p["sentinel-decision"] == "" {
		t.Errorf("the fault that landed does not show a sentinel promotion: %v", p)
	}
	runtest.SentinelsSawTheFailover(t, c)
	mu.Lock()
	defer mu.Unlock()
	for k := 0; k < c.Sentinels; k++ {
		if name := "sentinel" + strconv.Itoa(k); !seen[name] {
			t.Errorf("no container of %s was seen during the run; seen: %v", name, seen)
		}
	}
	for n := range seen {
		if strings.HasPrefix(n, "local ") {
			t.Errorf("a local process ran on the docker backend: %s", n)
		}
	}
	if left := ourContainers(t); len(left) > 0 {
		t.Errorf("containers left after the run: %v", left)
	}
}

// ourContainers names the lockchaos containers this test process started.
func ourContainers(t *testing.T) []string {
	t.Helper()
	list, err := listOurContainers()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range list {
		names = append(names, strings.Join(c.Names, ","))
	}
	return names
}

// listOurContainers lists the lockchaos containers this test process started.
func listOurContainers() ([]container.Summary, error) {
	api, err := client.New(client.FromEnv)
	if err != nil {
		return nil, err
	}
	defer api.Close()
	list, err := api.ContainerList(context.Background(), client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", cluster.LabelManaged+"=1")})
	if err != nil {
		return nil, err
	}
	var ours []container.Summary
	for _, c := range list.Items {
		if strings.HasPrefix(c.Labels[cluster.LabelOwner], strconv.Itoa(os.Getpid())+":") {
			ours = append(ours, c)
		}
	}
	return ours, nil
}
