package settings

import (
	"errors"
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/workload"

	"gopkg.in/yaml.v3"
)

func valid() Run {
	return Run{Lock: "token-lua", Out: "out", Duration: DefaultDuration, Workload: workload.Workload{Clients: DefaultClients, Keys: DefaultKeys, TTL: DefaultTTL, Hold: DefaultHold}}
}

// A bad value is named as a flag and as a scenario file's path, and is a
// usage error (the user fixes it).
func TestABadSettingIsNamedAsAFlagAndAsAPath(t *testing.T) {
	r := valid()
	r.Clients = 300
	err := CheckSettings(r)
	var se *SettingError
	var ue UsageError
	if !errors.As(err, &se) || !errors.As(err, &ue) {
		t.Fatalf("%v: want a usage error wrapping a SettingError", err)
	}
	if err.Error() != "--clients 300: want 1 to 256" || se.Path() != "workload.clients" {
		t.Errorf("%q at %q; want --clients 300: want 1 to 256 at workload.clients", err, se.Path())
	}
	r = valid()
	r.Sentinels = 3
	if err := CheckSettings(r); err == nil || !strings.Contains(err.Error(), "--sentinels 3 without replicas") {
		t.Errorf("sentinels without replicas: %v", err)
	}
}

// The defaults that follow from the TTL are filled in one place; "none"
// is no nemesis; a run needs a lock and a folder.
func TestDefaultsFollowTheTTL(t *testing.T) {
	r := valid()
	r.TTL = 2 * time.Second
	r.Nemeses = []string{"none"}
	got, err := r.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if got.OpTimeout != 2*time.Second || got.FaultInterval != 4*time.Second || got.Retry != 200*time.Millisecond ||
		got.Backend != "local" || got.Persistence != "none" || len(got.Nemeses) != 0 {
		t.Errorf("defaults %+v; want op timeout = TTL, fault interval = 2 TTL, retry = TTL/10, local, no persistence, no nemesis", got)
	}
	_, err = Run{Duration: time.Second, Workload: workload.Workload{Clients: 1, Keys: 1, TTL: time.Second}}.WithDefaults()
	if err == nil || !strings.Contains(err.Error(), "--lock is required") || !strings.Contains(err.Error(), "--out DIR is required") {
		t.Errorf("no lock, no folder: %v", err)
	}
}

// Redis's replicas, sentinels and persistence are refused for a lock of
// another store, by name.
func TestRedisSettingsAreRefusedForAnotherStore(t *testing.T) {
	spec, err := locks.Lookup("etcd-mutex")
	if err != nil {
		t.Fatal(err)
	}
	r := valid()
	r.Replicas, r.Persistence = 1, "always"
	err = r.CheckStore(spec)
	if err == nil || !strings.Contains(err.Error(), "--replicas 1") || !strings.Contains(err.Error(), "--persistence always") {
		t.Errorf("etcd-mutex with replicas and AOF: %v", err)
	}
	r = valid()
	if err := r.CheckStore(spec); err != nil {
		t.Errorf("etcd-mutex with Redis's settings left alone: %v", err)
	}
	// The pooler is PostgreSQL's: refused for etcd and Redis, kept for
	// pg-advisory; a pooler it does not know is an error of the setting.
	r.Pooler = "pgbouncer"
	if err := r.CheckStore(spec); err == nil || !strings.Contains(err.Error(), "--pooler pgbouncer: lock etcd-mutex keeps its state in etcd") {
		t.Errorf("etcd-mutex behind a pooler: %v", err)
	}
	pg, err := locks.Lookup("pg-advisory")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.CheckStore(pg); err != nil {
		t.Errorf("pg-advisory behind pgbouncer: %v", err)
	}
	// A server's release is the store's to build: refused for a store
	// whose servers are this machine's packages.
	r = valid()
	r.ServerVersion = "v2.9.20"
	if err := r.CheckStore(spec); err == nil || !strings.Contains(err.Error(), "--server-version v2.9.20: lock etcd-mutex keeps its state in etcd, whose servers are this machine's packages") {
		t.Errorf("etcd-mutex with a server version: %v", err)
	}
	r = valid()
	r.Lock, r.Pooler = "pg-advisory", "pgpool"
	if _, err := r.WithDefaults(); err == nil || !strings.Contains(err.Error(), `--pooler "pgpool": want pgbouncer`) {
		t.Errorf("pooler pgpool: %v", err)
	}
}

// A folder that holds no run cannot be replayed, and the error says what
// one holds.
func TestReplayNeedsARunFolder(t *testing.T) {
	_, err := LoadReplay(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "config.json and schedule.json") {
		t.Errorf("replay of an empty folder: %v", err)
	}
}

