package cli

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/locks"
)

// Every built-in lock says in its Spec the language and library it runs,
// at the version this build links (go.mod), and how it is known to break:
// the catalogue (docs/OPTIONS.md, `lockchaos list NAME`) shows both, and a
// reader must be able to trust the version a verdict speaks about.
func TestEveryLockNamesTheLinkedVersionsAndItsWeakness(t *testing.T) {
	t.Parallel()
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	// How a Library names a library whose module path does not end in
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
	mentioned := regexp.MustCompile(`([a-z0-9/.-]*[a-z0-9](?: client/v3)?) (\d+\.\d+\.\d+)`)
	for _, s := range locks.All() {
		if s.Adapter != nil {
			continue
		}
		if strings.TrimSpace(s.Weakness) == "" {
			t.Errorf("lock %s: its Spec has no Weakness (how it is known to break, for the catalogue)", s.Name)
		}
		lib := s.Library
		if strings.TrimSpace(lib) == "" {
			t.Errorf("lock %s: its Spec has no Library (the language and library it runs, with the version)", s.Name)
			continue
		}
		for _, m := range mentioned.FindAllStringSubmatch(lib, -1) {
			mod, ok := moduleOf(m[1])
			if !ok {
				t.Errorf("%s: its Library names %q, which names no module of go.mod (by the end of its path): add it to the test's modules", s.Name, m[1])
				continue
			}
			if !regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(mod) + ` v` + regexp.QuoteMeta(m[2]) + `\b`).Match(gomod) {
				t.Errorf("%s: its Library says %s %s, go.mod links another version of %s", s.Name, m[1], m[2], mod)
			}
		}
	}
}

// Every row of the catalogue's lock table links to its lock's heading, by
// the anchor GitHub gives it (a name with dots loses them).
func TestTheCatalogueLinksEveryLockToItsHeading(t *testing.T) {
	t.Parallel()
	if got := markdownAnchor("node-redlock-5.0.0-beta.2"); got != "node-redlock-500-beta2" {
		t.Errorf("markdownAnchor: %q", got)
	}
	var b strings.Builder
	listMarkdown(&b)
	doc := b.String()
	headings := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^### (.+)$").FindAllStringSubmatch(doc, -1) {
		headings[markdownAnchor(m[1])] = true
	}
	links := regexp.MustCompile("(?m)^\\| \\[`([^`]+)`\\]\\(#([^)]+)\\)").FindAllStringSubmatch(doc, -1)
	if len(links) != len(locks.All()) {
		t.Errorf("the lock table has %d rows, for %d locks", len(links), len(locks.All()))
	}
	for _, l := range links {
		if !headings[l[2]] {
			t.Errorf("the row of %s links to #%s, which no heading has", l[1], l[2])
		}
	}
}
