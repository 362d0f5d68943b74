package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/runner"
)

const withSteps = `shows: a recorded schedule
expect:
  verdict: violation
lock:
  name: redlock
workload:
  clients: 2
  keys: 2
  ttl: 1s
faults:
  nemeses:
    - name: partition
      options:
        shape: split
        schedule: at=200ms
      steps:
        - {gap: 200ms, client: 1, key: "lock:1", node: 3, seed: 18446744073709551615}
    - name: clock-jump
      steps:
        - gap: 2ttl
          client: 0
          seed: 7
        - {gap: 1500ms, client: 1, key: "lock:0", node: 2, seed: 9}
duration: 5s
`

// TestScenarioStepsSetTheReplay: a nemesis's steps become the run's
// schedule (settings.Run.Replay), numbered from 1, gaps read as spans,
// a missing key the first.
func TestScenarioStepsSetTheReplay(t *testing.T) {
	s, err := Parse("x.yaml", []byte(withSteps))
	if err != nil {
		t.Fatal(err)
	}
	r := s.Config.Replay
	if r == nil || len(r.Nemeses) != 2 {
		t.Fatalf("Replay = %+v, want the steps of two nemeses", r)
	}
	part, _ := r.Steps("partition")
	jump, _ := r.Steps("clock-jump")
	want := nemesis.Step{Nemesis: "partition", N: 1, Gap: 200 * time.Millisecond, Client: 1, Key: "lock:1", Node: 3, Seed: 18446744073709551615}
	if len(part) != 1 || part[0] != want {
		t.Errorf("partition's steps = %+v, want [%+v]", part, want)
	}
	if len(jump) != 2 || jump[0].Gap != 2*time.Second || jump[0].Key != "lock:0" || jump[0].N != 1 || jump[1].N != 2 || jump[1].Node != 2 {
		t.Errorf("clock-jump's steps = %+v", jump)
	}
	if err := runner.Validate(withOut(s.Config)); err != nil {
		t.Errorf("the run does not validate: %v", err)
	}
	// Without steps, no replay: the nemeses draw their own.
	s, err = Parse("y.yaml", []byte(strings.ReplaceAll(strings.ReplaceAll(withSteps, "      steps:\n        - {gap: 200ms, client: 1, key: \"lock:1\", node: 3, seed: 18446744073709551615}\n", ""), "      steps:\n        - gap: 2ttl\n          client: 0\n          seed: 7\n        - {gap: 1500ms, client: 1, key: \"lock:0\", node: 2, seed: 9}\n", "")))
	if err != nil || s.Config.Replay != nil {
		t.Errorf("no steps: Replay %+v, err %v", s.Config.Replay, err)
	}
}

func TestScenarioStepsErrors(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{"client: 1, key", "client: 2, key", `x.yaml:17: faults.nemeses[0].steps[0].client: 2: the run has clients 0 to 1`},
		{`key: "lock:1"`, `key: "lock:2"`, `x.yaml:17: faults.nemeses[0].steps[0].key: "lock:2": the run's keys are lock:0 to lock:1`},
		{"node: 3", "node: -1", `faults.nemeses[0].steps[0].node: -1: want a lock node's index`},
		{"gap: 200ms", "gap: 200", `faults.nemeses[0].steps[0].gap: "200": want a duration`},
		{"seed: 7", "seed: -7", `x.yaml:`},
		{"node: 3", "nod: 3", `faults.nemeses[0].steps[0].nod: unknown field; allowed here: gap, client, key, node, seed`},
		{"      steps:\n        - {gap: 200ms", "      stepz:\n        - {gap: 200ms", `faults.nemeses[0].stepz: unknown field; allowed here: name, options, steps`},
		{"      steps:\n        - {gap: 200ms, client: 1, key: \"lock:1\", node: 3, seed: 18446744073709551615}\n", "", `x.yaml:12: faults.nemeses[0]: steps: missing: another nemesis lists its steps`},
	} {
		src := strings.Replace(withSteps, tc.from, tc.to, 1)
		if src == withSteps {
			t.Fatalf("%q is not in the scenario", tc.from)
		}
		_, err := Parse("x.yaml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s → %s: error %v, want %q", tc.from, tc.to, err, tc.want)
		}
	}
}

// TestScenarioRenderReadsBack: a run rendered as a scenario file loads
// into the same run, its schedule as steps.
func TestScenarioRenderReadsBack(t *testing.T) {
	s, err := Parse("x.yaml", []byte(withSteps))
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.Config
	cfg.Seed, cfg.Hold, cfg.LockOptions = 42, 35*time.Millisecond, map[string]string{"drift-factor": "0.05"}
	cfg.NemesisOptions["clock-jump"] = map[string]string{"node": "2", "by": "1.5ttl"}
	b, err := Render(Written{Shows: "two clients: both held\nlock:0", Source: `run "x"`, Expect: checker.Violation, Comment: "the smallest\nrun", Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse("min.yaml", b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	got := back.Config
	if got.Seed != 42 || got.Hold != cfg.Hold || got.Clients != 2 || got.Keys != 2 || got.TTL != time.Second || got.Duration != 5*time.Second ||
		got.LockOptions["drift-factor"] != "0.05" || got.NemesisOptions["clock-jump"]["by"] != "1.5ttl" || got.NemesisOptions["partition"]["schedule"] != "at=200ms" {
		t.Errorf("read back %+v\n%s", got, b)
	}
	for _, n := range []string{"partition", "clock-jump"} {
		a, _ := cfg.Replay.Steps(n)
		z, _ := got.Replay.Steps(n)
		if len(a) != len(z) {
			t.Fatalf("%s: %d steps read back, want %d\n%s", n, len(z), len(a), b)
		}
		for i := range a {
			if a[i] != z[i] {
				t.Errorf("%s step %d: %+v, want %+v", n, i, z[i], a[i])
			}
		}
	}
	if back.Shows != "two clients: both held lock:0" || back.Source != `run "x"` || back.Expect.Verdict != checker.Violation || !strings.HasPrefix(string(b), "# the smallest\n# run\n") {
		t.Errorf("shows %q, source %q, expect %v\n%s", back.Shows, back.Source, back.Expect, b)
	}
}
