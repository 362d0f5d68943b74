package locks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
