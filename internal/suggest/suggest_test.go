package suggest

import (
	"reflect"
	"testing"
)

func TestClosest(t *testing.T) {
	locks := []string{"redislock", "redlock", "redsync", "token-lua", "token-lua-wait", "zk-lock", "zk-lock-fenced", "set-nx-px", "setnx-expire"}
	nemeses := []string{"pause-client", "pause-node", "partition", "latency", "jitter", "crash-restart", "kill-client"}
	flags := []string{"lock", "nemesis", "ttl", "duration", "clients", "seed", "out", "scenario"}
	for _, c := range []struct {
		name  string
		known []string
		want  []string
	}{
		{"redis-lock", locks, []string{"redislock", "redlock"}},
		{"RedLock", locks, []string{"redlock", "redislock"}},
		{"tokenlua", locks, []string{"token-lua"}},
		{"wait", locks, []string{"token-lua-wait"}},
		{"lokc", flags, []string{"lock"}},
		{"nemeses", flags, []string{"nemesis"}},
		{"pause", nemeses, []string{"pause-node", "pause-client"}},
		{"crash", nemeses, []string{"crash-restart"}},
		{"zookeeper", locks, nil},
		{"x", flags, nil},
		{"", flags, nil},
		{"lock", flags, nil}, // known: nothing to suggest
		{"durration", []string{"duration", "ratio", "span"}, []string{"duration"}},
	} {
		if got := Closest(c.name, c.known); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Closest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestHint(t *testing.T) {
	known := []string{"pause-client", "pause-node", "partition"}
	if got, want := Hint("pause", known, "%q"), ` (did you mean "pause-node" or "pause-client"?)`; got != want {
		t.Errorf("Hint = %s, want %s", got, want)
	}
	if got, want := Hint("partiton", known, "--%s"), " (did you mean --partition?)"; got != want {
		t.Errorf("Hint = %s, want %s", got, want)
	}
	if got := Hint("zzz", known, "%q"); got != "" {
		t.Errorf("Hint of nothing close = %q", got)
	}
}
