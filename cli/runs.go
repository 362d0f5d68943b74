package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

const runsUsage = `Usage: lockchaos runs [--dir DIR] [--all]

Lists the past runs, matrices and comparisons under DIR (results/), newest
first: when, what (run, chaos, compare), the verdict or outcome, the lock
and nemesis, and the folder. results/latest is the newest of them.
`

// pastRun is one folder of results, as runs lists it.
type pastRun struct {
	dir, kind, outcome, what string
	when                     time.Time
}

func cmdRuns(args []string) int {
	fs := newFlags("runs")
	dir := fs.String("dir", resultsDir, "the folder that holds the runs' folders")
	all := fs.Bool("all", false, "list every run (default: the newest 20)")
	if code, ok := parse(fs, runsUsage, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "lockchaos runs: unexpected argument %q (--dir DIR names the folder)\n", fs.Arg(0))
		return ExitUsage
	}
	runs, err := pastRuns(*dir)
	if errors.Is(err, os.ErrNotExist) && *dir == resultsDir {
		runs, err = nil, nil // nothing run here yet
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos runs:", err)
		return ExitUsage
	}
	listRuns(os.Stdout, runs, *all)
	return 0
}

// pastRuns reads the folders of dir that hold a run (result.json), a
// matrix (summary.json) or a comparison (compare.json), newest first.
func pastRuns(dir string) ([]pastRun, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%w (give --dir the folder your runs were written to)", err)
	}
	var out []pastRun
	for _, e := range entries {
		if !e.IsDir() || e.Name() == "latest" {
			continue
		}
		if r, ok := readPastRun(filepath.Join(dir, e.Name())); ok {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].when.After(out[j].when) })
	return out, nil
}

func readPastRun(dir string) (pastRun, bool) {
	read := func(name string, v any) (time.Time, bool) {
		p := filepath.Join(dir, name)
		st, err := os.Stat(p)
		if err != nil {
			return time.Time{}, false
		}
		b, err := os.ReadFile(p)
		if err != nil || json.Unmarshal(b, v) != nil {
			return time.Time{}, false
		}
		return st.ModTime(), true
	}
	var run struct {
		Verdict string   `json:"verdict"`
		Lock    string   `json:"lock"`
		Nemesis []string `json:"nemesis"`
	}
	if when, ok := read("result.json", &run); ok {
		nem := strings.Join(run.Nemesis, ",")
		if nem == "" {
			nem = "none"
		}
		return pastRun{dir: dir, kind: "run", outcome: run.Verdict, what: run.Lock + " + " + nem, when: when}, true
	}
	var matrix struct {
		Passed  bool     `json:"passed"`
		Outcome string   `json:"outcome"`
		Locks   []string `json:"locks"`
		Nemeses []string `json:"nemeses"`
		Cells   []any    `json:"cells"`
	}
	if when, ok := read("summary.json", &matrix); ok {
		outcome := matrix.Outcome
		if outcome == "" {
			outcome = map[bool]string{true: "passed", false: "failed"}[matrix.Passed]
		}
		return pastRun{dir: dir, kind: "chaos", outcome: outcome, when: when,
			what: fmt.Sprintf("%d cells, %d locks × %d nemeses", len(matrix.Cells), len(matrix.Locks), len(matrix.Nemeses))}, true
	}
	var cmp map[string]any
	if when, ok := read("compare.json", &cmp); ok {
		return pastRun{dir: dir, kind: "compare", outcome: "-", what: "", when: when}, true
	}
	return pastRun{}, false
}

func listRuns(w io.Writer, runs []pastRun, all bool) {
	if len(runs) == 0 {
		fmt.Fprintln(w, "no runs yet: lockchaos run --lock token-lua --nemesis pause-client makes one")
		return
	}
	shown := runs
	if !all && len(shown) > 20 {
		shown = shown[:20]
	}
	for _, r := range shown {
		report := filepath.Join(r.dir, "report.html")
		if r.kind != "run" {
			report = filepath.Join(r.dir, "index.html")
		}
		if _, err := os.Stat(report); err != nil {
			report = r.dir
		}
		fmt.Fprintf(w, "%s  %-7s  %-12s  %-40s  %s\n", r.when.Format("2006-01-02 15:04"), r.kind, r.outcome, strings.TrimSpace(r.what), report)
	}
	if len(shown) < len(runs) {
		fmt.Fprintf(w, "(%d older: lockchaos runs --all)\n", len(runs)-len(shown))
	}
}
