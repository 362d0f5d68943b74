package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/nemesis"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/history"
)

var bin string

// The tests drive the real binary, as a user or CI would.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lockchaos-cli-test-")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "lockchaos")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/lockchaos").CombinedOutput(); err != nil {
		panic("build lockchaos: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func lockchaos(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), ownTemp(t))
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("lockchaos %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// ownTemp gives a command of the test a temporary folder of the test's
// own (TMPDIR): what it keeps there on purpose — the logs of a failed
// adapter check, which its error names — goes with the test.
func ownTemp(t *testing.T) string { return "TMPDIR=" + t.TempDir() }

// list fits one screen and names everything; list KIND gives one line
// each, list NAME the options; a misspelt NAME gets a suggestion.
func TestListFitsAScreenAndNamesEverything(t *testing.T) {
	t.Parallel()
	out, _, code := lockchaos(t, "list")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if n := strings.Count(out, "\n"); n > 40 {
		t.Errorf("list prints %d lines, more than a screen of 40:\n%s", n, out)
	}
	// Stores head their locks' lines ("zookeeper: curator-mutex ...").
	for _, name := range append(append(locks.Names(), nemesis.Names()...), "pause-past-ttl-token-lua", "zookeeper:", "postgres:", "etcd:", "redis:") {
		if !regexp.MustCompile(`(^|\s)` + regexp.QuoteMeta(name) + `(\s|$)`).MatchString(out) {
			t.Errorf("list does not name %q:\n%s", name, out)
		}
	}
	for _, c := range []struct{ arg, want string }{
		{"locks", "setnx-expire "},
		{"nemeses", "pause-client "},
		{"stores", "zookeeper "},
		{"scenarios", "pause-past-ttl-token-lua "},
		{"setnx-expire", "--opt setnx-expire.gap="},
		{"lua", "--opt lua.file="},
		{"pause-client", "--opt pause-client.phase=hold"},
		{"hold-outlives-ttl", "shows: "},
	} {
		out, stderr, code := lockchaos(t, "list", c.arg)
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("list %s: exit %d, stdout %q, stderr %q; want %q", c.arg, code, out, stderr, c.want)
		}
	}
	_, stderr, code := lockchaos(t, "list", "zookeper")
	if code != ExitUsage || !strings.Contains(stderr, "(did you mean zookeeper?)") {
		t.Errorf("list zookeper: exit %d, stderr %q", code, stderr)
	}
}

// list --packages names every store's Debian packages (what make setup,
// .ci/run and the CI templates install), --missing those of the stores not
// installed: on a PATH without the servers, Redis's and etcd's.
func TestListPackagesSaysWhatToInstall(t *testing.T) {
	t.Parallel()
	out, _, code := lockchaos(t, "list", "--packages")
	for _, p := range []string{"redis-server", "redis-sentinel", "etcd-server", "zookeeper", "postgresql"} {
		if code != 0 || !slices.Contains(strings.Fields(out), p) {
			t.Errorf("list --packages: exit %d, %q lacks %s", code, out, p)
		}
	}
	cmd := exec.Command(bin, "list", "--packages", "--missing")
	cmd.Env = append(os.Environ(), "PATH="+t.TempDir())
	b, err := cmd.Output()
	if err != nil || !strings.Contains(string(b), "redis-server redis-tools redis-sentinel") || !strings.Contains(string(b), "etcd-server") {
		t.Errorf("list --packages --missing without the servers on PATH: %v, %q", err, b)
	}
	cmd = exec.Command(bin, "list", "--services", "--missing")
	cmd.Env = append(os.Environ(), "PATH="+t.TempDir())
	if b, err := cmd.Output(); err != nil || !slices.Contains(strings.Fields(string(b)), "etcd") {
		t.Errorf("list --services --missing without the servers on PATH: %v, %q", err, b)
	}
}

// docs/OPTIONS.md is what `lockchaos list --markdown` writes: the docs say
// what the code declares (make docs regenerates it).
func TestOptionsDocIsGenerated(t *testing.T) {
	t.Parallel()
	out, _, code := lockchaos(t, "list", "--markdown")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	doc, err := os.ReadFile("../docs/OPTIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(doc) != out {
		t.Errorf("docs/OPTIONS.md is stale: run make docs")
	}
	for _, want := range []string{"### `redlock`", "| `drift-factor` | `0.01` |", "### `pause-client`", "| `schedule` | `every` |"} {
		if !strings.Contains(out, want) {
			t.Errorf("the reference lacks %q", want)
		}
	}
}

func TestUsageErrorsExitThreeAndSayWhatToFix(t *testing.T) {
	t.Parallel()
	nolock := filepath.Join(t.TempDir(), "nolock.yaml")
	if err := os.WriteFile(nolock, []byte("shows: something\nexpect:\n  verdict: safe\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--lock", "nope", "--out", t.TempDir()}, "known locks: curator-mutex, etcd-election, etcd-mutex, "},
		{[]string{"run", "--lock", "token-lua", "--nemesis", "gremlins", "--out", t.TempDir()}, "unknown nemesis \"gremlins\""},
		{[]string{"run", "--lock", "token-lua", "--opt", "broken", "--out", t.TempDir()}, "NAME.KEY=VALUE"},
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"check"}, "usage: lockchaos check DIR"},
		{[]string{"run", "--lock", "token-lua", "--ttl", "300"}, "a number needs a unit: 300ms or 300s)"},
		{[]string{"run", "--lock", "token-lua", "--backend", "nope", "--out", t.TempDir()}, "known backends: docker, local"},
		{[]string{"run", "--scenario", nolock, "--out", t.TempDir()}, "nolock.yaml: lock.name: missing"},
		{[]string{"chaos", "--scenarios", nolock, "--out", t.TempDir()}, "nolock.yaml: lock.name: missing"},
		{[]string{"run", "--lock", "token-lua", "--hold", "2,5ttl"}, "a multiple of the TTL such as 2ttl"},
		{[]string{"run", "--lock", "token-lua", "--ttl", "2ttl"}, "not a multiple of the TTL"},
		{[]string{"run", "--lock", "token-lua", "--opt", "pause-client.schedule=every=2,5ttl", "--nemesis", "pause-client", "--out", t.TempDir()}, "option pause-client.schedule"},
		// Did you mean: every unknown name gets the names it was near.
		{[]string{"run", "--lock", "redis-lock", "--out", t.TempDir()}, `unknown lock "redis-lock" (did you mean "redislock"`},
		{[]string{"run", "--lock", "token-lua", "--nemesis", "pause", "--out", t.TempDir()}, `(did you mean "pause-node" or "pause-client"?)`},
		{[]string{"run", "--lokc", "token-lua"}, "no flag --lokc (did you mean --lock?)"},
		{[]string{"rnu"}, `unknown command "rnu" (did you mean run?)`},
		{[]string{"run", "--scenario", "pause-past-ttl"}, "did you mean pause-past-ttl-set-nx-px or pause-past-ttl-token-lua?"},
		{[]string{"run", "--lock", "token-lua", "--nemesis", "pause-client", "--opt", "pause-client.duraton=1ttl", "--out", t.TempDir()}, `no option "duraton" (did you mean duration?)`},
		{[]string{"check", "/nonexistent"}, "/nonexistent holds no history.jsonl"},
		// A fault that waits for a blocked acquire, in a run whose acquires
		// try once: refused before it starts, not run to end with no fault.
		{[]string{"run", "--lock", "token-lua", "--nemesis", "pause-client", "--opt", "pause-client.phase=wait", "--out", t.TempDir()}, "pause-client with phase=wait waits for a client blocked in a blocking acquire, and this run's acquires try once: give --wait"},
		{[]string{"run", "--lock", "token-lua", "--nemesis", "latency", "--opt", "latency.when=wait", "--out", t.TempDir()}, "with when=wait waits for a client blocked in a blocking acquire"},
	} {
		_, stderr, code := lockchaos(t, tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("lockchaos %v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, stderr, ExitUsage, tc.want)
		}
	}
}