// The settings declare their flags: every setting with a flag tag but the
// lists and maps the command parses itself (--nemesis, --opt) is a flag
// with its help, its default the value it was bound from, and setting it
// writes the setting — a time given in TTLs once Resolve knows the TTL.
func TestTheSettingsDeclareTheirFlags(t *testing.T) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	r := Defaults()
	var spans Spans
	BindFlags(fs, &r, &spans)
	var missing []string
	for _, typ := range []reflect.Type{reflect.TypeFor[Run](), reflect.TypeFor[workload.Workload](), reflect.TypeFor[cluster.Topology]()} {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			name := f.Tag.Get("flag")
			if name == "" || name == "opt" || name == "nemesis" || name == "lock-file" || f.Anonymous {
				continue
			}
			if fl := fs.Lookup(name); fl == nil || fl.Usage == "" {
				missing = append(missing, name)
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("settings with a flag tag but no flag: %v", missing)
	}
	if got := fs.Lookup("clients").DefValue; got != "4" {
		t.Errorf("--clients default %q, want 4", got)
	}
	if err := fs.Parse([]string{"--reentry", "0.5", "--ttl", "200ms", "--hold", "1.5ttl", "--persistence", "always", "--seed", "9"}); err != nil {
		t.Fatal(err)
	}
	if err := spans.Resolve(r.TTL); err != nil {
		t.Fatal(err)
	}
	if r.Reentry != 0.5 || r.TTL != 200*time.Millisecond || r.Hold != 300*time.Millisecond || r.Persistence != "always" || r.Seed != 9 {
		t.Errorf("flags not written to the settings: %+v", r)
	}
	if err := fs.Parse([]string{"--ttl", "2ttl"}); err == nil {
		t.Error("--ttl 2ttl accepted: the TTL cannot be a multiple of itself")
	}
}

// A scenario file's workload section is read from the same declarations:
// every workload setting with a file tag is a key of it, of its kind, and
// a multiple of the TTL follows the TTL the section gives.
func TestTheSettingsDeclareTheirFileSection(t *testing.T) {
	var keys []string
	for _, f := range SectionFields("workload") {
		keys = append(keys, f.Key+":"+f.Kind)
	}
	want := "clients:integer keys:integer ttl:duration hold:span wait:span retry:span think:span op-timeout:span renew:boolean reentry:number"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("workload keys %q\nwant %q", got, want)
	}
	var s Section
	if err := yaml.Unmarshal([]byte("hold: 1.5ttl\nttl: 200ms\nclients: 3\nrenew: true\nreentry: 0.25\nthink:\n"), &s); err != nil {
		t.Fatal(err)
	}
	r := Defaults()
	if errs := s.Over(Section{}).With("keys", "2").Apply(&r, "workload"); len(errs) > 0 {
		t.Fatal(errs)
	}
	if r.TTL != 200*time.Millisecond || r.Hold != 300*time.Millisecond || r.Clients != 3 || r.Keys != 2 || !r.Renew || r.Reentry != 0.25 || r.Think != DefaultThink {
		t.Errorf("section not written to the settings: %+v", r.Workload)
	}
	for text, msg := range map[string]string{
		"ttl: 2ttl":    "ttl: cannot be a multiple of the TTL",
		"clients: 1.5": `clients: "1.5": want a whole number`,
		"hodl: 1s":     "hodl: unknown field; allowed here: clients, keys, ttl, hold",
		"renew: yes!":  `renew: "yes!": want true or false`,
		"hold: [1s]":   "hold: want a plain value",
	} {
		var s Section
		if err := yaml.Unmarshal([]byte(text), &s); err != nil {
			t.Fatal(err)
		}
		r := Defaults()
		if errs := s.Apply(&r, "workload"); len(errs) != 1 || !strings.Contains(errs[0].Error(), msg) {
			t.Errorf("%s: %v, want %q", text, errs, msg)
		}
	}
}

// A run that starts JVMs or containers takes two of a grid's slots; a run
// of a Go lock on local servers, one.
func TestARunThatStartsJVMsOrContainersWeighsTwo(t *testing.T) {
	for _, c := range []struct {
		run  Run
		want int
	}{
		{Run{Lock: "token-lua"}, 1},
		{Run{Lock: "etcd-mutex"}, 1},
		{Run{Lock: "token-lua", Topology: cluster.Topology{Backend: "docker"}}, 2},
		{Run{Lock: "zk-lock"}, 2},        // ZooKeeper's servers are JVMs
		{Run{Lock: "redisson-rlock"}, 2}, // a Java adapter: a JVM per client
		{Run{Lock: "node-redlock"}, 1},   // Node starts in a blink
		{Run{Lock: "no-such-lock"}, 2},   // unknown: the heavier guess
	} {
		if got := c.run.Weight(); got != c.want {
			t.Errorf("%s on %q weighs %d, want %d", c.run.Lock, c.run.Backend, got, c.want)
		}
	}
}
