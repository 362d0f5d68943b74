package nemesis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/workload"
)

// Every nemesis keeps the keys and defaults its options always had, in the
// order `lockchaos list` shows them, its schedule last, and says what its
// faults do. (Not beside the parallel tests: one of them registers a
// nemesis of its own while it runs, RegisterForTest.)
func TestOptionsKeepTheirKeysAndDefaults(t *testing.T) {
	want := map[string]struct {
		action history.Action
		opts   string
	}{
		"bandwidth":         {history.ActionNetwork, "rate=1 stream=both duration=5ttl links=all when=hold"},
		"clock-drift":       {history.ActionClock, "node=holder rate=8 when=hold votes=any duration=5ttl"},
		"clock-jump":        {history.ActionClock, "node=holder by=1.5ttl direction=forward when=hold votes=any duration=3ttl"},
		"clock-jump-ttl":    {history.ActionClock, "node=holder by=1.5ttl when=hold votes=any"},
		"crash-restart":     {history.ActionCrash, "node=holder delay=0s when=hold votes=any"},
		"failover":          {history.ActionFailover, "node=holder votes=any cut=all duration=3ttl"},
		"failover-sentinel": {history.ActionFailover, "node=holder votes=any cut=all duration=3ttl timeout=20s manual=false"},
		"jitter":            {history.ActionNetwork, "jitter=0.2ttl stream=both duration=5ttl links=all when=hold"},
		"kill-client":       {history.ActionKill, "in-flight=0.1ttl reply-delay=0.2ttl"},
		"latency":           {history.ActionNetwork, "delay=0.25ttl jitter=0.1ttl stream=both duration=5ttl links=all when=hold"},
		"partition":         {history.ActionNetwork, "shape=node node=holder client=holder mode=drop duration=5ttl"},
		"pause-client":      {history.ActionPause, "duration=3ttl phase=hold reply-delay=0.2ttl"},
		"pause-node":        {history.ActionPause, "node=holder duration=2ttl"},
		"reset-peer":        {history.ActionNetwork, "after=0s stream=upstream duration=3ttl span=duration hold=1.5ttl rest=1ttl links=all when=hold"},
		"slow-hold":         {history.ActionSlow, "by=2ttl"},
		"slow-reply":        {history.ActionNetwork, "delay=0.85ttl duration=5ttl links=client"},
		"ack-loss":          {history.ActionNetwork, "duration=3ttl links=client"},
		"starve-client":     {history.ActionPause, "off=0.5ttl on=10ms duration=3ttl"},
		"cancel-client":     {history.ActionCancel, "op=release after=0s"},
		"client-clock":      {history.ActionClock, "by=5ttl direction=back delay=1ttl"},
	}
	seen := map[string]bool{}
	for _, s := range nemesis.All() {
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

// The tests of each nemesis's options (in its own file) share what
// follows. Options are decoded once, durations against the TTL, into plain
// fields: each file checks its nemesis's fields after nemesis.MustBuild.

// badOption is an option value the nemesis name must refuse, with what the
// error must say.
type badOption struct {
	name, key, value, want string
}

// refused checks that a bad value is refused when the nemesis is built, by
// an error that names the option and says what it wants.
func refused(t *testing.T, cases []badOption) {
	t.Helper()
	for _, tc := range cases {
		s, err := nemesis.Lookup(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Build(map[string]string{tc.key: tc.value}, 100*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s.%s=%s: error %v, want one that says %q", tc.name, tc.key, tc.value, err, tc.want)
		}
	}
}

// The run shapes the tests of Applies check nemeses against: three lock
// nodes, four clients, on the local backend (topoRun); with a replica for
// each node (topoReplicated), and sentinels besides (topoSentinels); and
// on a backend that cannot load the clock shim (topoRemote).
var (
	topoRun        = nemesis.Topology{Store: "redis", LockNodes: 3, Quorum: 2, Workload: workload.Workload{Clients: 4}, Topology: cluster.Topology{Backend: "local"}}
	topoReplicated = nemesis.Topology{Store: "redis", LockNodes: 3, Quorum: 2, Workload: workload.Workload{Clients: 4}, Topology: cluster.Topology{Backend: "local", Replicas: 1}}
	topoSentinels  = nemesis.Topology{Store: "redis", LockNodes: 3, Quorum: 2, Workload: workload.Workload{Clients: 4}, Topology: cluster.Topology{Backend: "local", Replicas: 1, Sentinels: 3}}
	topoRemote     = nemesis.Topology{Store: "redis", LockNodes: 3, Quorum: 2, Workload: workload.Workload{Clients: 4}, Topology: cluster.Topology{Backend: "elsewhere"}}
)

// appliesCase is a nemesis built with options given, and whether it
// applies to a run of shape t: want is "" when it does, else what the
// error must say.
type appliesCase struct {
	name  string
	given map[string]string
	t     nemesis.Topology
	want  string // "" applies
}

// applies checks that Applies says whether a nemesis fits a run's shape,
// with its options.
func applies(t *testing.T, cases []appliesCase) {
	t.Helper()
	for _, tc := range cases {
		n := nemesis.MustBuild(t, tc.name, tc.given)
		a, ok := n.(nemesis.Applier)
		if !ok {
			t.Errorf("%s is no Applier", tc.name)
			continue
		}
		err := a.Applies(tc.t)
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v on %+v: %v, want %q", tc.name, tc.given, tc.t, err, tc.want)
		}
	}
}

// appliesToEveryRun checks that the nemesis name is no Applier.
func appliesToEveryRun(t *testing.T, name string) {
	t.Helper()
	if _, ok := nemesis.MustBuild(t, name, nil).(nemesis.Applier); ok {
		t.Errorf("%s applies to every run, yet is an Applier", name)
	}
}

// A store whose ensemble neither elects a leader nor promotes a standby
// (a store in a folder of its own: one server per lock node) has no
// failover to cause: the failover nemesis does not apply, before anything
// runs, instead of failing the run.
func TestFailoverDoesNotApplyToAStoreThatDoesNotFailOver(t *testing.T) {
	t.Parallel()
	cluster.RegisterStore(cluster.Store{Name: "single-servers", Start: func(context.Context, cluster.Backend, cluster.EnsembleSpec) (cluster.Ensemble, error) {
		return nil, errors.New("never started")
	}})
	single := nemesis.Topology{Store: "single-servers", LockNodes: 1, Workload: workload.Workload{Clients: 4}, Topology: cluster.Topology{Backend: "local"}}
	elected := nemesis.Topology{Store: "etcd", LockNodes: 3, Workload: workload.Workload{Clients: 4}, Topology: cluster.Topology{Backend: "local"}}
	applies(t, []appliesCase{
		{"failover", nil, single, "single-servers's does neither"},
		{"failover", nil, elected, ""},
	})
}