func TestRunExitCodeMatchesVerdictAndCheckAgrees(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"--lock", "token-lua", "--hold", "10ms", "--duration", "2s"}, ExitSafe},
		// Two clients and 4 s: a pause waits for its step's client to
		// hold the key, and one of four contending clients can lose every
		// race for seconds (the CLI runs once: no evidence is no verdict).
		{[]string{"--lock", "set-nx-px", "--nemesis", "pause-client", "--hold", "60ms", "--clients", "2", "--duration", "4s"}, ExitViolation},
	} {
		dir := t.TempDir()
		args := append([]string{"run", "--ttl", "300ms", "--seed", "3", "--out", dir}, tc.args...)
		out, stderr, code := lockchaos(t, args...)
		if code != tc.code {
			t.Fatalf("lockchaos %v: exit %d, want %d\n%s%s", args, code, tc.code, out, stderr)
		}
		var res struct {
			Verdict string `json:"verdict"`
			Seed    int64  `json:"seed"`
		}
		b, err := os.ReadFile(filepath.Join(dir, "result.json"))
		if err != nil || json.Unmarshal(b, &res) != nil || res.Seed != 3 {
			t.Fatalf("result.json unreadable or without the seed: %v %s", err, b)
		}
		if !strings.HasPrefix(out, res.Verdict+": ") {
			t.Errorf("summary line %q does not start with the verdict %s", out, res.Verdict)
		}
		again, _, code := lockchaos(t, "check", dir)
		if code != tc.code || !strings.HasPrefix(again, res.Verdict+": ") {
			t.Errorf("check %s: exit %d %q, want exit %d and verdict %s", dir, code, again, tc.code, res.Verdict)
		}
	}
}

