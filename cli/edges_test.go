package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/shrink"
)

// A flag that takes one value, given twice, is a usage error naming the
// flag and both values: the last does not silently win. --opt, which is
// repeatable, may be given twice.
func TestFlagGivenTwiceIsAUsageError(t *testing.T) {
	t.Parallel()
	// Each line is wrong in a second way that the code before this check
	// refused at once (--clients 0, a nemesis nobody knows, an empty
	// folder): a flag given twice is found first.
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--lock", "token-lua", "--lock", "fenced", "--clients", "0", "--out", dir}, "--lock given twice (token-lua, then fenced)"},
		{[]string{"run", "--lock=token-lua", "--ttl", "300ms", "--ttl=1s", "--clients", "0", "--out", dir}, "--ttl given twice (300ms, then 1s)"},
		{[]string{"run", "--quiet", "--lock", "token-lua", "--quiet", "--clients", "0", "--out", dir}, "--quiet given twice"},
		{[]string{"chaos", "--parallel", "2", "--parallel", "3", "--scenarios", "no-such-cell", "--out", dir}, "--parallel given twice (2, then 3)"},
		{[]string{"compare", "--locks", "token-lua", "--locks", "fenced", "--nemeses", "gremlins", "--out", dir}, "--locks given twice (token-lua, then fenced)"},
		// shrink takes its flags on either side of the folder.
		{[]string{"shrink", "--tries", "2", dir, "--tries", "3"}, "--tries given twice (2, then 3)"},
	} {
		_, stderr, code := lockchaos(t, tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("lockchaos %v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, stderr, ExitUsage, tc.want)
		}
	}
	// The flags are themselves again after a parse: -h names their kinds.
	if out, _, code := lockchaos(t, "run", "-h"); code != 0 || !strings.Contains(out, "--clients int") || !strings.Contains(out, "--ttl DURATION") {
		t.Errorf("run -h: exit %d, the flags' kinds are gone:\n%s", code, out)
	}
	// --opt is repeatable: the error is the unknown lock's, not a flag given twice.
	_, stderr, code := lockchaos(t, "run", "--lock", "nope", "--opt", "pause-client.duration=1ttl", "--opt", "pause-client.phase=acquire", "--out", dir)
	if code != ExitUsage || strings.Contains(stderr, "twice") || !strings.Contains(stderr, `unknown lock "nope"`) {
		t.Errorf("run --opt twice: exit %d, stderr %q; want the unknown lock, not a flag given twice", code, stderr)
	}
}

// violatingRun makes a run folder whose verdict is violation (token-lua
// under pause-client, as TestShrinkFindsTheMinimalPause does), trying a
// few seeds: a run may miss.
func violatingRun(t *testing.T) string {
	t.Helper()
	run := filepath.Join(t.TempDir(), "run")
	for seed := 1; seed <= 4; seed++ {
		os.RemoveAll(run)
		stdout, stderr, code := lockchaos(t, "run", "--lock", "token-lua", "--nemesis", "pause-client", "--clients", "4", "--keys", "2",
			"--ttl", "300ms", "--hold", "60ms", "--duration", "4s", "--seed", fmt.Sprint(seed), "--quiet", "--out", run)
		switch code {
		case ExitViolation:
			return run
		case ExitSetup, ExitUsage:
			t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
		}
	}
	t.Fatal("four runs of token-lua under pause-client did not violate")
	return ""
}

