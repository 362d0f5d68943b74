package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/locks"
)

// The README's lock table names, for every built-in lock, its language and
// the library it runs at the version this build links (go.mod): a reader
// must be able to trust the version a verdict speaks about.
func TestReadmeLockTableNamesTheLinkedVersions(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	// How the table names a library whose module path does not end in
	// its name; the others are found in go.mod by that ending.
	modules := map[string]string{
		"etcd client/v3": "go.etcd.io/etcd/client/v3",
		"pgx":            "github.com/jackc/pgx/v5",
	}
	moduleOf := func(name string) (string, bool) {
		if m, ok := modules[name]; ok {
			return m, true
		}
		for _, l := range strings.Split(string(gomod), "\n") {
			f := strings.Fields(l)
			if len(f) >= 2 && strings.Contains(f[1], "v") {
				path := regexp.MustCompile(`/v\d+$`).ReplaceAllString(f[0], "")
				if strings.HasSuffix(path, "/"+name) {
					return f[0], true
				}
			}
		}
		return "", false
	}
	text := string(readme)
	start := strings.Index(text, "| name | language, library, version |")
	if start < 0 {
		t.Fatal("README.md has no lock table with a language, library, version column")
	}
	table := text[start:]
	table = table[:strings.Index(table, "\n\n")]
	rows := map[string]string{}
	for _, l := range strings.Split(table, "\n")[2:] {
		cells := strings.Split(l, " | ")
		rows[strings.Trim(cells[0], "| `")] = cells[1]
	}
	mentioned := regexp.MustCompile(`([a-z0-9/.-]*[a-z0-9](?: client/v3)?) (\d+\.\d+\.\d+)`)
	for _, s := range locks.All() {
		if s.Adapter != nil {
			continue
		}
		lib, ok := rows[s.Name]
		if !ok || strings.TrimSpace(lib) == "" {
			t.Errorf("README.md's lock table has no row (or no library) for the built-in lock %s", s.Name)
			continue
		}
		for _, m := range mentioned.FindAllStringSubmatch(lib, -1) {
			mod, ok := moduleOf(m[1])
			if !ok {
				t.Errorf("%s: the README names %q, which names no module of go.mod (by the end of its path): add it to the test's modules", s.Name, m[1])
				continue
			}
			if !regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(mod) + ` v` + regexp.QuoteMeta(m[2]) + `\b`).Match(gomod) {
				t.Errorf("%s: the README says %s %s, go.mod links another version of %s", s.Name, m[1], m[2], mod)
			}
		}
	}
}
