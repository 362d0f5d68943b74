package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/internal/browser"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/report/palette"
)

// lockchaosIn runs the binary in dir with env added, as an installed binary
// runs outside the repository.
func lockchaosIn(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, append(append(os.Environ(), ownTemp(t)), env...)
	cmd.Stdout, cmd.Stderr = &o, &e
	var ee *exec.ExitError
	if err := cmd.Run(); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("lockchaos %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// Outside the repository a built-in scenario runs by its name; an unknown
// name lists the built-in ones. A run that is no evidence either way (a
// stall of the busy machine made its only overlap) runs again, up to three
// times, as the matrix runs it.
func TestRunBuiltinScenarioByName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var stdout, stderr string
	var code int
	for attempt := 1; attempt <= 3; attempt++ {
		out := filepath.Join(dir, fmt.Sprintf("run-%d", attempt))
		stdout, stderr, code = lockchaosIn(t, dir, nil, "run", "--scenario", "token-lua-no-fault", "--duration", "1s", "--out", out)
		res, err := checker.CheckDir(out, 0)
		if err != nil || res.NoEvidence() == "" {
			break
		}
		t.Logf("no evidence (%s): %s; running it again", res.NoEvidence(), strings.TrimSpace(stdout))
	}
	if code != ExitSafe || !strings.Contains(stdout, "scenario token-lua-no-fault expects safe: as expected") {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	_, stderr, code = lockchaosIn(t, dir, nil, "run", "--scenario", "token-lua-no-faults", "--out", filepath.Join(dir, "bad"))
	if code != ExitUsage || !strings.Contains(stderr, `scenario "token-lua-no-faults": no such file, and no built-in scenario has that name (did you mean token-lua-no-fault?); built-in: `) || !strings.Contains(stderr, "token-lua-no-fault") {
		t.Errorf("unknown name: exit %d, stderr %q", code, stderr)
	}
}

// An installed binary, with no repository and no built shim anywhere: the
// lua lock runs its bundled script, and the clock shim is compiled into
// the (empty) cache on first use, so a clock jump lands.
func TestInstalledBinaryRunsLuaAndClockFaults(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(filepath.Join(filepath.Dir(bin), "clockshim.so")); err == nil {
		t.Fatal("the test binary has a clock shim beside it")
	}
	dir, cache := t.TempDir(), t.TempDir()
	env := []string{"XDG_CACHE_HOME=" + cache, "LOCKCHAOS_CLOCKSHIM="}
	out := filepath.Join(dir, "run")
	stdout, stderr, code := lockchaosIn(t, dir, env, "run", "--lock", "lua", "--opt", "lua.file=builtin:token.lua",
		"--nemesis", "clock-jump", "--ttl", "300ms", "--hold", "60ms", "--duration", "3s", "--seed", "1", "--out", out)
	// The headline tells the first overlap; beside CPU hogs a stall of the
	// harness can come first, and the jump's overlap is counted after it.
	byFault := regexp.MustCompile(`overlaps by cause: fault [1-9]`)
	if code != ExitViolation || !strings.Contains(stdout, "caused by fault clock-jump") && !byFault.MatchString(stdout) {
		t.Errorf("exit %d, want a violation caused by the clock jump\n%s\n%s", code, stdout, stderr)
	}
	if libs, _ := filepath.Glob(filepath.Join(cache, "lockchaos", "clockshim-*.so")); len(libs) != 1 {
		t.Errorf("the cache holds %v, want the compiled shim", libs)
	}
}

// The README's quickstart command, as written, runs, exits as the README
// says, and prints lines of the shapes the README shows (numbers, clients
// and folders vary from run to run; the first clause of each line does not).
func TestReadmeQuickstartRunsAsWritten(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i := strings.Index(text, "### One run")
	if i < 0 {
		t.Fatal("README.md has no '### One run' section")
	}
	blocks := regexp.MustCompile("(?s)```(sh)?\n(.*?)```").FindAllStringSubmatch(text[i:], 2)
	if len(blocks) < 2 || blocks[0][1] != "sh" {
		t.Fatalf("the One run section wants a sh block with the command, then the output: %q", blocks)
	}
	command := strings.TrimSpace(strings.SplitN(blocks[0][2], "#", 2)[0])
	args := strings.Fields(command)
	if len(args) < 2 || args[0] != "bin/lockchaos" {
		t.Fatalf("the quickstart command %q does not start with bin/lockchaos", command)
	}
	dir := t.TempDir()
	stdout, stderr, code := lockchaosIn(t, dir, nil, args[1:]...)
	if !strings.Contains(text[i:i+3000], "exit status 1") || code != ExitViolation {
		t.Errorf("%s: exit %d, the README says 1 (a violation)\n%s%s", command, code, stderr, stdout)
	}
	got := strings.Split(stderr+stdout, "\n")
	number := regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)
	for _, want := range strings.Split(strings.TrimRight(blocks[1][2], "\n"), "\n") {
		// The line's first clause, its numbers and its folder free.
		head := strings.SplitN(want, ";", 2)[0]
		if j := strings.Index(head, " (lock "); j > 0 {
			head = head[:j]
		}
		head = strings.ReplaceAll(head, "results/run-…", "\x01")
		head = number.ReplaceAllString(head, "\x00")
		pattern := regexp.QuoteMeta(head)
		pattern = strings.ReplaceAll(pattern, "\x01", `\S+`)
		pattern = strings.ReplaceAll(pattern, "\x00", `[0-9]+(\.[0-9]+)?`)
		re := regexp.MustCompile("^" + pattern)
		found := false
		for _, g := range got {
			found = found || re.MatchString(g)
		}
		if !found {
			t.Errorf("no line of the run looks like the README's %q (pattern %s):\n%s%s", want, re, stderr, stdout)
		}
	}

	// Its report stays small, opens with what to do next, and the README
	// shows that box as the run draws it.
	page := filepath.Join(dir, "results", "latest", "report.html")
	info, err := os.Stat(page)
	if err != nil {
		t.Fatalf("the quickstart's report: %v", err)
	}
	if info.Size() >= 1<<20 {
		t.Errorf("the quickstart's report.html is %d bytes, want under 1 MB", info.Size())
	}
	dom := browser.Browse(t, page, "--dump-dom")
	for _, want := range []string{`id="next-steps"`, `id="next-shrink"`, `id="next-replay"`, `id="next-fence"`, "lockchaos shrink "} {
		if !strings.Contains(dom, want) {
			t.Errorf("the quickstart's report lacks %s", want)
		}
	}
	shot := filepath.Join(t.ArtifactDir(), "report-next-steps.png")
	browser.Browse(t, page, "--screenshot="+shot, "--window-size=1200,860", "--hide-scrollbars")
	if n := browser.CountColor(t, shot, palette.Violation); n < 1000 {
		t.Errorf("the screenshot shows %d pixels of the violation header's colour: the page did not render", n)
	}
	if !strings.Contains(text, "docs/report-next-steps.png") {
		t.Error("the README does not show docs/report-next-steps.png")
	}
	browser.Publish(t, shot, filepath.Join("..", "docs", "report-next-steps.png"))
}

// example/ is a module of its own, as a user's code is: it builds against
// this clone through its replace line, its binary knows its lock beside
// every built-in one, and its tests pass.
func TestExampleBuildsAsItsOwnModule(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	custom := filepath.Join(dir, "lockchaos-custom")
	build := exec.Command("go", "build", "-o", custom, "./cmd/lockchaos-custom")
	build.Dir = "../example"
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build in example/: %v\n%s", err, out)
	}
	out, err := exec.Command(custom, "list", "locks").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "example-watch-release ") || !strings.Contains(string(out), "token-lua ") {
		t.Fatalf("lockchaos-custom list locks: %v\n%s", err, out)
	}
	test := exec.Command("go", "test", "-count=1", "./...")
	test.Dir = "../example"
	if out, err := test.CombinedOutput(); err != nil {
		t.Fatalf("go test in example/: %v\n%s", err, out)
	}
}