// An interrupted shrink exits 2, as compare, audit and chaos do: once
// while the original is run again (nothing written but shrink.json), once
// in the search (the smallest found so far written).
func TestInterruptedShrinkExitsTwo(t *testing.T) {
	t.Parallel()
	run := violatingRun(t)
	for _, tc := range []struct {
		name, after string // SIGINT once stderr holds after
		want        string
	}{
		// (The original's run, cut short, may still hold its violation:
		// then the search stops at once, with the original as the best.)
		{"while the original runs again", "budget ", "interrupted"},
		{"in the search", "shrink: #1 the original", "search stopped early (interrupted)"},
	} {
		out := filepath.Join(t.TempDir(), "shrink")
		cmd := exec.Command(bin, "shrink", run, "--tries", "3", "--budget", "10m", "--out", out)
		var stdout bytes.Buffer
		errFile := filepath.Join(t.TempDir(), "stderr")
		stderr, err := os.Create(errFile) // read while the shrink writes it
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = &stdout, stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		said := func() string { b, _ := os.ReadFile(errFile); return string(b) }
		for i := 0; i < 1200 && !strings.Contains(said(), tc.after); i++ {
			time.Sleep(100 * time.Millisecond)
		}
		_ = cmd.Process.Signal(syscall.SIGINT)
		err = cmd.Wait()
		stderr.Close()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != ExitShrinkInterrupted || !strings.Contains(stdout.String()+said(), tc.want) {
			t.Errorf("shrink interrupted %s: %v, want exit %d saying %q\n%s%s", tc.name, err, ExitShrinkInterrupted, tc.want, stdout.String(), said())
		}
		if rep, err := shrink.Read(out); err != nil || rep.Stopped != shrink.StoppedInterrupted {
			t.Errorf("shrink interrupted %s: shrink.json %v, %+v; want it to say interrupted", tc.name, err, rep)
		}
	}
}

