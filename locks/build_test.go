package locks

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// make setup, make chaos and make chaos-quick build the adapters each time
// (issue 44: 2m44s for 17 unchanged adapters). A build is skipped while
// nothing in its folder changed since it was built here; a change, a
// missing artifact or --force builds again; manifests that build the same
// artifact (redisson-spin-lock builds redisson-rlock's jar) build it once.
func TestAdapterBuildSkipsAnUnchangedFolder(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	root := t.TempDir()
	shared, other := filepath.Join(root, "shared"), filepath.Join(root, "other")
	for _, d := range []string{shared, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	src := filepath.Join(shared, "Adapter.src")
	if err := os.WriteFile(src, []byte("v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Each build appends a line to builds.log and rewrites the artifact.
	build := []string{"sh", "-c", "echo built >> ../builds.log; date +%N > adapter.jar"}
	ms := []*Manifest{
		{Name: "lib-a", Dir: shared, Build: build, Built: "adapter.jar"},
		{Name: "lib-b", Dir: other, Build: []string{"sh", "-c", "cd ../shared && echo built >> ../builds.log; date +%N > adapter.jar"}, Built: "../shared/adapter.jar"},
	}
	if artifact(ms[0]) != artifact(ms[1]) {
		t.Fatalf("the two manifests build %q and %q, want one artifact", artifact(ms[0]), artifact(ms[1]))
	}
	builds := func() int {
		b, _ := os.ReadFile(filepath.Join(root, "builds.log"))
		return strings.Count(string(b), "built")
	}
	run := func(force bool) string {
		var out bytes.Buffer
		if failed := buildFolder(&out, io.Discard, io.Discard, ms, force); failed != 0 {
			t.Fatalf("%d failed: %s", failed, out.String())
		}
		return out.String()
	}
	if out := run(false); builds() != 1 || !strings.Contains(out, "lib-b: built with lib-a") {
		t.Fatalf("first build: %d builds, said %q; want one build for both", builds(), out)
	}
	if out := run(false); builds() != 1 || strings.Count(out, "up to date") != 2 {
		t.Errorf("nothing changed: %d builds, said %q; want none, both up to date", builds(), out)
	}
	time.Sleep(10 * time.Millisecond) // a new modification time
	if err := os.WriteFile(src, []byte("v2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if run(false); builds() != 2 {
		t.Errorf("a source changed: %d builds, want 2", builds())
	}
	if run(false); builds() != 2 {
		t.Errorf("built after the change, then nothing changed: %d builds, want 2", builds())
	}
	if err := os.Remove(filepath.Join(shared, "adapter.jar")); err != nil {
		t.Fatal(err)
	}
	if run(false); builds() != 3 {
		t.Errorf("the artifact was removed: %d builds, want 3", builds())
	}
	if run(true); builds() != 4 {
		t.Errorf("--force: %d builds, want 4", builds())
	}
}

// What a build prints reaches the user less terminal control sequences:
// Debian's Maven 3.8 wrote a colour reset (ESC[0m) on every quiet build,
// which prefixed "ok curator-mutex: built" with "[0m[0m" in every log and
// CI job. A write of nothing else is dropped; the text around is kept.
func TestABuildsOutputLosesItsTerminalControlSequences(t *testing.T) {
	var b strings.Builder
	w := plainText{&b}
	for _, s := range []string{"\x1b[0m", "\x1b[0m\x1b[0m", "[ERROR] \x1b[1;31mCOMPILATION ERROR\x1b[m\n", "plain\n"} {
		if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if want := "[ERROR] COMPILATION ERROR\nplain\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
