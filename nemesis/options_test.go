package nemesis

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/history"
)

// Every nemesis keeps the keys and defaults its options always had, in the
// order `lockchaos list` shows them, its schedule last, and says what its
// faults do.
func TestOptionsKeepTheirKeysAndDefaults(t *testing.T) {
	want := map[string]struct {
		action history.Action
		opts   string
	}{
		"bandwidth":         {history.ActionNetwork, "rate=1 stream=both duration=5ttl links=all"},
		"clock-drift":       {history.ActionClock, "node=holder rate=8 when=hold votes=any duration=5ttl"},
		"clock-jump":        {history.ActionClock, "node=holder by=1.5ttl direction=forward when=hold votes=any duration=3ttl"},
		"clock-jump-ttl":    {history.ActionClock, "node=holder by=1.5ttl when=hold votes=any"},
		"crash-restart":     {history.ActionCrash, "node=holder delay=0s when=hold votes=any"},
		"failover":          {history.ActionFailover, "node=holder votes=any cut=all duration=3ttl"},
		"failover-sentinel": {history.ActionFailover, "node=holder votes=any cut=all duration=3ttl timeout=20s"},
		"jitter":            {history.ActionNetwork, "jitter=0.2ttl stream=both duration=5ttl links=all"},
		"kill-client":       {history.ActionKill, "in-flight=0.1ttl reply-delay=0.2ttl"},
		"latency":           {history.ActionNetwork, "delay=0.25ttl jitter=0.1ttl stream=both duration=5ttl links=all"},
		"partition":         {history.ActionNetwork, "shape=node node=holder client=holder mode=drop duration=5ttl"},
		"pause-client":      {history.ActionPause, "duration=3ttl phase=hold reply-delay=0.2ttl"},
		"pause-node":        {history.ActionPause, "node=holder duration=2ttl"},
		"reset-peer":        {history.ActionNetwork, "after=0s stream=upstream duration=3ttl links=all"},
		"slow-hold":         {history.ActionSlow, "by=2ttl"},
		"slow-reply":        {history.ActionNetwork, "delay=0.85ttl duration=5ttl links=client"},
	}
	seen := map[string]bool{}
	for _, s := range All() {
		seen[s.Name] = true
		w, ok := want[s.Name]
		if !ok {
			t.Errorf("nemesis %s is not in this test", s.Name)
			continue
		}
		var got []string
		for _, o := range s.OptionSpecs() {
			got = append(got, o.Key+"="+o.Default)
			if o.Help == "" {
				t.Errorf("%s.%s has no help", s.Name, o.Key)
			}
		}
		if g := strings.Join(got, " "); g != w.opts+" schedule=every" {
			t.Errorf("%s options:\n got %s\nwant %s schedule=every", s.Name, g, w.opts)
		}
		if s.Action != w.action {
			t.Errorf("%s: action %q, want %q", s.Name, s.Action, w.action)
		}
		if _, err := s.Build(nil, 100*time.Millisecond); err != nil {
			t.Errorf("%s does not build from its defaults: %v", s.Name, err)
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("nemesis %s is not registered", name)
		}
	}
}

func build(t *testing.T, name string, given map[string]string) Nemesis {
	t.Helper()
	s, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Build(given, 100*time.Millisecond)
	if err != nil {
		t.Fatalf("%s %v: %v", name, given, err)
	}
	return b.Nemesis
}