// writeHistory writes events as a run folder's history.jsonl.
func writeHistory(t *testing.T, dir string, events []history.Event) {
	t.Helper()
	w, err := history.Create(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		w.Append(e)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// stallOverlap is a run without faults in which two clients held lock:0
// at once while client 0 could not run (a stall of the harness measured
// across the whole overlap): no evidence about the lock either way.
func stallOverlap() []history.Event {
	ms := func(t float64) int64 { return int64(t * 1e6) }
	op := func(c int, kind history.Kind, f string, t float64) history.Event {
		return history.Event{Time: ms(t), Kind: kind, Client: c, F: f, Key: "lock:0"}
	}
	return []history.Event{
		{Kind: history.RunStart, Client: history.NoClient, Run: &history.RunInfo{Lock: "token-lua", Nemesis: []string{}, Seed: 7, Clients: 2, TTLms: 300}},
		op(0, history.Invoke, history.Acquire, 9), op(0, history.OK, history.Acquire, 10),
		// Client 0's lease ran out by t=310 at the latest, before client 1
		// was granted at 312: only client 0's stall (15–320 ms) made its
		// hold outlive it.
		op(1, history.Invoke, history.Acquire, 312), op(1, history.OK, history.Acquire, 313),
		{Time: ms(320), Kind: history.Stall, Client: 0, StallNs: ms(305)},
		op(0, history.Invoke, history.Release, 322), op(0, history.OK, history.Release, 323),
		op(1, history.Invoke, history.Release, 340), op(1, history.OK, history.Release, 341),
		{Time: ms(400), Kind: history.RunEnd, Client: history.NoClient},
	}
}

// A run of a scenario whose only overlap was a stall of the harness is no
// evidence about what the scenario expects, as chaos, compare and audit
// count it: `run --scenario` says so and exits 2, and its verdict line
// stays the checker's.
func TestRunOfAScenarioThatIsNoEvidenceExitsTwo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeHistory(t, dir, stallOverlap())
	res, err := checker.CheckDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != checker.Violation || !res.StallOnly() {
		t.Fatalf("the history checks as %s (%s); want a violation made by a stall only", res.Verdict, res.Summary)
	}
	s, err := scenarios.Load("token-lua-no-fault")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code := report(&out, dir, res, nil)
	code = afterRun(&out, dir, res, nil, &s, code)
	if code != ExitInconclusive || !strings.HasPrefix(out.String(), "violation: ") ||
		!strings.Contains(out.String(), "scenario token-lua-no-fault expects safe: no evidence: every overlap came from a stall of the harness") ||
		strings.Contains(out.String(), "NOT as expected") {
		t.Errorf("exit %d, printed:\n%s\nwant the violation line, then no evidence, and exit %d", code, out.String(), ExitInconclusive)
	}
}

// Four runs started at once without --out each get a folder of their own
// (the same second's name, then -2, -3 …), and each folder one run's
// history: none is refused for a flag it was not given.
func TestRunsStartedTogetherGetFoldersOfTheirOwn(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	type outcome struct {
		stdout, stderr string
		code           int
	}
	done := make(chan outcome)
	for i := 0; i < 4; i++ {
		go func() {
			o, e, c := lockchaosIn(t, work, nil, "run", "--lock", "token-lua", "--ttl", "300ms", "--duration", "1s", "--quiet")
			done <- outcome{o, e, c}
		}()
	}
	for i := 0; i < 4; i++ {
		o := <-done
		if o.code != ExitSafe {
			t.Errorf("a run of four started together: exit %d\n%s%s", o.code, o.stdout, o.stderr)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(work, "results", "run-*"))
	if len(dirs) != 4 {
		t.Fatalf("four runs wrote %d folders: %v", len(dirs), dirs)
	}
	for _, d := range dirs {
		events, _, err := history.ReadFile(filepath.Join(d, rundir.HistoryFile))
		starts := 0
		for _, e := range events {
			if e.Kind == history.RunStart {
				starts++
			}
		}
		if err != nil || starts != 1 {
			t.Errorf("%s: %d run starts in its history (%v); want one run's", d, starts, err)
		}
	}
}

// Folders claimed at once: a default name is never handed out twice, and
// of runs given the same --out at once exactly one gets it; the others
// are told the folder holds a run (or a live one is writing it), naming
// --out only when it was given.
func TestOutFoldersAreClaimedAtomically(t *testing.T) {
	t.Chdir(t.TempDir())
	const n = 16
	names := make(chan string, n)
	claims := make(chan error, n)
	won := make(chan *rundir.Claimed, n)
	shared := filepath.Join(t.TempDir(), "shared")
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir, err := outFolder("", "run")
			if err != nil {
				t.Error(err)
			}
			names <- dir
			c, err := rundir.Claim(shared, false)
			claims <- err
			won <- c
		}()
	}
	wg.Wait()
	close(names)
	close(claims)
	close(won)
	for c := range won {
		c.Release() // once all have tried: the winner's run lasts that long
	}
	seen := map[string]bool{}
	for d := range names {
		if seen[d] {
			t.Errorf("%s handed out twice", d)
		}
		seen[d] = true
	}
	winners := 0
	for err := range claims {
		var held *rundir.HeldError
		switch {
		case err == nil:
			winners++
		case !errors.As(err, &held) || strings.Contains(err.Error(), "--out "+shared):
			t.Errorf("a claim that lost: %v; want a HeldError that blames no flag", err)
		}
	}
	if winners != 1 {
		t.Errorf("%d of %d runs claimed the same folder; want exactly one", winners, n)
	}
	held := &rundir.HeldError{Dir: shared, Found: []string{rundir.HistoryFile}, Flag: "--out"}
	if !strings.HasPrefix(held.Error(), "--out "+shared+" already holds a run") {
		t.Errorf("given --out: %q", held.Error())
	}
}

// mount runs mount(8) with args, or skips the test where this user may
// not mount (the tests of a result that cannot be saved need a real
// read-only folder and a real full disk, and root sees through chmod).
func mount(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
		t.Skipf("mount %v: %v %s (needs root)", args, err, out)
	}
	t.Cleanup(func() { exec.Command("umount", args[len(args)-1]).Run() })
}

