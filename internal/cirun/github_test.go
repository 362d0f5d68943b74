package cirun

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The runner runs a workflow's jobs as Actions does: a run per matrix
// value, each in a fresh folder that actions/checkout fills, env and
// ${{ }} put in, needs obeyed (if: always() runs after a failure), steps
// after a failed one skipped unless if: always(), artifacts passed from
// upload-artifact to download-artifact, the job summary kept; a missing
// upload fails its step; an action or expression it does not know is
// refused.
func TestRunGitHubWorkflow(t *testing.T) {
	dir := t.TempDir()
	project := filepath.Join(dir, "project")
	os.MkdirAll(project, 0o755)
	os.WriteFile(filepath.Join(project, "input"), []byte("from the repository\n"), 0o644)
	wf := filepath.Join(dir, "wf.yml")
	os.WriteFile(wf, []byte(`name: test
on: [push]
env:
  WHO: file
  N: 2
jobs:
  merge:
    needs: shard
    if: always()
    runs-on: ubuntu-latest
    steps:
      - uses: actions/download-artifact@v4
        with:
          pattern: part-*
          path: parts
      - run: |
          ls parts | tr '\n' ' ' > merged
          cat parts/*/out >> merged
          echo "merged: $(cat merged)" >> "$GITHUB_STEP_SUMMARY"
      - uses: actions/upload-artifact@v4
        with:
          name: merged
          path: merged
  shard:
    runs-on: ubuntu-latest
    strategy:
      matrix:
        shard: [1, 2]
    env:
      PART: part ${{ matrix.shard }}/${{ env.N }}
    steps:
      - uses: actions/checkout@v4
      - run: |
          mkdir out
          echo "$PART $WHO $(cat input)" > out/out
          test "${{ matrix.shard }}" = 1
      - run: echo not reached > out/late
      - if: always()
        uses: actions/upload-artifact@v4
        with:
          name: part-${{ matrix.shard }}
          path: out
`), 0o644)
	if _, err := LoadGitHub(wf, map[string]string{"NOPE": "x"}); err == nil {
		t.Error("a variable the workflow does not define: want it refused")
	}
	jobs, err := LoadGitHub(wf, map[string]string{"WHO": "test"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range jobs {
		names = append(names, j.Name)
	}
	if want := []string{"shard (1)", "shard (2)", "merge"}; !slices.Equal(names, want) {
		t.Fatalf("jobs %v, want %v", names, want)
	}
	var log bytes.Buffer
	results := Run(jobs, Config{Project: project, Work: filepath.Join(dir, "work"), Log: &log})
	if failed := Failed(results); !slices.Equal(failed, []string{"shard (2)"}) {
		t.Errorf("failed %v, want shard (2)\n%s", failed, log.String())
	}
	want := "part-1 part-2 part 1/2 test from the repository\npart 2/2 test from the repository\n"
	if len(results) != 3 || len(results[2].Published) != 1 {
		t.Fatalf("results %+v\n%s", results, log.String())
	}
	if b, _ := os.ReadFile(filepath.Join(results[2].Published[0], "merged")); string(b) != want {
		t.Errorf("merged %q, want %q\n%s", b, want, log.String())
	}
	if results[2].Summary != "merged: "+want {
		t.Errorf("summary %q", results[2].Summary)
	}
	if _, err := os.Stat(filepath.Join(results[1].Dir, "out", "late")); err == nil {
		t.Error("a step after a failed one ran")
	}
	if _, err := os.Stat(filepath.Join(project, "out")); err == nil {
		t.Error("a job wrote into the project's folder, not its own")
	}

	for _, bad := range []string{
		"jobs:\n  a:\n    steps:\n      - uses: actions/cache@v4\n",
		"jobs:\n  a:\n    steps:\n      - uses: actions/checkout@v4\n        with:\n          submodules: true\n",
		"jobs:\n  a:\n    steps:\n      - run: echo ${{ github.sha }}\n",
		"jobs:\n  a:\n    steps:\n      - if: failure()\n        run: echo\n",
		"jobs:\n  a:\n    needs: b\n    steps:\n      - run: echo\n",
		"jobs:\n  a:\n    continue-on-error: true\n    steps:\n      - run: echo\n",
	} {
		os.WriteFile(wf, []byte(bad), 0o644)
		if _, err := LoadGitHub(wf, nil); err == nil {
			t.Errorf("want refused:\n%s", bad)
		}
	}
	os.WriteFile(wf, []byte("jobs:\n  a:\n    steps:\n      - uses: actions/upload-artifact@v4\n        with:\n          path: nothing\n"), 0o644)
	jobs, _ = LoadGitHub(wf, nil)
	if failed := Failed(Run(jobs, Config{Project: project, Work: filepath.Join(dir, "work2"), Log: &log})); len(failed) != 1 {
		t.Errorf("an upload of a missing path: failed %v, want the job failed", failed)
	}
}
