package cli

import (
	"encoding/csv"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/compare"
)

// TestCompareOnRealRedis compares token-lua without faults and under a
// client pause past its lease, on real Redis: the pause breaks it by
// construction (the paused holder writes after its lease ran out and
// another client took the lock), the run without faults does not. Then
// --rerun repeats the comparison from its folder alone.
func TestCompareOnRealRedis(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scen := tinyScenario(t, dir, "base", "token-lua", "20ms", "safe")
	out := filepath.Join(dir, "cmp")
	stdout, stderr, code := lockchaos(t, "compare", "--scenario", scen, "--locks", "token-lua", "--nemeses", "none,pause-client",
		"--seeds", "2", "--min-seeds", "1", "--duration", "12ttl", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "[cell ") || !strings.Contains(stderr, "ETA") {
		t.Errorf("no progress lines:\n%s", stderr)
	}
	c, err := compare.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) != 2 {
		t.Fatalf("%d rows, want 2", len(c.Rows))
	}
	none, pause := c.Rows[0], c.Rows[1]
	if none.Nemesis != "none" || none.Violations != 0 || none.Seeds != 2 {
		t.Errorf("token-lua without faults: %d violations in %d seeds (%d inconclusive), want none in 2", none.Violations, none.Seeds, none.Inconclusive)
	}
	if pause.Violations < 1 || pause.CILow == nil || *pause.CILow <= 0 || pause.TTFVMedianTTL == nil {
		t.Errorf("token-lua under pause-client: %d violations in %d seeds (%d inconclusive), want at least one with its time", pause.Violations, pause.Seeds, pause.Inconclusive)
	}
	for _, r := range c.Rows {
		for _, run := range r.Runs {
			for _, f := range []string{"result.json", "report.html"} {
				if _, err := os.Stat(filepath.Join(out, run.Dir, f)); err != nil {
					t.Errorf("%s: %v", r.Dir, err)
				}
			}
		}
	}
	f, err := os.Open(filepath.Join(out, compare.CSVFile))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(recs) != 3 || recs[0][0] != "lock" {
		t.Errorf("compare.csv: %v, %d records", err, len(recs))
	}
	if b, err := os.ReadFile(filepath.Join(out, compare.IndexFile)); err != nil || !strings.Contains(html.UnescapeString(string(b)), `href="`+pause.Runs[0].Dir+`/report.html"`) {
		t.Errorf("index.html does not link the runs as %s/report.html (%v):\n%s", pause.Runs[0].Dir, err, b)
	}

	// --rerun takes nothing but the folder; another --flag is refused.
	if _, stderr, code := lockchaos(t, "compare", "--rerun", out, "--seeds", "3"); code != ExitUsage || !strings.Contains(stderr, "drop --seeds") {
		t.Errorf("--rerun with --seeds: exit %d, %s", code, stderr)
	}
	out2 := filepath.Join(dir, "cmp2")
	if stdout, stderr, code := lockchaos(t, "compare", "--rerun", out, "--out", out2); code != 0 {
		t.Fatalf("--rerun: exit %d\n%s\n%s", code, stdout, stderr)
	}
	c2, err := compare.Read(out2)
	if err != nil {
		t.Fatal(err)
	}
	if len(c2.Cells) != len(c.Cells) || c2.Spec.Seeds != c.Spec.Seeds || c2.Cells[1].Config.Duration != c.Cells[1].Config.Duration || c2.Cells[1].Config.Hold != c.Cells[1].Config.Hold {
		t.Errorf("the rerun is not the same comparison: %+v\nvs %+v", c2.Spec, c.Spec)
	}
	if c2.Rows[1].Violations < 1 {
		t.Errorf("the rerun's pause-client cell: %d violations", c2.Rows[1].Violations)
	}
}

func TestCompareRefusesBadInputNamingTheFlag(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--locks", "tokn-lua"}, "--locks: "},
		{[]string{"--locks", "token-lua", "--nemeses", "pause"}, "--nemeses: "},
		{[]string{"--locks", "token-lua", "--seeds", "0"}, "--seeds 0"},
		{[]string{"--locks", "token-lua", "--ttl", "2ttl"}, "--ttl 2ttl: want a plain duration"},
		{[]string{"--locks", "token-lua", "--hold", "300"}, "--hold 300: "},
		{[]string{"--nemeses", "none"}, "--locks: give at least one lock"},
		{[]string{"--locks", "token-lua,token-lua"}, "listed twice"},
		// One column with two options: the second is checked as its own.
		{[]string{"--locks", "token-lua", "--nemeses", "none,crash-restart:persistence=always,dela=1.5ttl"}, `--nemeses: crash-restart has no option "dela"`},
		{[]string{"--rerun", "/nonexistent"}, "--rerun: "},
	} {
		_, stderr, code := lockchaos(t, append([]string{"compare", "--out", t.TempDir()}, c.args...)...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("compare %v: exit %d, %q; want %d and %q", c.args, code, stderr, ExitUsage, c.want)
		}
	}
}