// check of a folder where result.json cannot be written still tells the
// verdict, says it was not saved (where, and why), names no path as if it
// held the result, and exits 4: a read-only folder (a read-only bind
// mount), and a full disk (a tmpfs filled to its last block). An older
// result.json there (a violation) stays as it was, and no HTML page is
// made, of it or of the verdict not saved.
func TestCheckTellsTheVerdictItCannotSave(t *testing.T) {
	t.Parallel()
	hist, err := os.ReadFile("../checker/testdata/safe-no-fault/history.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	older := func(dir string) []byte {
		t.Helper()
		path := filepath.Join(dir, rundir.ResultFile)
		if err := rundir.WriteJSON(path, checker.Result{Verdict: checker.Violation, Summary: "an older run's verdict"}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	src, ro := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(src, rundir.HistoryFile), hist, 0o644); err != nil {
		t.Fatal(err)
	}
	old := older(src)
	mount(t, "--bind", src, ro)
	mount(t, "-o", "remount,bind,ro", ro)

	full := t.TempDir()
	mount(t, "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", len(hist)+64<<10), "tmpfs", full)
	if err := os.WriteFile(filepath.Join(full, rundir.HistoryFile), hist, 0o644); err != nil {
		t.Fatal(err)
	}
	older(full)
	filler, err := os.Create(filepath.Join(full, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for _, err := filler.Write(make([]byte, 4096)); err == nil; _, err = filler.Write(make([]byte, 4096)) {
	}
	filler.Close()

	for _, tc := range []struct{ dir, why string }{{ro, "read-only file system"}, {full, "no space left on device"}} {
		stdout, stderr, code := lockchaos(t, "check", tc.dir)
		result := filepath.Join(tc.dir, rundir.ResultFile)
		if code != ExitSetup || !strings.HasPrefix(stdout, "safe: ") || !strings.Contains(stdout, result+" not saved (") ||
			!strings.Contains(stdout, tc.why) || strings.Contains(stdout, "→ "+result) {
			t.Errorf("check %s: exit %d, stdout %q, stderr %q; want the verdict, %s not saved (%s), exit %d", tc.dir, code, stdout, stderr, result, tc.why, ExitSetup)
		}
		if b, err := os.ReadFile(result); err != nil || !bytes.Equal(b, old) {
			t.Errorf("%s, an older run's, is no longer as it was (%v):\n%s", result, err, b)
		}
		if strings.Contains(stdout, "report: ") || strings.Contains(stderr, "HTML report") {
			t.Errorf("check %s made (or tried to make) an HTML page of a result it did not save:\nstdout %q\nstderr %q", tc.dir, stdout, stderr)
		}
	}
}

// The commands printed for the user to run next start with lockchaos as
// it was invoked: bin/lockchaos after make build (result.json's replay,
// the report's next steps, runs' hint); the bare name when the PATH finds
// the binary invoked by its absolute path.
func TestFollowUpCommandsNameTheProgramAsInvoked(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(work, "bin", "lockchaos")); err != nil {
		t.Fatal(err)
	}
	invoke := func(path string, env []string, args ...string) string {
		cmd := exec.Command(path, args...)
		cmd.Dir, cmd.Env = work, append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", path, args, err, out)
		}
		return string(out)
	}
	if out := invoke("bin/lockchaos", nil, "runs"); !strings.Contains(out, "no runs yet: bin/lockchaos run --lock") {
		t.Errorf("bin/lockchaos runs: %q", out)
	}
	if out := invoke("./bin/lockchaos", nil, "runs"); !strings.Contains(out, "no runs yet: ./bin/lockchaos run --lock") {
		t.Errorf("./bin/lockchaos runs: %q", out)
	}
	abs := filepath.Join(work, "bin", "lockchaos")
	if out := invoke(abs, []string{"PATH=" + filepath.Dir(abs) + ":" + os.Getenv("PATH")}, "runs"); !strings.Contains(out, "no runs yet: lockchaos run --lock") {
		t.Errorf("%s runs, with its folder on the PATH: %q", abs, out)
	}
	invoke("bin/lockchaos", nil, "run", "--lock", "token-lua", "--ttl", "300ms", "--duration", "1s", "--quiet", "--out", "r")
	var res struct {
		Reproduce struct {
			Command string `json:"command"`
		} `json:"reproduce"`
	}
	b, err := os.ReadFile(filepath.Join(work, "r", rundir.ResultFile))
	if err != nil || json.Unmarshal(b, &res) != nil || res.Reproduce.Command != "bin/lockchaos run --replay r --out r-replay" {
		t.Errorf("result.json's replay command: %q (%v)", res.Reproduce.Command, err)
	}
	if page, _ := os.ReadFile(filepath.Join(work, "r", "report.html")); !strings.Contains(string(page), "bin/lockchaos run --replay r --out r-replay") {
		t.Error("the report's next steps do not replay with bin/lockchaos")
	}
}

