package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/audit"
	"github.com/lockchaos/lockchaos/compare"
	"github.com/lockchaos/lockchaos/internal/shellwords"
	"github.com/lockchaos/lockchaos/rundir"
)

// judged is what must agree between an unsharded audit and its merged
// shards: the faults in order, whether each was claimed and ran, a claimed
// fault's status, the claims that broke or went unverified, the verdict
// line. (A fault not claimed may break a lease on a busy machine, in one
// audit and not in the other: its status is luck, not the merge's.)
func judged(a audit.Audit) []string {
	var out []string
	for _, c := range a.Classes {
		status := c.Status
		if !c.Claimed && (status == audit.Held || status == audit.Broken) {
			status = "ran"
		}
		out = append(out, fmt.Sprintf("%s %s claimed=%v", c.Nemesis, status, c.Claimed))
	}
	return append(out, "broken "+strings.Join(a.ClaimsBroken, ","), "unverified "+strings.Join(a.ClaimsUnverified, ","), a.Verdict())
}

// A library's audit run as a CI matrix runs it: an adapter (a plain token
// lease in Perl, by --lock-file) audited whole, then in two shards (each
// runs its cells, chosen by name), which lockchaos merge joins. The merge
// judges the claims as the whole audit did (pause-client breaks a plain
// lease by construction: a claim broken, exit 1), writes audit.md,
// audit.json and JUnit as it did, and its commands run from the merged
// folder. A missing shard is exit 2 naming it; a shard of other settings,
// or of another command, exit 3.
func TestAuditShardsMergeIntoTheUnshardedAudit(t *testing.T) {
	t.Parallel()
	root, work := outsideLock(t)
	lf := filepath.Join("..", "mylock", "lock.yaml")
	auditArgs := func(more ...string) []string {
		return append([]string{"audit", "--lock-file", lf, "--claims", "pause-client", "--nemeses", "latency,pause-client", "--refs", "none",
			"--seeds", "3", "--min-seeds", "3", "--parallel", "2", "--shrink-budget", "10s", "--shrink-tries", "1"}, more...)
	}
	stdout, stderr, code := lockchaosIn(t, work, nil, auditArgs("--junit", "whole.xml", "--out", "whole")...)
	if code != ExitClaimsBroken {
		t.Fatalf("audit: exit %d, want %d\n%s%s", code, ExitClaimsBroken, stdout, stderr)
	}
	whole, err := audit.Read(filepath.Join(work, "whole"))
	if err != nil {
		t.Fatal(err)
	}
	var shards []string
	cells := 0
	for _, sh := range []string{"1/2", "2/2"} {
		out := filepath.Join("results", "shard-"+sh[:1])
		shards = append(shards, out)
		stdout, stderr, code := lockchaosIn(t, work, nil, auditArgs("--shard", sh, "--out", out)...)
		if code != ExitClaimsHeld && code != ExitClaimsBroken {
			t.Fatalf("audit --shard %s: exit %d\n%s%s", sh, code, stdout, stderr)
		}
		a, err := audit.Read(filepath.Join(work, out))
		if err != nil {
			t.Fatal(err)
		}
		if a.Shard == nil || a.Shard.String() != sh || len(a.Classes) != 1 || !strings.Contains(a.Command, "--shard "+sh) {
			t.Errorf("shard %s: audit.json records shard %v, %d classes, command %q; want the shard, one fault of two", sh, a.Shard, len(a.Classes), a.Command)
		}
		cells += len(a.Classes)
	}
	if cells != 2 {
		t.Errorf("the shards ran %d of the audit's 2 faults", cells)
	}

	// lockchaos report sums a shard up again, and it stays a shard.
	if _, stderr, code := lockchaosIn(t, work, nil, "report", shards[0]); code != 0 {
		t.Fatalf("report of shard 1/2: exit %d\n%s", code, stderr)
	}
	if a, err := audit.Read(filepath.Join(work, shards[0])); err != nil || a.Shard == nil {
		t.Fatalf("shard 1/2 after lockchaos report: %v, shard %v", err, a.Shard)
	}

	merged := filepath.Join(work, "merged")
	stdout, stderr, code = lockchaosIn(t, work, nil, "merge", "--out", "merged", "--junit", filepath.Join("merged", "junit.xml"), shards[0], shards[1])
	if code != ExitClaimsBroken || !strings.Contains(stdout, "CLAIM BROKEN: pause-client broke my-token (witness: merged/witness/pause-client/") {
		t.Fatalf("merge: exit %d, want %d naming the witness\n%s%s", code, ExitClaimsBroken, stdout, stderr)
	}
	m, err := audit.Read(merged)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := judged(m), judged(whole); !slices.Equal(got, want) {
		t.Errorf("the merged shards judged otherwise than the whole audit:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if m.Shard != nil || m.ExpectFrom != whole.ExpectFrom || m.Description != whole.Description || len(m.LeftOut) != 0 {
		t.Errorf("merged audit: shard %v, expect from %q, description %q, left out %q", m.Shard, m.ExpectFrom, m.Description, m.LeftOut)
	}
	md, _ := os.ReadFile(filepath.Join(merged, rundir.AuditMarkdownFile))
	wholeMD, _ := os.ReadFile(filepath.Join(work, "whole", rundir.AuditMarkdownFile))
	if first := strings.SplitN(string(md), "\n", 2)[0]; first != strings.SplitN(string(wholeMD), "\n", 2)[0] {
		t.Errorf("audit.md's verdict line %q, the whole audit's %q", first, strings.SplitN(string(wholeMD), "\n", 2)[0])
	}
	if m := absolutePath.FindString(string(md)); m != "" || strings.Contains(string(md), root) || strings.Contains(string(md), "--shard") || strings.Contains(string(md), "**Shard") {
		t.Errorf("merged audit.md holds an absolute path (%q) or a shard's mark:\n%s", m, md)
	}
	if !strings.Contains(m.Command, "--out ../merged-again") {
		t.Errorf("merged audit's command %q", m.Command)
	}
	// Its witness is in the merged folder, and its command finds the
	// manifest from there.
	var w *audit.Witness
	for _, c := range m.Classes {
		if c.Nemesis == "pause-client" {
			w = c.Witness
		}
	}
	if w == nil {
		t.Fatal("the merged audit has no witness for pause-client")
	}
	if _, err := os.Stat(filepath.Join(merged, w.Run)); err != nil {
		t.Errorf("the witness's run is not in the merged folder: %v", err)
	}
	if w.Shrunk {
		if _, err := os.Stat(filepath.Join(merged, w.Scenario)); err != nil {
			t.Errorf("the minimal scenario is not in the merged folder: %v", err)
		}
	}
	args, err := shellwords.Split(w.Command)
	if i := slices.Index(args, "--lock-file"); err != nil || i < 0 {
		t.Errorf("witness command %q names no --lock-file", w.Command)
	} else if _, err := os.Stat(filepath.Join(merged, args[i+1])); err != nil {
		t.Errorf("witness command %q: its --lock-file is not there from the merged folder: %v", w.Command, err)
	}
	x, _ := os.ReadFile(filepath.Join(merged, "junit.xml"))
	wx, _ := os.ReadFile(filepath.Join(work, "whole.xml"))
	for _, want := range []string{`tests="2" failures="1" errors="0" skipped="1"`, `<testcase name="my-token+pause-client" classname="lockchaos.audit.my-token"`, "expected safe, got violation"} {
		if !strings.Contains(string(wx), want) || !strings.Contains(string(x), want) {
			t.Errorf("JUnit: want %q in both the whole audit's and the merge's:\n%s\n%s", want, wx, x)
		}
	}

	// A shard missing: its fault did not run, the claim is not verified.
	_, stderr, code = lockchaosIn(t, work, nil, "merge", "--out", "part", shards[0])
	if code != ExitMatrixIncomplete || !strings.Contains(stderr, "shard 2/2 missing") {
		t.Errorf("merge of shard 1/2 alone: exit %d, want %d naming 2/2\n%s", code, ExitMatrixIncomplete, stderr)
	}
	// A shard of another audit (another fault list: its shard 2/2 is empty).
	_, stderr, code = lockchaosIn(t, work, nil, "audit", "--lock-file", lf, "--claims", "latency", "--nemeses", "latency", "--refs", "none",
		"--seeds", "3", "--shard", "2/2", "--out", "other")
	if code != ExitClaimsHeld {
		t.Fatalf("audit --shard 2/2 of one fault: exit %d\n%s", code, stderr)
	}
	_, stderr, code = lockchaosIn(t, work, nil, "merge", "--out", "mixed", shards[0], "other")
	if code != ExitUsage || !strings.Contains(stderr, "are shards of different audits") {
		t.Errorf("merge of two audits' shards: exit %d, want %d\n%s", code, ExitUsage, stderr)
	}
	// A comparison's folder beside an audit's.
	cmpDir := filepath.Join(work, "a-comparison")
	os.MkdirAll(cmpDir, 0o755)
	os.WriteFile(filepath.Join(cmpDir, compare.JSONFile), []byte("{}"), 0o644)
	_, stderr, code = lockchaosIn(t, work, nil, "merge", "--out", "mixed", shards[0], cmpDir)
	if code != ExitUsage || !strings.Contains(stderr, "merge joins the shards of one command") {
		t.Errorf("merge of an audit's shard and a comparison: exit %d, want %d\n%s", code, ExitUsage, stderr)
	}
	if _, err := os.Stat(filepath.Join(work, "mixed")); err == nil {
		t.Error("a refused merge wrote its folder")
	}
}

// A comparison in two shards, merged, has the rows of the unsharded one:
// the same cells in the same order, the same findings (token-lua safe
// without faults, broken by a pause past its lease, by construction; every
// seed runs, as early stops depend on which run ends first).
func TestCompareShardsMergeIntoTheUnshardedComparison(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scen := tinyScenario(t, dir, "base", "token-lua", "20ms", "safe")
	args := func(more ...string) []string {
		return append([]string{"compare", "--scenario", scen, "--locks", "token-lua,set-nx-px", "--nemeses", "none,pause-client",
			"--seeds", "2", "--early-stop=false", "--duration", "12ttl"}, more...)
	}
	// What is not luck: every cell ran its seeds, and the pause broke
	// every lock (without faults, a busy machine may stall a holder past
	// its lease in one comparison and not in the other).
	found := func(c compare.Comparison) []string {
		var out []string
		for _, r := range c.Rows {
			broken := "-"
			if r.Nemesis == "pause-client" {
				broken = fmt.Sprint(r.Violations > 0)
			}
			out = append(out, fmt.Sprintf("%s status=%s seeds=%d broken=%s", r.Dir, r.Status, r.Seeds, broken))
		}
		return out
	}
	stdout, stderr, code := lockchaos(t, args("--out", filepath.Join(dir, "whole"))...)
	if code != 0 {
		t.Fatalf("compare: exit %d\n%s%s", code, stdout, stderr)
	}
	whole, err := compare.Read(filepath.Join(dir, "whole"))
	if err != nil {
		t.Fatal(err)
	}
	var shards []string
	for _, sh := range []string{"1/2", "2/2"} {
		out := filepath.Join(dir, "shard-"+sh[:1])
		shards = append(shards, out)
		if stdout, stderr, code := lockchaos(t, args("--shard", sh, "--out", out)...); code != 0 {
			t.Fatalf("compare --shard %s: exit %d\n%s%s", sh, code, stdout, stderr)
		}
		c, err := compare.Read(out)
		if err != nil {
			t.Fatal(err)
		}
		if c.Shard == nil || c.Shard.String() != sh || len(c.Rows) != 2 {
			t.Errorf("shard %s: compare.json records shard %v and %d rows; want the shard and 2 of the 4 cells", sh, c.Shard, len(c.Rows))
		}
	}
	merged := filepath.Join(dir, "merged")
	if stdout, stderr, code := lockchaos(t, "merge", "--out", merged, shards[0], shards[1]); code != 0 {
		t.Fatalf("merge: exit %d\n%s%s", code, stdout, stderr)
	}
	m, err := compare.Read(merged)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := found(m), found(whole); !slices.Equal(got, want) || !strings.Contains(strings.Join(got, "\n"), "set-nx-px+pause-client status=ran seeds=2 broken=true") {
		t.Errorf("the merged shards found otherwise than the whole comparison:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, r := range m.Rows {
		for _, run := range r.Runs {
			if _, err := os.Stat(filepath.Join(merged, run.Dir, "result.json")); err != nil {
				t.Errorf("the merge did not bring the run %s: %v", run.Dir, err)
			}
		}
	}
	for _, f := range []string{compare.CSVFile, compare.IndexFile} {
		if _, err := os.Stat(filepath.Join(merged, f)); err != nil {
			t.Errorf("the merge wrote no %s: %v", f, err)
		}
	}
	if _, stderr, code := lockchaos(t, "merge", "--out", filepath.Join(dir, "part"), shards[1]); code != ExitMatrixIncomplete || !strings.Contains(stderr, "shard 1/2 missing") {
		t.Errorf("merge of shard 2/2 alone: exit %d, want %d naming 1/2\n%s", code, ExitMatrixIncomplete, stderr)
	}
	other := filepath.Join(dir, "other")
	if stdout, stderr, code := lockchaos(t, args("--seed", "7", "--shard", "2/2", "--out", other)...); code != 0 {
		t.Fatalf("compare --seed 7 --shard 2/2: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, stderr, code := lockchaos(t, "merge", "--out", filepath.Join(dir, "mixed"), shards[0], other); code != ExitUsage || !strings.Contains(stderr, "are shards of different configurations") {
		t.Errorf("merge of shards of two comparisons: exit %d, want %d\n%s", code, ExitUsage, stderr)
	}
	if _, stderr, code := lockchaos(t, "merge", "--out", filepath.Join(dir, "mixed"), "--junit", filepath.Join(dir, "j.xml"), shards[0], shards[1]); code != ExitUsage || !strings.Contains(stderr, "--junit: not for compare shards") {
		t.Errorf("merge --junit of a comparison: exit %d, want %d\n%s", code, ExitUsage, stderr)
	}
}
