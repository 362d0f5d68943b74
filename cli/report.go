package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lockchaos/lockchaos/audit"
	"github.com/lockchaos/lockchaos/checker"
	htmlreport "github.com/lockchaos/lockchaos/report"
	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/scenarios"
)

const reportUsage = `Usage: lockchaos report DIR

Renders the HTML of a stored run (DIR holds history.jsonl) or of a whole
matrix (DIR holds summary.json) again, from the files alone; for an audit
(DIR holds audit.json), its audit.md, audit.html and audit.json, summed up
again from its runs.
`

// cmdReport renders the HTML of a stored run (DIR holds history.jsonl), of
// a whole matrix (DIR holds summary.json) or of an audit again, from the
// files alone.
func cmdReport(args []string) int {
	fs := newFlags("report")
	if code, ok := parse(fs, reportUsage, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: lockchaos report DIR   (DIR holds a run's history.jsonl, or a matrix's summary.json)")
		return ExitUsage
	}
	dir := fs.Arg(0)
	if _, err := os.Stat(filepath.Join(dir, rundir.AuditJSONFile)); err == nil {
		return reportAudit(dir)
	}
	if _, err := os.Stat(filepath.Join(dir, scenarios.SummaryFile)); err == nil {
		sum, err := scenarios.ReadSummary(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lockchaos report:", err)
			return ExitSetup
		}
		failed := 0
		for _, c := range sum.Cells {
			if c.Dir == "" {
				continue
			}
			if _, err := os.Stat(filepath.Join(dir, c.Dir, "result.json")); err != nil {
				continue
			}
			if _, err := htmlreport.WriteRun(filepath.Join(dir, c.Dir)); err != nil {
				fmt.Fprintf(os.Stderr, "lockchaos report: %s: %v\n", c.Name, err)
				failed++
			}
		}
		index, err := writeIndex(dir, sum)
		if err != nil {
			fmt.Fprintln(os.Stderr, "lockchaos report:", err)
			return ExitSetup
		}
		fmt.Println(index)
		if failed > 0 {
			return ExitSetup
		}
		return 0
	}
	if _, err := os.Stat(filepath.Join(dir, "history.jsonl")); err != nil {
		fmt.Fprintf(os.Stderr, "lockchaos report: %s holds neither a run's history.jsonl nor a matrix's summary.json\n", dir)
		return ExitUsage
	}
	page, err := writeRunReport(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos report:", err)
		return ExitSetup
	}
	fmt.Println(page)
	return 0
}

// writeRunReport renders a run's report.html, checking its history first
// when it has no result.json yet.
func writeRunReport(dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, "result.json")); errors.Is(err, os.ErrNotExist) {
		if _, err := checker.CheckDir(dir, 0); err != nil {
			return "", err
		}
	}
	return htmlreport.WriteRun(dir)
}

func writeIndex(dir string, sum scenarios.Summary) (string, error) {
	return htmlreport.WriteIndex(dir, sum)
}

// reportAudit sums the audit in dir up again, with the grid's expectations
// as this build has them, and renders its pages.
func reportAudit(dir string) int {
	old, err := audit.Read(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos report:", err)
		return ExitSetup
	}
	g, err := scenarios.LoadGrid()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos report:", err)
		return ExitSetup
	}
	if _, err := audit.Rerender(dir, g.Expect[old.Spec.Lock]); err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos report:", err)
		return ExitSetup
	}
	fmt.Println(filepath.Join(dir, rundir.AuditHTMLFile))
	return 0
}