// A scenario file naming a lock no build of lockchaos knows (a typo) is a
// usage error at its line, with the name it was near, not a cell skipped
// for "what this build lacks" that lets the matrix pass; a lock lockchaos
// ships whose adapter is not here is still skipped.
func TestChaosRefusesAScenarioNamingAnUnknownLock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tinyScenario(t, dir, "good", "token-lua", "10ms", "safe")
	tinyScenario(t, dir, "typo", "token-lau", "10ms", "safe")
	_, stderr, code := lockchaos(t, "chaos", "--scenarios", filepath.Join(dir, "*.yaml"), "--out", t.TempDir())
	want := filepath.Join(dir, "typo.yaml") + ":6: lock.name: lock token-lau not available (did you mean token-lua?)"
	if code != ExitUsage || !strings.Contains(stderr, want) {
		t.Errorf("chaos of a scenario naming token-lau: exit %d, stderr %q; want exit %d saying %q", code, stderr, ExitUsage, want)
	}
	_, stderr, code = lockchaos(t, "run", "--scenario", filepath.Join(dir, "typo.yaml"), "--out", t.TempDir())
	if code != ExitUsage || !strings.Contains(stderr, want) {
		t.Errorf("run --scenario of it: exit %d, stderr %q; want exit %d saying %q", code, stderr, ExitUsage, want)
	}

	// No adapters here: node-redlock, which lockchaos ships, is skipped.
	shipped := t.TempDir()
	tinyScenario(t, shipped, "adapter", "node-redlock", "10ms", "safe")
	cmd := exec.Command(bin, "chaos", "--scenarios", filepath.Join(shipped, "*.yaml"), "--out", t.TempDir())
	cmd.Env = append(os.Environ(), locks.AdaptersEnv+"="+t.TempDir())
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code == ExitUsage || !strings.Contains(string(out), "skipped adapter: lock node-redlock not available") {
		t.Errorf("chaos of a scenario of node-redlock without its adapter: exit %d, want it skipped:\n%s", code, out)
	}
}

// A shrink refused because its folder holds an earlier shrink blames
// --out only when --out was given (its default is DIR.shrink).
func TestShrinkRefusalNamesOutOnlyWhenGiven(t *testing.T) {
	t.Parallel()
	run := fakeRun(filepath.Join(t.TempDir(), "run"), "violation")
	def := rundir.ShrinkDir(run)
	os.MkdirAll(def, 0o755)
	os.WriteFile(filepath.Join(def, rundir.ShrinkScenarioFile), []byte("x"), 0o644)
	_, stderr, code := lockchaos(t, "shrink", run)
	if code != ExitUsage || !strings.Contains(stderr, def+" already holds a shrink") || strings.Contains(stderr, "--out "+def) {
		t.Errorf("shrink into its default folder: exit %d, %q; want it refused without blaming --out", code, stderr)
	}
	_, stderr, code = lockchaos(t, "shrink", run, "--out", def)
	if code != ExitUsage || !strings.Contains(stderr, "--out "+def+" already holds a shrink") {
		t.Errorf("shrink --out %s: exit %d, %q; want --out named", def, code, stderr)
	}
}
