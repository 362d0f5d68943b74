// Package scenarios holds the catalogue of known lock failure modes: each
// one a run configuration, the verdict it must reach, and where the failure
// mode comes from. `lockchaos chaos` runs them and fails when a verdict
// differs from its expectation, in either direction: a lock expected safe
// that broke, or a known failure the harness no longer reproduces.
package scenarios

import (
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/runner"
)

// Scenario is one catalogued run.
type Scenario struct {
	Name   string
	Shows  string // what this shows, in one line
	Source string // where the failure mode is described
	Config runner.Config
	Expect checker.Verdict
	// ExpectDeadlock: the run must also report a deadlocked key (liveness).
	ExpectDeadlock bool
	// Quick scenarios run under `chaos --quick`.
	Quick bool
}

const ms = time.Millisecond

func base(lock string, nemeses ...string) runner.Config {
	return runner.Config{
		Lock: lock, Nemeses: nemeses, Clients: 4, Keys: 1,
		TTL: 300 * ms, Hold: 60 * ms, Duration: 6 * time.Second, Think: 10 * ms, Seed: 1,
	}
}

// Catalogue returns the built-in scenarios.
func Catalogue() []Scenario {
	tokenSafe := base("token-lua")
	tokenSafe.Hold, tokenSafe.Keys = 20*ms, 2

	outlives := base("token-lua")
	outlives.Hold = 2 * outlives.TTL

	latencySafe := base("token-lua", "latency")
	latencySafe.Hold = 20 * ms

	deadlock := base("setnx-expire", "kill-client")
	deadlock.LockOptions = map[string]string{"gap": "200ms"}
	deadlock.NemesisOptions = map[string]map[string]string{"kill-client": {"in-flight": "100ms"}}

	return []Scenario{
		{
			Name: "token-lua-no-fault", Shows: "a token lock with holds well under the TTL and no fault is safe",
			Source: "baseline", Config: tokenSafe, Expect: checker.Safe, Quick: true,
		},
		{
			Name: "pause-past-ttl-set-nx-px", Shows: "a client paused past its TTL keeps working while another holds the lock; its DEL then frees the next holder's lock",
			Source: "seeds: SET NX PX with plain DEL; Kleppmann, How to do distributed locking (2016)", Config: base("set-nx-px", "pause-client"),
			Expect: checker.Violation, Quick: true,
		},
		{
			Name: "pause-past-ttl-token-lua", Shows: "the token protects the release, not the hold: a paused client still writes after its lease expired",
			Source: "Kleppmann, How to do distributed locking (2016)", Config: base("token-lua", "pause-client"),
			Expect: checker.Violation, Quick: true,
		},
		{
			Name: "hold-outlives-ttl", Shows: "with no fault at all, a critical section longer than the TTL overlaps the next holder",
			Source: "seeds: the business outlives the timeout", Config: outlives, Expect: checker.Violation, Quick: true,
		},
		{
			Name: "latency-token-lua", Shows: "network delay alone, with holds far below the TTL, does not break a token lock",
			Source: "baseline", Config: latencySafe, Expect: checker.Safe,
		},
		{
			Name: "setnx-expire-crash-deadlock", Shows: "a client killed between SETNX and EXPIRE leaves a lock that never expires: nobody can acquire it again",
			Source: "seeds: the non-atomic SETNX + EXPIRE lock", Config: deadlock, Expect: checker.Safe, ExpectDeadlock: true,
		},
	}
}
