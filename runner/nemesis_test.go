package runner_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/runner/runtest"
	"github.com/lockchaos/lockchaos/settings"
)

// How the runner takes the nemeses: which runs they apply to, and how a
// seed decides their steps. Each nemesis's own runs against real Redis are
// in its package (nemesis/*_test.go).

// A nemesis that cannot apply to the run's shape is a usage error from
// Validate, which says what to change; a matrix skips such cells.
// foreignBackend is a backend that is neither local nor docker: it is
// registered (so the run's configuration names a known one) but never opened.
const foreignBackend = "elsewhere"

func init() {
	cluster.RegisterBackend(foreignBackend, func(cluster.BackendOptions) (cluster.Backend, error) {
		return nil, errors.New("the test backend elsewhere is never opened")
	})
}

func TestInapplicableNemesisIsAUsageError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(*settings.Run)
		want string
	}{
		{"failover without replicas", func(c *settings.Run) { c.Nemeses = []string{"failover"} }, "--replicas"},
		{"sentinel failover without sentinels", func(c *settings.Run) { c.Nemeses, c.Replicas = []string{"failover-sentinel"}, 1 }, "--sentinels"},
		{"manual failover beside sentinels", func(c *settings.Run) { c.Nemeses, c.Replicas, c.Sentinels = []string{"failover"}, 1, 3 }, "failover-sentinel"},
		{"split on one node", func(c *settings.Run) {
			c.Nemeses, c.NemesisOptions = []string{"partition"}, map[string]map[string]string{"partition": {"shape": "split"}}
		}, "--nodes 5"},
		{"node out of range", func(c *settings.Run) {
			c.Nemeses, c.NemesisOptions = []string{"pause-node"}, map[string]map[string]string{"pause-node": {"node": "3"}}
		}, "lock nodes 0 to 0"},
		{"clock shim on a foreign backend", func(c *settings.Run) { c.Nemeses, c.Backend = []string{"clock-jump"}, foreignBackend }, "clock-jump-ttl"},
		{"unknown backend", func(c *settings.Run) { c.Backend = "nope" }, "known backends: "},
		{"bad schedule", func(c *settings.Run) {
			c.Nemeses, c.NemesisOptions = []string{"jitter"}, map[string]map[string]string{"jitter": {"schedule": "sometimes"}}
		}, "jitter.schedule"},
		{"sentinels without replicas", func(c *settings.Run) { c.Sentinels = 3 }, "--replicas"},
		{"unknown persistence", func(c *settings.Run) { c.Persistence = "fsync" }, "--persistence"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := runtest.Config(t, "token-lua")
			tc.edit(&c)
			err := runner.Validate(c)
			var ue settings.UsageError
			if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v, want a usage error containing %q", err, tc.want)
			}
		})
	}
	// And a shape that fits is accepted.
	c := runtest.Config(t, "redlock", "partition", "clock-jump")
	c.NemesisOptions = map[string]map[string]string{"partition": {"shape": "split"}, "clock-jump": {"node": "2"}}
	if err := runner.Validate(c); err != nil {
		t.Errorf("redlock with a split and a clock jump on n2: %v", err)
	}
}

// The same seed gives the same fault decisions — which client, which key,
// which node, after which quiet time — whatever the machine's speed, and
// --replay takes the steps a run executed again. (How many steps fit in
// the run does depend on the machine: the decisions of the steps both runs
// took are compared.)
func TestSameSeedSameFaultDecisionsAndReplay(t *testing.T) {
	t.Parallel()
	steps := func(dir string) []nemesis.Executed {
		b, err := os.ReadFile(filepath.Join(dir, rundir.ScheduleFile))
		if err != nil {
			t.Fatal(err)
		}
		var s nemesis.Timetable
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		if len(s.Nemeses) != 1 || s.Nemeses[0].Name != "pause-client" {
			t.Fatalf("schedule %+v", s)
		}
		return s.Nemeses[0].Steps
	}
	decisions := func(es []nemesis.Executed) []nemesis.Step {
		var out []nemesis.Step
		for _, e := range es {
			out = append(out, e.Step)
		}
		return out
	}
	// 5 s: room for two steps even when a step's client loses the races
	// for the key for a while (a step recorded no earlier than its fault).
	var runs [][]nemesis.Executed
	for range 2 {
		c := runtest.FaultConfig(t, "token-lua", []string{"pause-client"}, "pause-client.duration=2ttl")
		c.Seed, c.Duration = 42, 5*time.Second
		runtest.RunFaults(t, &c)
		runs = append(runs, steps(c.Out))
	}
	n := min(len(runs[0]), len(runs[1]))
	if n < 2 {
		t.Fatalf("only %d steps in common: %+v", n, runs)
	}
	if a, b := decisions(runs[0][:n]), decisions(runs[1][:n]); !reflect.DeepEqual(a, b) {
		t.Errorf("the same seed gave other decisions:\n%+v\n%+v", a, b)
	}
	clients := map[int]bool{}
	for _, s := range runs[0] {
		clients[s.Client] = true
	}
	if len(clients) < 2 && len(runs[0]) > 3 {
		t.Errorf("every step aimed at one client: %+v", runs[0])
	}

	// A replay takes those steps, and no more.
	c := runtest.FaultConfig(t, "token-lua", []string{"pause-client"}, "pause-client.duration=2ttl")
	c.Seed = 42
	runtest.RunFaults(t, &c)
	replay, err := settings.LoadReplay(c.Out)
	if err != nil {
		t.Fatal(err)
	}
	replay.Out = t.TempDir()
	replay.Seed = 43 // the recorded steps win over the seed's
	res, _ := runtest.RunFaults(t, &replay)
	again := steps(replay.Out)
	want := decisions(steps(c.Out))
	if got := decisions(again); len(got) == 0 || !reflect.DeepEqual(got, want[:len(got)]) {
		t.Errorf("the replay took steps %+v, want a prefix of %+v", got, want)
	}
	runtest.Landed(t, res, history.LeaseLost)
}