// Options are decoded once, durations against the TTL, into plain fields.
func TestOptionsAreDecodedIntoFields(t *testing.T) {
	if l := build(t, "latency", nil).(*Latency); l.Delay != 25*time.Millisecond || l.Jitter != 10*time.Millisecond ||
		l.Duration != 500*time.Millisecond || l.Stream != "both" || l.Links != (linkChoice{kind: "all", n: -1}) {
		t.Errorf("latency defaults: %+v", l)
	}
	if s := build(t, "slow-reply", nil).(*SlowReply); s.Links != (linkChoice{kind: "client", n: -1}) {
		t.Errorf("slow-reply links default: %+v, want a random client's", s.Links)
	}
	if s := build(t, "slow-reply", map[string]string{"links": "node=2"}).(*SlowReply); s.Links != (linkChoice{kind: "node", n: 2}) {
		t.Errorf("slow-reply links=node=2: %+v", s.Links)
	}
	if p := build(t, "partition", map[string]string{"client": "random", "node": "1", "mode": "refuse"}).(*Partition); p.Client != holderClient || p.Node != 1 || p.Mode != "refuse" {
		t.Errorf("partition: %+v", p)
	}
	if p := build(t, "partition", map[string]string{"client": "3", "node": "random"}).(*Partition); p.Client != 3 || p.Node != randomNode {
		t.Errorf("partition client=3: %+v", p)
	}
	if c := build(t, "clock-drift", map[string]string{"rate": "0.5", "votes": "bare", "when": "any"}).(*ClockDrift); c.Rate != 0.5 || c.rate() != "0.5" ||
		c.Node != holderNode || c.When != "any" || c.Votes != "bare" || c.Duration != 500*time.Millisecond {
		t.Errorf("clock-drift: %+v", c)
	}
	if f := build(t, "failover-sentinel", map[string]string{"cut": "none"}).(*FailoverSentinel); f.Timeout != 20*time.Second || f.Cut != "none" || f.Votes != "any" {
		t.Errorf("failover-sentinel: %+v", f)
	}
	if k := build(t, "kill-client", map[string]string{"reply-delay": "0"}).(*KillClient); k.InFlight != 10*time.Millisecond || k.ReplyDelay != 0 {
		t.Errorf("kill-client: %+v", k)
	}
}

// A bad value is refused when the nemesis is built, by an error that names
// the option and says what it wants.
func TestBadOptionsAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name, key, value, want string
	}{
		{"latency", "stream", "sideways", `option latency.stream="sideways": want upstream, downstream or both`},
		{"latency", "links", "client=x", "want all, holder, client, node, client=N or node=N"},
		{"latency", "delay", "300", "a number needs a unit"},
		{"bandwidth", "rate", "0", "bandwidth: rate=0: want a whole number of KB/s, at least 1"},
		{"bandwidth", "rate", "fast", "option bandwidth.rate"},
		{"clock-drift", "rate", "1001", "clock-drift: rate=1001: want a number from 0 to 1000 (1 is real speed)"},
		{"clock-drift", "rate", "NaN", "option clock-drift.rate"},
		{"clock-jump", "direction", "up", "want forward or backward"},
		{"crash-restart", "when", "never", "want hold or any"},
		{"crash-restart", "votes", "most", "want any, bare or spare"},
		{"failover", "cut", "some", "want all, promoted or none"},
		{"failover", "votes", "most", "want any, bare or spare"},
		{"failover-sentinel", "cut", "promoted", "want all or none"},
		{"partition", "shape", "ring", "want node, client or split"},
		{"partition", "client", "-1", "want holder or a client number"},
		{"partition", "mode", "slow", "want drop or refuse"},
		{"pause-client", "phase", "later", "want hold or acquire"},
		{"pause-node", "node", "first", "want holder, random or a lock node number"},
		{"slow-hold", "by", "1e300ttl", "too long"},
		{"kill-client", "nosuch", "1", "its options are: in-flight, reply-delay (and schedule)"},
	} {
		s, err := Lookup(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Build(map[string]string{tc.key: tc.value}, 100*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s.%s=%s: error %v, want one that says %q", tc.name, tc.key, tc.value, err, tc.want)
		}
	}
}

