package nemesis_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/runner/runtest"
)

func TestKillClientOptionsAreDecodedIntoFields(t *testing.T) {
	t.Parallel()
	if k := nemesis.MustBuild(t, "kill-client", map[string]string{"reply-delay": "0"}).(*nemesis.KillClient); k.InFlight != 10*time.Millisecond || k.ReplyDelay != 0 {
		t.Errorf("kill-client: %+v", k)
	}
}

func TestBadKillClientOptionsAreRefused(t *testing.T) {
	t.Parallel()
	refused(t, []badOption{
		{"kill-client", "nosuch", "1", "its options are: in-flight, reply-delay (and schedule)"},
	})
}

func TestKillClientAppliesToEveryRun(t *testing.T) { appliesToEveryRun(t, "kill-client") }

// A client killed between setnx-expire's SETNX and its EXPIRE leaves the
// key without an expiry: nobody acquires it again.
func TestSetnxExpireCrashBetweenStepsDeadlocksTheKey(t *testing.T) {
	t.Parallel()
	c := runtest.Config(t, "setnx-expire", "kill-client")
	// Two clients that think for up to a TTL leave the lock free often:
	// the killed client's SETNX must find it free to leave a key behind.
	c.Clients, c.Think = 2, c.TTL
	c.LockOptions = map[string]string{"gap": "200ms"}
	c.NemesisOptions = map[string]map[string]string{"kill-client": {"in-flight": "100ms"}}
	res := runtest.RunChecked(t, c)
	if !reflect.DeepEqual(res.Liveness.DeadlockedKeys, []string{"lock:0"}) {
		t.Fatalf("deadlocked keys %v, want [lock:0]: %s", res.Liveness.DeadlockedKeys, res.Summary)
	}
	// The kill is a liveness failure, not a safety one: the killed client
	// never entered its critical section.
	if res.Verdict != checker.Safe {
		t.Errorf("verdict %s, want safe: %s %v", res.Verdict, res.Summary, res.Reasons)
	}
	if res.Acquire.Unknown == 0 || len(res.Faults) == 0 {
		t.Errorf("want the killed client's acquire unknown and the kill recorded: %+v, %d faults", res.Acquire, len(res.Faults))
	}
}
