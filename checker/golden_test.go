package checker

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockchaos/lockchaos/history"
)

var update = flag.Bool("update", false, "rewrite checker/testdata/*/result.json from the checker's answers")

// TestDataReports checks histories recorded from real runs (testdata/NAME/
// history.jsonl: violations, safe runs with faults that landed, a deadlock,
// a history cut off by a killed coordinator) against the result the checker
// gave when they were recorded and reviewed (testdata/NAME/result.json), in
// the way of etcd's robustness reports. A change to the checker that changes
// any of them shows up here; `go test ./checker -run TestDataReports
// -update` rewrites the expectations, to be reviewed in the diff.
func TestDataReports(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "*", "history.jsonl"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no recorded histories in testdata: %v", err)
	}
	for _, path := range dirs {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			events, cut, err := history.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got := golden(Check(events, Options{CutOff: cut}))
			// The file read as a stream gives the same answer.
			fromFile, err := CheckFile(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if streamed := golden(fromFile); string(streamed) != string(got) {
				t.Errorf("CheckFile and Check disagree on %s:\nCheckFile:\n%s\nCheck:\n%s", path, streamed, got)
			}
			want := filepath.Join(dir, "result.json")
			if *update {
				if err := os.WriteFile(want, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			b, err := os.ReadFile(want)
			if err != nil {
				t.Fatalf("%v (run with -update to record it, then review it)", err)
			}
			if string(b) != string(got) {
				t.Errorf("the checker's answer for %s changed; review with -update and git diff.\ngot:\n%s", dir, got)
			}
		})
	}
}

// golden is r as JSON without what depends on the machine that checked it
// (how long the check took).
func golden(r Result) []byte {
	r.Mutex.CheckMs = 0
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}
