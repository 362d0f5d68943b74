package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/audit"
	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/compare"
	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/settings"
)

// outsideLock copies the Perl adapter of a plain token lease (SET NX PX,
// compare-and-delete release: perl and redis only) out of the clone, as a
// lock library's own repository would hold it: ROOT/mylock/lock.yaml,
// named my-token, with an option and a claim of its own. It returns ROOT
// and ROOT/work, an empty working directory beside it.
func outsideLock(t *testing.T) (root, work string) {
	t.Helper()
	root = t.TempDir()
	src, err := os.ReadFile("../adapters/perl/token/adapter.pl")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"mylock", "work"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	manifest := `name: my-token
description: "a plain token lease in Perl: SET NX PX, compare-and-delete release"
language: perl
store: redis
nodes: 1
renew: true
requires: [perl]
command: [perl, adapter.pl]
claims: [latency]
options:
  - name: flavour
    default: plain
    oneof: [plain, spicy]
    help: "ignored by the adapter: an option to set with --opt"
`
	if err := os.WriteFile(filepath.Join(root, "mylock", "adapter.pl"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "mylock", "lock.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, filepath.Join(root, "work")
}

// runConfig reads the settings a run recorded (DIR/config.json).
func runConfig(t *testing.T, dir string) settings.Run {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c settings.Run
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// absolutePath finds a path from the root in text (a command, a link).
var absolutePath = regexp.MustCompile("(^|[\\s(`'\"=|\\[])/[A-Za-z0-9._-]+/")

// --lock-file PATH (a lock.yaml anywhere) and --opt are taken alike by
// every command that takes a lock, from a folder outside the clone: the
// lock is known by its manifest's name beside the shipped ones, its runs
// record the manifest (so that they replay from their folder alone), and
// the option reaches its runs.
func TestLockFileAndOptOnEveryCommand(t *testing.T) {
	t.Parallel()
	root, work := outsideLock(t)
	lf := filepath.Join("..", "mylock", "lock.yaml")
	abs := filepath.Join(root, "mylock", "lock.yaml")
	opt := []string{"--lock-file", lf, "--opt", "my-token.flavour=spicy"}
	recorded := func(t *testing.T, c settings.Run) {
		t.Helper()
		if c.Lock != "my-token" || c.LockFile != abs || c.LockOptions["flavour"] != "spicy" {
			t.Errorf("the run recorded lock %q, file %q, options %v; want my-token, %s, flavour=spicy", c.Lock, c.LockFile, c.LockOptions, abs)
		}
	}

	t.Run("run", func(t *testing.T) {
		var stdout, stderr string
		var code int
		for try := 1; ; try++ {
			os.RemoveAll(filepath.Join(work, "r"))
			stdout, stderr, code = lockchaosIn(t, work, nil, append([]string{"run", "--nemesis", "none", "--duration", "1s", "--out", "r", "--json", "--junit", "r.xml", "--quiet"}, opt...)...)
			if code != ExitViolation || try == 3 {
				break
			}
			// A violation that only stalls of the machine made is no
			// evidence (a 1 s lease beside CPU hogs): run it again.
			res, err := checker.CheckDir(filepath.Join(work, "r"), 0)
			if err != nil || res.NoEvidence() == "" {
				break
			}
			t.Logf("run %d: no evidence (%s): running it again", try, res.NoEvidence())
		}
		if code != ExitSafe {
			t.Fatalf("run: exit %d\n%s%s", code, stdout, stderr)
		}
		var res struct{ Verdict, Lock string }
		if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Verdict != "safe" || res.Lock != "my-token" {
			t.Errorf("run --json printed %q (%v): want the result of my-token, safe", stdout, err)
		}
		recorded(t, runConfig(t, filepath.Join(work, "r")))
		x, _ := os.ReadFile(filepath.Join(work, "r.xml"))
		if !strings.Contains(string(x), `<testcase name="my-token+none" classname="lockchaos.run.my-token"`) || !strings.Contains(string(x), `failures="0" errors="0"`) {
			t.Errorf("run --junit wrote:\n%s", x)
		}
		// The folder replays by itself: it names the manifest. Any
		// verdict will do: beside CPU hogs a replay's 1 s lease can run
		// out under a stalled holder (exit 1, a make test here), and what
		// is asserted is that the replay ran the same lock, from its file,
		// with its option.
		_, stderr, code = lockchaosIn(t, work, nil, "run", "--replay", "r", "--out", "r2", "--quiet")
		if code != ExitSafe && code != ExitViolation && code != ExitInconclusive {
			t.Fatalf("run --replay of the lock-file run: exit %d\n%s", code, stderr)
		}
		recorded(t, runConfig(t, filepath.Join(work, "r2")))
	})

	t.Run("compare", func(t *testing.T) {
		_, stderr, code := lockchaosIn(t, work, nil, append([]string{"compare", "--locks", "my-token", "--nemeses", "none", "--seeds", "1", "--duration", "1s", "--out", "c"}, opt...)...)
		if code != 0 {
			t.Fatalf("compare: exit %d\n%s", code, stderr)
		}
		cmp, err := compare.Read(filepath.Join(work, "c"))
		if err != nil {
			t.Fatal(err)
		}
		if len(cmp.Rows) != 1 || cmp.Rows[0].Safe != 1 || len(cmp.Rows[0].Runs) != 1 {
			t.Fatalf("compare rows %+v: want my-token+none safe in its seed", cmp.Rows)
		}
		recorded(t, runConfig(t, filepath.Join(work, "c", cmp.Rows[0].Runs[0].Dir)))
	})

	t.Run("chaos", func(t *testing.T) {
		// The grid gains the lock's row; its claim (latency) is the
		// cell's expectation, where the catalogue has none.
		stdout, stderr, code := lockchaosIn(t, work, nil, append([]string{"chaos", "--scenarios", "my-token+late*", "--out", "ch", "--json"}, opt...)...)
		var doc struct {
			scenarios.Summary
		}
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatalf("chaos --json: %v\n%s%s", err, stdout, stderr)
		}
		got := map[string]scenarios.CellResult{}
		for _, c := range doc.Cells {
			got[c.Name] = c
		}
		lat := got["my-token+latency"]
		if lat.Expect != "safe" || lat.Status != scenarios.StatusMatch || len(doc.Cells) != 1 {
			t.Errorf("my-token+latency: expect %q, status %q (%s): want safe (the claim), match; cells %d", lat.Expect, lat.Status, lat.Detail, len(doc.Cells))
		}
		if code != 0 {
			t.Errorf("chaos: exit %d\n%s", code, stderr)
		}
		if lat.Dir != "" {
			recorded(t, runConfig(t, filepath.Join(work, "ch", lat.Dir)))
		}
	})

	t.Run("shrink", func(t *testing.T) {
		// A run folder that does not name its manifest (a run of an older
		// lockchaos): shrink knows the lock only by --lock-file.
		// A holder paused for 3 TTLs breaks a plain lease; a run in which
		// the pause missed its holder is run again.
		dir := filepath.Join(work, "old")
		code := 0
		for attempt := 1; attempt <= 3 && code != ExitViolation; attempt++ {
			os.RemoveAll(dir)
			_, _, code = lockchaosIn(t, work, nil, "run", "--lock-file", lf, "--nemesis", "pause-client", "--duration", "4s", "--out", "old", "--quiet")
		}
		if code != ExitViolation {
			t.Fatalf("3 runs under pause-client: none violated (exit %d)", code)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "config.json"))
		b = regexp.MustCompile(`"LockFile":\s*"[^"]*",?`).ReplaceAll(b, nil)
		if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		_, without, code := lockchaosIn(t, work, nil, "shrink", "old", "--budget", "1s", "--tries", "1")
		if code != ExitUsage || !strings.Contains(without, `unknown lock "my-token"`) {
			t.Errorf("shrink without --lock-file: exit %d, %q: want the lock unknown", code, without)
		}
		_, with, code := lockchaosIn(t, work, nil, "shrink", "old", "--lock-file", lf, "--budget", "1s", "--tries", "1", "--out", "old.shrink2")
		if code == ExitUsage || code == ExitSetup || strings.Contains(with, "unknown lock") {
			t.Errorf("shrink --lock-file: exit %d, %q: want the lock known and the shrink under way", code, with)
		}
		if _, stderr, code := lockchaosIn(t, work, nil, "shrink", "old", "--opt", "my-token.flavour=spicy"); code != ExitUsage || !strings.Contains(stderr, "a shrink keeps the options its run had") {
			t.Errorf("shrink --opt: exit %d, %q", code, stderr)
		}
	})

	t.Run("audit", func(t *testing.T) {
		_, stderr, code := lockchaosIn(t, work, nil, append([]string{"audit", "--nemeses", "latency", "--refs", "none", "--seeds", "3", "--parallel", "2", "--out", "au", "--json"}, opt...)...)
		if code != 0 {
			t.Fatalf("audit: exit %d\n%s", code, stderr)
		}
		a, err := audit.Read(filepath.Join(work, "au"))
		if err != nil {
			t.Fatal(err)
		}
		if a.Spec.Lock != "my-token" || len(a.Classes) != 1 || a.Classes[0].Seeds != 3 || strings.Join(a.Spec.Claims, ",") != "latency" {
			t.Fatalf("audit of %q, classes %+v", a.Spec.Lock, a.Classes)
		}
		cmp, _ := compare.Read(filepath.Join(work, "au"))
		recorded(t, runConfig(t, filepath.Join(work, "au", cmp.Rows[0].Runs[0].Dir)))
		if !strings.Contains(a.Command, " --lock-file ../../mylock/lock.yaml --opt my-token.flavour=spicy ") {
			t.Errorf("the audit's repeat command %q gives no --lock-file relative to its folder and --opt", a.Command)
		}
	})
}

// run and audit refuse an adapter that fails the conformance check
// (lockchaos adapter check), saying what failed.
func TestALockFileThatFailsTheCheckIsRefused(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	// An adapter that answers init, then never answers an acquire right.
	script := "while (<STDIN>) { print qq({\"ok\":true}\\n); STDOUT->flush; }\n"
	os.WriteFile(filepath.Join(root, "bad.pl"), []byte("use IO::Handle;\n"+script), 0o644)
	os.WriteFile(filepath.Join(root, "lock.yaml"), []byte("name: bad-lease\ndescription: answers ok to everything\nlanguage: perl\nstore: redis\nnodes: 1\ncommand: [perl, bad.pl]\n"), 0o644)
	for _, args := range [][]string{
		{"run", "--lock-file", "lock.yaml", "--duration", "1s", "--out", "r"},
		{"audit", "--lock-file", "lock.yaml", "--nemeses", "none", "--refs", "none", "--out", "au"},
	} {
		// The failed check's logs are kept, in the temporary folder the
		// error names: this test's own, so that none outlives it.
		_, stderr, code := lockchaosIn(t, root, []string{"TMPDIR=" + root}, args...)
		if code != ExitUsage || !strings.Contains(stderr, "lockchaos "+args[0]+": adapter bad-lease") {
			t.Errorf("%s of an adapter that fails the check: exit %d, stderr %q; want %d naming what failed", args[0], code, stderr, ExitUsage)
		}
		if !strings.Contains(stderr, "its logs are in "+filepath.Join(root, "lockchaos-adapter-check-")) {
			t.Errorf("%s of an adapter that fails the check names no logs in its temporary folder: %q", args[0], stderr)
		}
	}
}

// A lock library's CI: from a folder outside the clone, the library's
// adapter (a plain token lease, in Perl) is audited by --lock-file. Its
// claim of latency holds on at least 3 seeds of evidence (exit 0, a JUnit
// case that passes); a claim of pause-client, which breaks a plain lease by
// construction (the holder is paused past its TTL), exits 1 naming the
// witness. audit.md holds no absolute path: its commands run from its own
// folder.
func TestAuditOfALockOutsideTheClone(t *testing.T) {
	t.Parallel()
	root, work := outsideLock(t)
	lf := filepath.Join("..", "mylock", "lock.yaml")
	noAbsolutePath := func(t *testing.T, out string) {
		t.Helper()
		md, err := os.ReadFile(filepath.Join(out, rundir.AuditMarkdownFile))
		if err != nil {
			t.Fatal(err)
		}
		if m := absolutePath.FindString(string(md)); m != "" || strings.Contains(string(md), root) {
			t.Errorf("audit.md holds an absolute path (%q):\n%s", m, md)
		}
	}

	var stdout, stderr string
	var code int
	for attempt := 1; attempt <= 2; attempt++ {
		// A claim with too few seeds of evidence (a busy machine stalled a
		// run) fails the audit honestly: run it again, once.
		os.RemoveAll(filepath.Join(work, "held"))
		stdout, stderr, code = lockchaosIn(t, work, nil, "audit", "--lock-file", lf, "--claims", "latency", "--nemeses", "latency", "--refs", "none",
			"--seeds", "3", "--parallel", "2", "--junit", "a.xml", "--out", "held")
		if !strings.Contains(stdout, "not enough evidence for latency") {
			break
		}
	}
	if code != ExitClaimsHeld {
		t.Fatalf("audit --claims latency: exit %d\n%s%s", code, stdout, stderr)
	}
	a, err := audit.Read(filepath.Join(work, "held"))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Classes) != 1 || a.Classes[0].Safe < audit.ClaimSeeds || a.Classes[0].Expected != "safe" || a.ExpectFrom != "claims" {
		t.Errorf("latency: %+v (expected from %q): want held on at least %d seeds, the claim its expectation", a.Classes, a.ExpectFrom, audit.ClaimSeeds)
	}
	x, _ := os.ReadFile(filepath.Join(work, "a.xml"))
	if !strings.Contains(string(x), `<testcase name="my-token+latency" classname="lockchaos.audit.my-token"`) || !strings.Contains(string(x), `tests="1" failures="0" errors="0" skipped="0"`) {
		t.Errorf("a.xml:\n%s", x)
	}
	md, _ := os.ReadFile(filepath.Join(work, "held", rundir.AuditMarkdownFile))
	if !strings.HasPrefix(string(md), "**Verdict: claims held** — latency safe in ") || !strings.Contains(string(md), "| fault | my-token | claimed |") {
		t.Errorf("audit.md has no verdict line or claims column:\n%s", md)
	}
	noAbsolutePath(t, filepath.Join(work, "held"))

	stdout, stderr, code = lockchaosIn(t, work, nil, "audit", "--lock-file", lf, "--claims", "pause-client", "--nemeses", "pause-client", "--refs", "none",
		"--seeds", "3", "--min-seeds", "3", "--parallel", "2", "--shrink-budget", "20s", "--shrink-tries", "1", "--junit", "b.xml", "--out", "broken")
	if code != ExitClaimsBroken || !strings.Contains(stdout, "CLAIM BROKEN: pause-client broke my-token (witness: broken/witness/pause-client/") {
		t.Fatalf("audit --claims pause-client: exit %d, want %d naming the witness\n%s%s", code, ExitClaimsBroken, stdout, stderr)
	}
	noAbsolutePath(t, filepath.Join(work, "broken"))
	x, _ = os.ReadFile(filepath.Join(work, "b.xml"))
	if !strings.Contains(string(x), `failures="1"`) || !strings.Contains(string(x), "expected safe, got violation") {
		t.Errorf("b.xml:\n%s", x)
	}
	// The witness's command runs as printed from the audit's folder.
	a, err = audit.Read(filepath.Join(work, "broken"))
	if err != nil || len(a.Classes) != 1 || a.Classes[0].Witness == nil {
		t.Fatalf("audit.json: %v %+v", err, a.Classes)
	}
	cmd := strings.Fields(a.Classes[0].Witness.Command)
	if cmd[0] != "lockchaos" {
		t.Fatalf("witness command %q", a.Classes[0].Witness.Command)
	}
	args := append(cmd[1:], "--quiet")
	if !slices.Contains(args, "--out") { // a replay names its own
		args = append(args, "--out", filepath.Join(root, "again"))
	}
	_, stderr, code = lockchaosIn(t, filepath.Join(work, "broken"), nil, args...)
	if code == ExitUsage || code == ExitSetup {
		t.Errorf("the witness command %q from the audit's folder: exit %d\n%s", a.Classes[0].Witness.Command, code, stderr)
	}
}
