package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/locks"
)

// pins are the files of each language's skeleton that pin its versions,
// and a line each must hold: an exact version, never a range.
var pins = map[string]map[string]string{
	"go":     {"go.mod": "github.com/redis/go-redis/v9 v9.23.0", "go.sum": "github.com/redis/go-redis/v9 v9.23.0 h1:"},
	"java":   {"pom.xml": "<jedis.version>5.2.0</jedis.version>"},
	"node":   {"package.json": `"ioredis": "5.11.1"`, "package-lock.json": `"node_modules/ioredis"`},
	"python": {"requirements.txt": "redis==5.2.1"},
	"rust":   {"Cargo.toml": `redis = { version = "=1.8.1"`, "Cargo.lock": `name = "redis"`},
}

// adapter init writes, for each of its five languages, a lock.yaml that
// reads as a manifest with the lock named after its folder and a build,
// and the language's own manifest files with exact versions; it refuses a
// folder that holds something and a language it has no skeleton for.
func TestAdapterInitWritesEachLanguage(t *testing.T) {
	t.Parallel()
	for lang, files := range pins {
		dir := filepath.Join(t.TempDir(), "my-"+lang+"-lock")
		out, stderr, code := lockchaos(t, "adapter", "init", "--lang", lang, dir)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", lang, code, stderr)
		}
		if want := "adapter check " + filepath.Join(dir, "lock.yaml"); !strings.Contains(out, want) {
			t.Errorf("%s: init does not say what to run next (%q): %s", lang, want, out)
		}
		m, err := locks.ReadManifest(filepath.Join(dir, "lock.yaml"))
		if err != nil {
			t.Fatalf("%s: %v", lang, err)
		}
		if m.Name != "my-"+lang+"-lock" || m.Language != lang || len(m.Build) == 0 || m.Built == "" || !m.Unbuilt() {
			t.Errorf("%s: manifest name %q, language %q, build %v, built %q (unbuilt %v)", lang, m.Name, m.Language, m.Build, m.Built, m.Unbuilt())
		}
		for f, line := range files {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil || !strings.Contains(string(b), line) {
				t.Errorf("%s: %s lacks %q (%v)", lang, f, line, err)
			}
		}
		skel, _ := filepath.Glob(filepath.Join(dir, "*.skel"))
		if len(skel) > 0 {
			t.Errorf("%s: skeleton files written under their embedded names: %v", lang, skel)
		}
		if _, stderr, code := lockchaos(t, "adapter", "init", "--lang", lang, dir); code != ExitUsage || !strings.Contains(stderr, "is not empty") {
			t.Errorf("%s: init into a folder it filled: exit %d, %s", lang, code, stderr)
		}
	}
	if _, stderr, code := lockchaos(t, "adapter", "init", "--lang", "cobol", t.TempDir()+"/x"); code != ExitUsage || !strings.Contains(stderr, "go, java, node, python, rust") {
		t.Errorf("an unknown language: exit %d, %s", code, stderr)
	}
}

// Each skeleton, as init writes it, passes adapter check, which builds it
// first with its language's real toolchain and package registry. Slow (a
// minute or more for Java and Rust, with empty caches): run with
// LOCKCHAOS_SLOW_TESTS=1.
func TestAdapterInitSkeletonsPassTheirCheck(t *testing.T) {
	t.Parallel()
	if os.Getenv(SlowTestsEnv) != "1" {
		t.Skip("slow: builds five adapters with their toolchains; set LOCKCHAOS_SLOW_TESTS=1")
	}
	built := regexp.MustCompile(`built in [0-9.]+ s`)
	for _, lang := range []string{"go", "java", "node", "python", "rust"} {
		t.Run(lang, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "my-"+lang+"-lock")
			if _, stderr, code := lockchaos(t, "adapter", "init", "--lang", lang, dir); code != 0 {
				t.Fatalf("init: exit %d: %s", code, stderr)
			}
			out, stderr, code := lockchaos(t, "adapter", "check", filepath.Join(dir, "lock.yaml"))
			if code != 0 || !strings.Contains(out, "PASSED") {
				t.Fatalf("adapter check: exit %d:\n%s%s", code, out, stderr)
			}
			t.Logf("%s: %s", lang, built.FindString(out))
			if !built.MatchString(out) {
				t.Errorf("adapter check did not build the adapter first:\n%s", out)
			}
		})
	}
}