// An installed binary carries every shipped lock: outside the repository,
// with an empty cache, `list locks` shows each adapter of adapters/, not
// built yet; the first run of one builds it into the cache (saying so on
// stderr first) and runs it; two first runs at once build it once (the
// build lock); a later run finds it built.
func TestInstalledBinaryCarriesEveryShippedLock(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the Python adapters cannot be built")
	}
	dir, cache := t.TempDir(), t.TempDir()
	env := []string{"XDG_CACHE_HOME=" + cache, "LOCKCHAOS_ADAPTERS="}
	stdout, stderr, code := lockchaosIn(t, dir, env, "list", "locks")
	if code != 0 {
		t.Fatalf("list locks: exit %d\n%s", code, stderr)
	}
	shipped, _ := filepath.Glob(filepath.Join("..", "adapters", "*", "*", "lock.yaml"))
	if len(shipped) < 17 {
		t.Fatalf("found %d shipped adapters in the repository", len(shipped))
	}
	lines := strings.Split(stdout, "\n")
	for _, f := range shipped {
		m, err := locks.ReadManifest(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel("..", f)
		found := false
		for _, l := range lines {
			if strings.HasPrefix(l, m.Name+" ") && strings.Contains(l, "adapter: "+rel) {
				found = true
				if m.Built != "" && !strings.Contains(l, "not built yet") {
					t.Errorf("%s: not marked as not built: %q", m.Name, l)
				}
			}
		}
		if !found {
			t.Errorf("list locks does not show the shipped adapter %s (%s)\n%s", m.Name, rel, stdout)
		}
	}
	// Two first runs at once.
	type result struct {
		stdout, stderr string
		code           int
	}
	results := make(chan result, 2)
	for i := range 2 {
		go func() {
			o, e, c := lockchaosIn(t, dir, env, "run", "--lock", "redis-py-lock", "--duration", "1s", "--out", filepath.Join(dir, fmt.Sprintf("run-%d", i)))
			results <- result{o, e, c}
		}()
	}
	builds := 0
	for range 2 {
		r := <-results
		builds += strings.Count(r.stderr, "adapter redis-py-lock is not built yet: building it now in "+cache)
		if r.code != ExitSafe {
			t.Errorf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	}
	if builds != 1 {
		t.Errorf("two first runs at once built the adapter %d times, want once", builds)
	}
	_, stderr, code = lockchaosIn(t, dir, env, "run", "--lock", "redis-py-lock", "--duration", "1s", "--out", filepath.Join(dir, "again"))
	if code != ExitSafe || strings.Contains(stderr, "not built yet") {
		t.Errorf("a later run: exit %d, want it to find the adapter built\n%s", code, stderr)
	}
	if unpacked, _ := filepath.Glob(filepath.Join(cache, "lockchaos", "adapters", "*", "python", "redis-py-lock", "lib")); len(unpacked) != 1 {
		t.Errorf("built into %v, want one folder under the cache's lockchaos/adapters", unpacked)
	}
}
