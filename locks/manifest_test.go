package locks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every shipped adapter says what code it is — its language, and its
// library with the version its own manifest pins (pom.xml, package.json,
// requirements.txt): `lockchaos list` and the reports quote it, so it must
// be the version that runs.
func TestShippedAdaptersNameTheVersionTheyPin(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "adapters", "*", "*", "lock.yaml"))
	if len(files) < 5 {
		t.Fatalf("found %d shipped adapters", len(files))
	}
	for _, f := range files {
		m, err := ReadManifest(f)
		if err != nil {
			t.Error(err)
			continue
		}
		if m.Language == "" {
			t.Errorf("%s: no language", f)
		}
		if (m.Library == "") != (m.Version == "") {
			t.Errorf("%s: library %q, version %q: give both or neither", f, m.Library, m.Version)
		}
		if m.Version == "" {
			continue
		}
		// Its own folder, or the one its build runs from (an adapter that
		// shares another's project: mvn -f DIR/pom.xml, npm --prefix DIR),
		// or the build's own -D…=VERSION.
		dirs, pinned := []string{m.Dir}, false
		for i, a := range m.Build {
			switch {
			case (a == "-f" || a == "--prefix") && i+1 < len(m.Build):
				d := m.Build[i+1]
				if a == "-f" {
					d = filepath.Dir(d)
				}
				dirs = append(dirs, filepath.Join(m.Dir, d))
			case strings.HasPrefix(a, "-D") && strings.HasSuffix(a, "="+m.Version):
				pinned = true
			}
		}
		for _, dir := range dirs {
			for _, own := range []string{"pom.xml", "package.json", "requirements.txt"} {
				b, err := os.ReadFile(filepath.Join(dir, own))
				if err == nil && (strings.Contains(string(b), ">"+m.Version+"<") || strings.Contains(string(b), `"`+m.Version+`"`) || strings.Contains(string(b), "=="+m.Version)) {
					pinned = true
				}
			}
		}
		if !pinned {
			t.Errorf("%s: version %s is pinned in none of its manifests (pom.xml, package.json, requirements.txt, in %v) nor by its build", f, m.Version, dirs)
		}
	}
}

// A lock.yaml with mistakes is read as a scenario file is: each error names
// the file, the line and the field, and an unknown field the one it was
// probably meant to be, never the Go type it is decoded into.
func TestAManifestsMistakesAreNamedWithTheirLines(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"unknown field", "name: mine\ndescripton: my lock\ncommand: [perl, adapter.pl]\n",
			[]string{`lock.yaml:2: descripton: unknown field; allowed here: name, description,`, `(did you mean description?)`}},
		{"a list where a string goes", "name: mine\ncommand: [perl, adapter.pl]\nstore: [redis]\n",
			[]string{`lock.yaml:3: store: want a plain value, not a list or mapping`}},
		{"not a whole number", "name: mine\ncommand: [perl, adapter.pl]\nnodes: three\n",
			[]string{`lock.yaml:3: nodes: "three": want a whole number`}},
		{"no store's name", "name: mine\ncommand: [perl, adapter.pl]\n\nstore: My Redis\n",
			[]string{`lock.yaml:4: store: "My Redis": want a store's name (lockchaos list stores)`}},
		{"an option's field", "name: mine\ncommand: [perl, adapter.pl]\noptions:\n  - name: mode\n    defualt: fast\n",
			[]string{`lock.yaml:5: options[0].defualt: unknown field; allowed here: name, default, kind, oneof, help, when (did you mean default?)`}},
		{"lease_option of no option", "name: mine\ncommand: [perl, adapter.pl]\noptions:\n  - name: lease\nlease_option: leese\n",
			[]string{`lock.yaml:5: lease_option: "leese": no such option (did you mean lease?)`}},
		{"no command", "name: mine\n", []string{`lock.yaml: command: want the command that starts the adapter`}},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "lock.yaml"), []byte(tc.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Chdir(dir)
		_, err := ReadManifest("lock.yaml")
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: the error\n  %v\nlacks %q", tc.name, err, w)
			}
		}
		if strings.Contains(err.Error(), "locks.") || strings.Contains(err.Error(), "unmarshal") {
			t.Errorf("%s: the error names Go's types: %v", tc.name, err)
		}
	}
}

// An option's when says what the lock does differently with one of its
// values (mode=lease: no watchdog, but renew): the run's lock (Spec.For)
// and the adapter's interfaces follow the value, and a when of a value
// the option cannot take is refused with its line.
func TestAnOptionsValueSetsCapabilities(t *testing.T) {
	perl, err := filepath.Abs("../adapters/perl/token/adapter.pl")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "lock.yaml")
	write := func(when string) {
		t.Helper()
		y := "name: modes\nstore: redis\nkeeps_alive: true\nrequires: [perl]\ncommand: [perl, " + perl + "]\n" +
			"options:\n  - name: mode\n    default: watchdog\n    oneof: [watchdog, lease]\n    when:\n      " + when + ": {keeps_alive: false, renew: true}\n"
		if err := os.WriteFile(file, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("lease")
	m, err := ReadManifest(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		given      map[string]string
		keepsAlive bool
		renews     bool
	}{{nil, true, false}, {map[string]string{"mode": "lease"}, false, true}} {
		spec := m.Spec()
		l, used, err := spec.Probe(tc.given, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, renews := l.(Renewer)
		if got := spec.For(used); got.KeepsAlive != tc.keepsAlive || renews != tc.renews {
			t.Errorf("options %v: keeps alive %v, renews %v; want %v, %v", tc.given, got.KeepsAlive, renews, tc.keepsAlive, tc.renews)
		}
	}
	if !m.KeepsAlive || m.Renew {
		t.Errorf("For changed the manifest itself: keeps_alive %v, renew %v", m.KeepsAlive, m.Renew)
	}
	write("lase")
	if _, err := ReadManifest(file); err == nil || !strings.Contains(err.Error(), "options[0].when") || !strings.Contains(err.Error(), `"lase"`) {
		t.Errorf("a when of a value the option cannot take: %v", err)
	}
}
