package adapters

import (
	"io/fs"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// The binary carries every tracked file of every shipped adapter (a new
// kind of source the go:embed patterns miss would leave its adapter
// unbuildable in an installed binary), and nothing a build makes
// (node_modules/, target/, lib/: the developer's builds, megabytes).
func TestEmbeddedAdaptersAreTheTrackedOnes(t *testing.T) {
	out, err := exec.Command("git", "ls-files", ".").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	var tracked []string
	for _, f := range strings.Fields(string(out)) {
		if strings.Contains(f, "/") { // README.md and this package's files are no adapter's
			tracked = append(tracked, f)
		}
	}
	var embedded []string
	err = fs.WalkDir(Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			embedded = append(embedded, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(tracked)
	sort.Strings(embedded)
	if strings.Join(tracked, "\n") != strings.Join(embedded, "\n") {
		t.Errorf("embedded:\n%s\n\ntracked by git:\n%s", strings.Join(embedded, "\n"), strings.Join(tracked, "\n"))
	}
	if len(embedded) < 17 {
		t.Errorf("%d files embedded", len(embedded))
	}
}