// leftovers lists the pids of running processes whose executable is exe,
// and of redis-server processes that are children of pid.
func leftovers(t *testing.T, exe string, parent int) []string {
	t.Helper()
	var out []string
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, s := range stats {
		dir := filepath.Dir(s)
		if target, err := os.Readlink(filepath.Join(dir, "exe")); err == nil && target == exe {
			out = append(out, dir+" (lockchaos)")
		}
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		// Fields after the command name: state, ppid, pgrp …
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
		if len(f) > 2 && f[1] == strconv.Itoa(parent) && strings.TrimSpace(string(comm)) == "redis-server" {
			out = append(out, dir+" (redis-server)")
		}
	}
	return out
}

// waitGone polls until nothing of the run is left, or gives up after 10 s.
func waitGone(t *testing.T, pid int) []string {
	var left []string
	for i := 0; i < 100; i++ {
		if left = leftovers(t, bin, pid); len(left) == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return left
}

func TestSIGINTStopsInOrderAndLeavesNothingBehind(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(bin, "run", "--lock", "token-lua", "--nemesis", "pause-client", "--ttl", "300ms", "--duration", "60s", "--out", dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("took %v to stop after SIGINT", took)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || (ee.ExitCode() != ExitInconclusive && ee.ExitCode() != ExitViolation) {
		t.Fatalf("exit %v after SIGINT, want inconclusive (2) or violation (1):\n%s", err, out.String())
	}
	if left := waitGone(t, cmd.Process.Pid); len(left) > 0 {
		t.Errorf("left running after SIGINT: %v", left)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "history.jsonl"))
	if !bytes.Contains(b, []byte(`"kind":"run-end"`)) || !bytes.Contains(b, []byte("interrupted")) {
		t.Error("the history does not end with a run-end that says the run was interrupted")
	}
}

// Times given as multiples of the TTL are resolved against the run's final
// TTL, wherever the TTL was given (flag or scenario).
func TestTimesInTTLs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, stderr, code := lockchaos(t, "run", "--lock", "token-lua", "--hold", "0.4ttl", "--ttl", "400ms", "--duration", "2ttl",
		"--nemesis", "pause-client", "--opt", "pause-client.schedule=every=1ttl", "--out", dir)
	// What the 800 ms run found does not matter here (its pause may not
	// land in time: inconclusive), only how its times were read.
	if code != ExitSafe && code != ExitViolation && code != ExitInconclusive {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var cfg struct{ TTL, Hold, Duration time.Duration }
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.TTL != 400*time.Millisecond || cfg.Hold != 160*time.Millisecond || cfg.Duration != 800*time.Millisecond {
		t.Errorf("config %+v: want TTL 400ms, hold 0.4ttl = 160ms, duration 2ttl = 800ms", cfg)
	}
}

func TestKilledCoordinatorTakesItsChildrenAndLeavesACheckablePrefix(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(bin, "run", "--lock", "token-lua", "--ttl", "300ms", "--hold", "10ms", "--duration", "60s", "--out", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	dirs := scratchDirsOf(t, cmd.Process.Pid)
	if len(dirs) < 2 {
		t.Errorf("the run's scratch directories (lock node, resource) do not name their coordinator: found %v", dirs)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if left := waitGone(t, cmd.Process.Pid); len(left) > 0 {
		t.Errorf("left running after the coordinator was killed: %v", left)
	}
	out, _, code := lockchaos(t, "check", dir)
	if code != ExitInconclusive {
		t.Errorf("check of a crashed run: exit %d (%s), want inconclusive: its history has no end", code, out)
	}
	// The nodes died with it; their directories go with the next run or
	// with clean (whose exit status depends on Docker, not asserted here).
	lockchaos(t, "clean")
	for _, d := range dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("clean left the killed run's directory %s (%v)", d, err)
		}
	}
}

// scratchDirsOf lists the node and sentinel directories the coordinator pid
// made (their owner file names it).
func scratchDirsOf(t *testing.T, pid int) []string {
	t.Helper()
	all, _ := filepath.Glob(filepath.Join(cluster.ScratchDir(), "lockchaos-*"))
	var mine []string
	for _, d := range all {
		if b, err := os.ReadFile(filepath.Join(d, "lockchaos.owner")); err == nil && strings.HasPrefix(string(b), strconv.Itoa(pid)+":") {
			mine = append(mine, d)
		}
	}
	return mine
}

// Every command's -h, --help and `help COMMAND` print its usage and flags
// on stdout and exit 0; a bad flag gets one line naming it, and where to
// look, on stderr.
func TestHelpAndBadFlags(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"run", "chaos", "check", "report", "clean", "list", "shrink", "runs"} {
		for _, args := range [][]string{{cmd, "-h"}, {cmd, "--help"}, {"help", cmd}} {
			out, stderr, code := lockchaos(t, args...)
			if code != 0 || !strings.Contains(out, "Usage: lockchaos "+cmd) || stderr != "" {
				t.Errorf("lockchaos %v: exit %d, stdout %q, stderr %q; want the usage on stdout and exit 0", args, code, out, stderr)
			}
		}
		_, stderr, code := lockchaos(t, cmd, "--no-such-flag")
		if code != ExitUsage || strings.Count(strings.TrimSpace(stderr), "\n") > 1 || !strings.Contains(stderr, "-no-such-flag") {
			t.Errorf("lockchaos %s --no-such-flag: exit %d, stderr %q; want exit %d and one line naming the flag", cmd, code, stderr, ExitUsage)
		}
	}
	out, _, _ := lockchaos(t, "run", "-h")
	if strings.Contains(out, "-lock lockchaos") || !strings.Contains(out, "-lock NAME") || !strings.Contains(out, "-hold SPAN") {
		t.Errorf("run -h names the flags' arguments badly:\n%s", out)
	}
}

