package nemesis

import (
	"context"
	"strings"
	"testing"
	"time"
)

// coreEnv is an Env that embeds another: it hides the capabilities of the
// value inside, and does not unwrap.
type coreEnv struct{ Env }

// A nemesis finds the run's capabilities through the step's Env, which
// wraps the run's; one the environment does not give is an error that says
// so, before the nemesis did anything.
func TestCapabilitiesAreFoundThroughTheStepEnv(t *testing.T) {
	t.Parallel()
	env := newFakeEnv()
	step := &stepEnv{Env: env}
	if p, err := processesOf(step); err != nil || p != Processes(env) {
		t.Errorf("processes through the step's env: %v, %v", p, err)
	}
	if _, err := processesOf(coreEnv{env}); err == nil || !strings.Contains(err.Error(), "control of the client processes, which this run's environment does not give") {
		t.Errorf("a core Env gave processes: %v", err)
	}
	for _, get := range []func(Env) error{
		func(e Env) error { _, err := linksOf(e); return err },
		func(e Env) error { _, err := replicationOf(e); return err },
		func(e Env) error { _, err := clocksOf(e); return err },
	} {
		if err := get(step); err == nil || !strings.Contains(err.Error(), "which this run's environment does not give") {
			t.Errorf("the fake env gave a capability it lacks: %v", err)
		}
	}
	if g := groupOf(step, 0); g != nil {
		t.Errorf("an env without replication has group %v", g)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, name := range []string{"latency", "partition", "failover", "clock-jump"} {
		f, err := MustBuild(t, name, nil).Inject(ctx, step, Step{Client: 0, Key: "lock:0"})
		if f != nil || err == nil || !strings.Contains(err.Error(), "which this run's environment does not give") {
			t.Errorf("%s on an env without its capability: %v, %v", name, f, err)
		}
	}
	if f, err := MustBuild(t, "slow-hold", nil).Inject(ctx, coreEnv{env}, Step{Client: 0, Key: "lock:0"}); f != nil || err == nil || !strings.Contains(err.Error(), "control of the client processes") {
		t.Errorf("slow-hold on a core Env: %v, %v", f, err)
	}
}