// Applies says whether a nemesis fits a run's shape, with its options.
func TestAppliesChecksTheTopology(t *testing.T) {
	run := Topology{Backend: "local", LockNodes: 3, Clients: 4, Quorum: 2}
	replicated := run
	replicated.Replicas = 1
	sentinels := replicated
	sentinels.Sentinels = 3
	remote := run
	remote.Backend = "elsewhere"
	for _, tc := range []struct {
		name  string
		given map[string]string
		t     Topology
		want  string // "" applies
	}{
		{"pause-node", nil, run, ""},
		{"pause-node", map[string]string{"node": "2"}, run, ""},
		{"pause-node", map[string]string{"node": "3"}, run, "node=3, but the run has lock nodes 0 to 2"},
		{"crash-restart", map[string]string{"node": "3"}, run, "node=3"},
		{"clock-jump-ttl", map[string]string{"node": "3"}, remote, "node=3"},
		{"clock-jump-ttl", nil, remote, ""},
		{"clock-jump", nil, run, ""},
		{"clock-jump", nil, remote, "clock-jump needs the clock shim"},
		{"clock-jump", map[string]string{"node": "5"}, run, "node=5"},
		{"clock-drift", nil, remote, "clock-drift needs the clock shim"},
		{"clock-drift", map[string]string{"node": "5"}, run, "node=5"},
		{"latency", map[string]string{"links": "node=3"}, run, "links=node=3"},
		{"reset-peer", map[string]string{"links": "client=4"}, run, "links=client=4"},
		{"slow-reply", map[string]string{"links": "client=4"}, run, "links=client=4"},
		{"slow-reply", map[string]string{"links": "client=3"}, run, ""},
		{"partition", map[string]string{"shape": "split"}, Topology{LockNodes: 1, Clients: 4}, "needs at least 3 lock nodes"},
		{"partition", map[string]string{"shape": "split", "node": "7"}, run, ""},
		{"partition", map[string]string{"shape": "client", "client": "4"}, run, "client=4, but the run has clients 0 to 3"},
		{"partition", map[string]string{"shape": "client", "node": "7"}, run, ""},
		{"partition", map[string]string{"node": "7"}, run, "node=7"},
		{"failover", nil, run, "add --replicas"},
		{"failover", nil, sentinels, "use failover-sentinel"},
		{"failover", nil, replicated, ""},
		{"failover", map[string]string{"node": "3"}, replicated, "node=3"},
		{"failover-sentinel", nil, replicated, "needs replicas and sentinels"},
		{"failover-sentinel", nil, sentinels, ""},
		{"failover-sentinel", map[string]string{"node": "3"}, sentinels, "node=3"},
	} {
		n := build(t, tc.name, tc.given)
		a, ok := n.(Applier)
		if !ok {
			t.Errorf("%s is no Applier", tc.name)
			continue
		}
		err := a.Applies(tc.t)
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v on %+v: %v, want %q", tc.name, tc.given, tc.t, err, tc.want)
		}
	}
	for _, name := range []string{"kill-client", "pause-client", "slow-hold"} {
		if _, ok := build(t, name, nil).(Applier); ok {
			t.Errorf("%s applies to every run, yet is an Applier", name)
		}
	}
}

// coreEnv is an Env that embeds another: it hides the capabilities of the
// value inside, and does not unwrap.
type coreEnv struct{ Env }

// A nemesis finds the run's capabilities through the step's Env, which
// wraps the run's; one the environment does not give is an error that says
// so, before the nemesis did anything.
func TestCapabilitiesAreFoundThroughTheStepEnv(t *testing.T) {
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
		f, err := build(t, name, nil).Inject(ctx, step, Step{Client: 0, Key: "lock:0"})
		if f != nil || err == nil || !strings.Contains(err.Error(), "which this run's environment does not give") {
			t.Errorf("%s on an env without its capability: %v, %v", name, f, err)
		}
	}
	if f, err := build(t, "slow-hold", nil).Inject(ctx, coreEnv{env}, Step{Client: 0, Key: "lock:0"}); f != nil || err == nil || !strings.Contains(err.Error(), "control of the client processes") {
		t.Errorf("slow-hold on a core Env: %v, %v", f, err)
	}
}