func TestVersionNamesTheLockLibraries(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"version", "--version"} {
		out, _, code := lockchaos(t, arg)
		if code != 0 || !strings.HasPrefix(out, "lockchaos ") || !strings.Contains(out, "go1.") ||
			!strings.Contains(out, "github.com/go-redsync/redsync/v4") || !strings.Contains(out, "github.com/bsm/redislock") {
			t.Errorf("lockchaos %s: exit %d:\n%s", arg, code, out)
		}
		// Every store's client, and every adapter lock's library.
		for _, m := range []string{"go.etcd.io/etcd/client/v3", "github.com/go-zookeeper/zk", "github.com/jackc/pgx/v5", "redisson-rlock  ", "Java, Redisson "} {
			if !strings.Contains(out, m) {
				t.Errorf("lockchaos %s does not name %s:\n%s", arg, m, out)
			}
		}
	}
}

// A stored history with a half-written line after its run-end is not whole:
// check says inconclusive, not safe.
func TestCheckOfACutOffHistoryIsInconclusive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, stderr, code := lockchaos(t, "run", "--lock", "token-lua", "--duration", "1s", "--out", dir); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	f, err := os.OpenFile(filepath.Join(dir, "history.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"time":1,"kind":"ok","cli`)
	f.Close()
	out, _, code := lockchaos(t, "check", dir)
	if code != ExitInconclusive || !strings.Contains(out, "last line was cut off") {
		t.Errorf("check: exit %d, %q; want inconclusive because the last line was cut off", code, out)
	}
}

// --out never overwrites a run's evidence by accident: a folder holding a
// run is refused; --force replaces it, and a replacement that fails at setup
// leaves no verdict of the old run behind.
func TestOutHoldingARunIsRefusedUnlessForced(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, stderr, code := lockchaos(t, "run", "--lock", "token-lua", "--duration", "1s", "--out", dir); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	_, stderr, code := lockchaos(t, "run", "--lock", "token-lua", "--duration", "1s", "--out", dir)
	if code != ExitUsage || !strings.Contains(stderr, "already holds a run") || !strings.Contains(stderr, "--force") {
		t.Errorf("second run into the same --out: exit %d, %q; want a usage error pointing at --force", code, stderr)
	}
	// A forced run that cannot start (no redis-server on its PATH).
	cmd := exec.Command(bin, "run", "--lock", "token-lua", "--duration", "1s", "--out", dir, "--force")
	cmd.Env = append(os.Environ(), "PATH=/nonexistent")
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != ExitSetup {
		t.Fatalf("forced run without redis-server: exit %d, want %d (setup):\n%s", cmd.ProcessState.ExitCode(), ExitSetup, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "result.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failed forced run left the earlier result.json behind (%v)", err)
	}
	if _, stderr, code := lockchaos(t, "run", "--lock", "token-lua", "--duration", "1s", "--out", dir, "--force"); code != 0 {
		t.Errorf("forced run: exit %d: %s", code, stderr)
	}
	matrix := t.TempDir()
	if err := os.WriteFile(filepath.Join(matrix, "summary.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = lockchaos(t, "chaos", "--quick", "--scenarios", "reentrant-lock-reentry", "--out", matrix)
	if code != ExitUsage || !strings.Contains(stderr, "already holds a matrix") {
		t.Errorf("chaos into a folder holding a matrix: exit %d, %q; want a usage error", code, stderr)
	}
}

// A reader that stops reading (lockchaos run … | head -1) does not cost
// the run its result: the coordinator finishes and writes result.json.
func TestClosedStdoutDoesNotLoseTheResult(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// 6 s: progress lines come every 2 s, and the later ones meet the
	// closed pipe before the result is written.
	cmd := exec.Command(bin, "run", "--lock", "token-lua", "--clients", "2", "--duration", "6s", "--out", dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(stdout).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	stdout.Close() // like head -1
	_ = cmd.Wait()
	if _, err := os.Stat(filepath.Join(dir, "result.json")); err != nil {
		t.Errorf("the run whose stdout closed wrote no result.json (%v); %v", err, cmd.ProcessState)
	}
}

// One Ctrl-C ends a run whatever --hold says: the stop cuts the hold's work
// short; the client writes and releases at once.
func TestSIGINTCutsALongHoldShort(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(bin, "run", "--lock", "token-lua", "--clients", "2", "--hold", "10m", "--ttl", "20m", "--duration", "30m", "--out", dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hist := filepath.Join(dir, "history.jsonl")
	for i := 0; i < 300; i++ { // until a hold has begun
		if b, _ := os.ReadFile(hist); bytes.Contains(b, []byte(`"kind":"ok","client":0,"f":"read"`)) || bytes.Contains(b, []byte(`"kind":"ok","client":1,"f":"read"`)) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute): // the hold alone would take 10 minutes
		_ = cmd.Process.Kill()
		t.Fatalf("one SIGINT did not end a run whose client was inside a 10-minute hold:\n%s", out.String())
	}
	events, _, err := history.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	var released, ended bool
	for _, e := range events {
		released = released || e.Kind == history.Invoke && e.F == history.Release
		ended = ended || e.Kind == history.RunEnd
	}
	if !released || !ended {
		t.Errorf("after SIGINT: release invoked %v, run-end %v; want the hold released and the run ended", released, ended)
	}
}

// --quiet prints no progress: stderr stays empty, the verdict still comes.
func TestRunQuietPrintsOnlyTheVerdict(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, stderr, code := lockchaos(t, "run", "--lock", "token-lua", "--ttl", "300ms", "--duration", "3s", "--seed", "5", "--quiet", "--out", dir)
	if code != ExitSafe || stderr != "" || !strings.HasPrefix(out, "safe: ") {
		t.Errorf("run --quiet: exit %d, stdout %q, stderr %q; want safe, and nothing on stderr", code, out, stderr)
	}
}

// A scenario written for `run` needs only what the run needs: no shows
// line, no expectation (and then no "as expected" line).
func TestRunAnAdHocScenarioWithoutShowsOrExpect(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(file, []byte("lock:\n  name: token-lua\nworkload:\n  ttl: 300ms\nduration: 2s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := lockchaos(t, "run", "--scenario", file, "--quiet", "--out", t.TempDir())
	if code != ExitSafe || strings.Contains(out, "expects") {
		t.Errorf("run --scenario %s: exit %d, stdout %q, stderr %q", file, code, out, stderr)
	}
}

// A run written to its default folder becomes results/latest, and
// `lockchaos runs` lists it with its verdict, lock and report.
func TestLatestRunAndTheListOfPastRuns(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	in := func(args ...string) (string, string, int) { return lockchaosIn(t, work, nil, args...) }
	if out, stderr, code := in("runs"); code != 0 || !strings.Contains(out, "no runs yet") {
		t.Errorf("runs before any run: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if _, stderr, code := in("run", "--lock", "token-lua", "--ttl", "300ms", "--duration", "2s", "--quiet"); code != ExitSafe {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	target, err := os.Readlink(filepath.Join(work, "results", "latest"))
	if err != nil || !strings.HasPrefix(target, "run-") {
		t.Fatalf("results/latest: %q, %v; want a link to the run's folder", target, err)
	}
	if _, err := os.Stat(filepath.Join(work, "results", "latest", "result.json")); err != nil {
		t.Fatalf("results/latest does not lead to the run: %v", err)
	}
	out, stderr, code := in("runs")
	if code != 0 || !strings.Contains(out, "run      safe") || !strings.Contains(out, "token-lua + none") ||
		!strings.Contains(out, filepath.Join("results", target, "report.html")) || strings.Count(out, "\n") != 1 {
		t.Errorf("runs: exit %d, stdout %q, stderr %q; want the one run, safe, with its report", code, out, stderr)
	}
}

// A run of an outside adapter (--lock-file, --lock-cmd) that fails
// `lockchaos adapter check` is refused before anything starts, exit 3, in
// the check's own words: its faults' landing would be judged from tokens
// the lock never stored. The liar answers granted where its library
// refused; the other writes prose in place of init_ok.
func TestARunOfAnAdapterThatFailsItsCheckIsRefused(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	prose := filepath.Join(t.TempDir(), "prose.sh")
	if err := os.WriteFile(prose, []byte("#!/bin/sh\necho 'my adapter starts' >&2\nread -r line\necho 'OK, ready'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flag, value string
		says        []string
	}{
		{"--lock-file", "../adaptercheck/testdata/liar.yaml", []string{
			"adapter broken-liar (", "fails `lockchaos adapter check`", "checking again, in case the machine was too busy",
			"FAIL  acquire, then a second client refused: client 1's acquire of a key that client 0 holds was answered granted",
		}},
		{"--lock-cmd", "sh " + prose, []string{
			"adapter cmd fails `lockchaos adapter check` (1 of 1 steps)",
			`FAIL  init: adapter cmd did not answer init: adapter protocol: it wrote a line that is not a JSON message with a type: "OK, ready"`,
			"| my adapter starts",
		}},
	} {
		out := filepath.Join(t.TempDir(), "run")
		_, stderr, code := lockchaos(t, "run", tc.flag, tc.value, "--duration", "2s", "--out", out)
		if code != 3 {
			t.Errorf("%s %s: exit %d, want 3 (fix the adapter):\n%s", tc.flag, tc.value, code, stderr)
		}
		for _, s := range tc.says {
			if !strings.Contains(stderr, s) {
				t.Errorf("%s %s: the error does not say %q:\n%s", tc.flag, tc.value, s, stderr)
			}
		}
		if _, err := os.Stat(filepath.Join(out, "history.jsonl")); err == nil {
			t.Errorf("%s %s: a run was recorded in %s", tc.flag, tc.value, out)
		}
	}
}

// An outside adapter that passes the check runs; its pass is kept for its
// build, so the next run starts at once, and a changed adapter is checked
// again.
func TestAnAdapterPassesItsCheckOncePerBuild(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	dir := t.TempDir()
	src, err := os.ReadFile("../adapters/perl/token/adapter.pl")
	if err != nil {
		t.Fatal(err)
	}
	manifest := "name: my-token\nstore: redis\nrenew: true\nrequires: [perl]\ncommand: [perl, adapter.pl]\n"
	if err := os.WriteFile(filepath.Join(dir, "lock.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(s []byte) {
		if err := os.WriteFile(filepath.Join(dir, "adapter.pl"), s, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(src)
	run := func(want string) {
		t.Helper()
		_, stderr, code := lockchaos(t, "run", "--lock-file", filepath.Join(dir, "lock.yaml"), "--duration", "1s", "--out", filepath.Join(t.TempDir(), "run"))
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, stderr)
		}
		if !strings.Contains(stderr, want) {
			t.Errorf("the run does not say %q:\n%s", want, stderr)
		}
	}
	run("checking adapter my-token first")
	run("adapter my-token passed `lockchaos adapter check` before, as built now")
	write(append(src, "\n# changed\n"...))
	run("checking adapter my-token first")
}
