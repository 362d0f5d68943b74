package runner

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/nemesis"
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
	}{
		{"no fault", "token-lua", nil, 20 * ms, checker.Safe},
		{"client paused past its TTL", "set-nx-px", []string{"pause-client"}, 60 * ms, checker.Violation},
		// A paused lock node: the verdict must only agree.
		{"lock node paused", "token-lua", []string{"pause-node"}, 20 * ms, ""},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			for _, n := range sc.nemeses {
				if _, err := nemesis.Lookup(n); err != nil {
					t.Skipf("nemesis %s is not registered: %v", n, err)
				}
			}
			verdicts := map[string]checker.Verdict{}
			for _, backend := range []string{"local", "docker"} {
				c := Config{
					Lock: sc.lock, Nemeses: sc.nemeses, Clients: 4, Keys: 1,
					TTL: 300 * ms, Hold: sc.hold, Duration: 2500 * ms, Think: 10 * ms, Seed: 11,
					Out: t.TempDir(), Backend: backend,
				}
				res, err := Run(context.Background(), c)
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

// ourContainers lists the lockchaos containers this test process started.
func ourContainers(t *testing.T) []string {
	t.Helper()
	api, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	list, err := api.ContainerList(context.Background(), client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", cluster.LabelManaged+"=1")})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range list.Items {
		if strings.HasPrefix(c.Labels[cluster.LabelOwner], strconv.Itoa(os.Getpid())+":") {
			names = append(names, strings.Join(c.Names, ","))
		}
	}
	return names
}
