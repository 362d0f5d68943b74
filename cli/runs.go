package cli

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/compare"
	"github.com/lockchaos/lockchaos/rundir"
)

const runsUsage = `Usage: lockchaos runs [--dir DIR] [--all]

Lists the past runs, matrices, comparisons and audits under DIR
(results/), newest first: when, what (run, chaos, compare, audit), the
verdict or outcome, the lock and nemesis, and the folder. A run that ended
without a result (it could not be set up, or its result could not be
written) is listed as failed, with its folder and logs (so is a run still
under way, until it writes its result). results/latest is
the newest folder with a result. The committed baseline (a summary without
a start time, results/baseline) is not a run and is not listed.
`

// pastRun is one folder of results, as runs lists it.
type pastRun struct {
	dir, kind, outcome, what string
	when                     time.Time
	// failed: a run that ended without a result (no result.json).
	failed bool
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

// readPastRun reads what dir holds: a run's result.json, a matrix's
// summary.json (not the committed baseline's: no run), an audit's
// audit.json or a comparison's compare.json; else, for a run folder
// without its result (config.json or history.jsonl, no result.json), a
// failed run.
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
		return pastRun{dir: dir, kind: "run", outcome: run.Verdict, what: run.Lock + " + " + nemesisList(run.Nemesis), when: when}, true
	}
	var matrix struct {
		Started string   `json:"started"`
		Passed  bool     `json:"passed"`
		Outcome string   `json:"outcome"`
		Locks   []string `json:"locks"`
		Nemeses []string `json:"nemeses"`
		Cells   []any    `json:"cells"`
	}
	if when, ok := read("summary.json", &matrix); ok {
		if matrix.Started == "" {
			return pastRun{}, false // the baseline (Summary.Stable): outcomes, no run
		}
		outcome := matrix.Outcome
		if outcome == "" {
			outcome = map[bool]string{true: "passed", false: "failed"}[matrix.Passed]
		}
		return pastRun{dir: dir, kind: "chaos", outcome: outcome, when: when,
			what: fmt.Sprintf("%d cells, %d locks × %d nemeses", len(matrix.Cells), len(matrix.Locks), len(matrix.Nemeses))}, true
	}
	var au struct {
		Spec struct {
			Lock string `json:"lock"`
		} `json:"spec"`
	}
	if when, ok := read(rundir.AuditJSONFile, &au); ok {
		return pastRun{dir: dir, kind: "audit", outcome: "-", what: au.Spec.Lock, when: when}, true
	}
	var comparison map[string]any
	if when, ok := read("compare.json", &comparison); ok {
		return pastRun{dir: dir, kind: "compare", outcome: "-", what: "", when: when}, true
	}
	var margin struct {
		Spec struct {
			Locks   []string `json:"locks"`
			Nemeses []string `json:"nemeses"`
		} `json:"spec"`
	}
	if when, ok := read(compare.MarginJSONFile, &margin); ok {
		return pastRun{dir: dir, kind: "margin", outcome: "-", what: strings.Join(margin.Spec.Locks, ",") + " + " + nemesisList(margin.Spec.Nemeses), when: when}, true
	}
	var cfg struct {
		Lock    string
		Nemeses []string
	}
	when, ok := read(rundir.ConfigFile, &cfg)
	if st, err := os.Stat(filepath.Join(dir, rundir.HistoryFile)); err == nil {
		when, ok = st.ModTime(), true
	}
	if !ok {
		return pastRun{}, false
	}
	what := "-"
	if cfg.Lock != "" {
		what = cfg.Lock + " + " + cmp.Or(strings.Join(cfg.Nemeses, ","), "none")
	}
	return pastRun{dir: dir, kind: "run", outcome: "failed", what: what, when: when, failed: true}, true
}

func listRuns(w io.Writer, runs []pastRun, all bool) {
	if len(runs) == 0 {
		fmt.Fprintf(w, "no runs yet: %s run --lock token-lua --nemesis pause-client makes one\n", rundir.Program())
		return
	}
	shown := runs
	if !all && len(shown) > 20 {
		shown = shown[:20]
	}
	for _, r := range shown {
		report := filepath.Join(r.dir, rundir.ReportFile)
		switch r.kind {
		case "audit":
			report = filepath.Join(r.dir, rundir.AuditHTMLFile)
		case "chaos", "compare":
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
