package checker

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestOldHistoriesKeepTheirVerdict checks histories recorded by earlier
// versions of lockchaos, one of each schema the run-start and the events
// have had (testdata/schemas/NAME: history.jsonl, and recorded.json: the
// commit that recorded it, the command, and the verdict its own checker
// gave): the foundation's (985fd9d: no stalls, no fault effects or aims),
// the first with faults that land by construction (6fca641: effects, aims,
// tokens), typed fault actions (4c5ccd6), the stores' (506f455); the
// current schema is testdata/*'s. Two say nemesis "none" in their
// run-start (a run without faults, then as now): 506f455's plain run and
// testdata/safe-no-fault, with only that field changed (each binary above
// wrote [] for --nemesis none). A history keeps the verdict it was
// recorded with, whatever the checker has learned since.
func TestOldHistoriesKeepTheirVerdict(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "schemas", "*", "history.jsonl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no recorded histories in testdata/schemas: %v", err)
	}
	for _, path := range paths {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, "recorded.json"))
			if err != nil {
				t.Fatal(err)
			}
			var rec struct {
				Commit  string  `json:"commit"`
				Verdict Verdict `json:"verdict"`
			}
			if err := json.Unmarshal(b, &rec); err != nil || rec.Verdict == "" {
				t.Fatalf("recorded.json: %v %s", err, b)
			}
			res, err := CheckFile(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != rec.Verdict {
				t.Errorf("recorded at %s as %s, now %s: %s", rec.Commit, rec.Verdict, res.Verdict, res.Summary)
			}
		})
	}
}
