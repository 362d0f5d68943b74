package hazelcast

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
)

// startEnsemble starts three real members on the local backend, or skips
// when Java or Hazelcast's jar is missing and Maven cannot fetch it.
func startEnsemble(t *testing.T) *ensemble {
	t.Helper()
	if _, err := Jar(); err != nil {
		t.Skip(err)
	}
	local, err := cluster.NewLocal()
	if err != nil {
		t.Fatal(err)
	}
	e, err := start(context.Background(), local, cluster.EnsembleSpec{Members: 3, Lease: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, m := range e.Members() {
			if t.Failed() {
				b, _ := os.ReadFile(m.Log())
				t.Logf("%s's log:\n%s", m.Name(), b[max(0, len(b)-3000):])
			}
			m.(*cluster.Server).Stop()
		}
	})
	return e.(*ensemble)
}

// The CP Subsystem forms from three members started one after another;
// killing the leader of its groups makes another lead, twice over, and the
// killed member, restarted, comes back as a CP member in its old self's
// place (the store removes that and promotes the new one): without that,
// the group would stay two members, and the second failover would leave
// one of three — no quorum, no lock.
func TestTheLeaderFailsOverAndRejoinsTwice(t *testing.T) {
	e := startEnsemble(t)
	ctx := context.Background()
	for lease, want := range map[time.Duration]time.Duration{0: 2 * time.Second, time.Second: 2 * time.Second, 1500 * time.Millisecond: 2 * time.Second, 3 * time.Second: 3 * time.Second} {
		if got := SessionTTL(lease); got != want {
			t.Errorf("SessionTTL(%s) = %s, want %s (whole seconds, at least two heartbeats)", lease, got, want)
		}
	}
	local, _ := cluster.NewLocal()
	if _, err := start(ctx, local, cluster.EnsembleSpec{Members: 3, Lease: time.Second}); err == nil || !strings.Contains(err.Error(), "give --ttl 2s") {
		t.Errorf("a 1 s lease: %v; want it refused, naming --ttl 2s", err)
	}
	for round := 1; round <= 2; round++ {
		from, to, heal, err := e.FailOver(ctx)
		if err != nil {
			t.Fatalf("failover %d: %v", round, err)
		}
		if from == to || to < 0 {
			t.Fatalf("failover %d: from %d to %d", round, from, to)
		}
		if err := heal(ctx); err != nil {
			t.Fatalf("failover %d: restart %s: %v", round, e.Members()[from].Name(), err)
		}
		var local struct{ UUID string }
		if err := get(ctx, e.Members()[from].Addr(), "/hazelcast/rest/cp-subsystem/members/local", &local); err != nil {
			t.Fatalf("failover %d: the restarted %s is no CP member: %v", round, e.Members()[from].Name(), err)
		}
		var cp []struct{ UUID, Address string }
		if err := get(ctx, e.Members()[to].Addr(), "/hazelcast/rest/cp-subsystem/members", &cp); err != nil {
			t.Fatal(err)
		}
		if len(cp) != 3 {
			t.Fatalf("failover %d: %d CP members after the heal, want 3: %v", round, len(cp), cp)
		}
	}
	// A session nobody opened holds nothing; a token that names none is an error.
	if held, err := holdsLease(ctx, e.Members()[0].Addr(), "lock:0", "17/987654"); err != nil || held {
		t.Errorf("holdsLease of a session nobody opened = %v, %v; want false, nil", held, err)
	}
	if _, err := holdsLease(ctx, e.Members()[0].Addr(), "lock:0", "17"); err == nil {
		t.Error("holdsLease of a token without a session: no error")
	}
}

// One Hazelcast version: the store's, the adapter's pom and manifest, and
// the image's.
func TestOneVersionOfHazelcast(t *testing.T) {
	for file, re := range map[string]string{
		"../../adapters/java/hazelcast-fenced-lock/pom.xml":   `<hazelcast.version>([^<]+)</hazelcast.version>`,
		"../../adapters/java/hazelcast-fenced-lock/lock.yaml": `(?m)^version: "([^"]+)"`,
		"image.sh": `(?m)^version=(\S+)`,
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(re).FindSubmatch(b)
		if m == nil || string(m[1]) != Version {
			t.Errorf("%s: version %q, want the store's %s", file, m, Version)
		}
	}
}

// Maven keeps its repository under Java's user.home, the password
// database's home, whatever HOME says (a CI job's or a test's HOME may be
// empty): the jar is found there, or fetched there.
func TestJarFoundWhenHomeIsElsewhere(t *testing.T) {
	want, err := Jar()
	if err != nil {
		t.Skip(err)
	}
	t.Setenv("HOME", t.TempDir())
	got, err := Jar()
	if err != nil || got != want {
		t.Errorf("with HOME elsewhere, Jar() = %q, %v; want %q", got, err, want)
	}
}
