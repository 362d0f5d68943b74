package cli

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lockchaos/lockchaos/runner"
	"github.com/lockchaos/lockchaos/scenarios"
)

// cmdChaos runs the catalogue and compares each verdict with its
// expectation. It exits 0 only when all match.
func cmdChaos(args []string) int {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "run only the quick scenarios")
	out := fs.String("out", "", "output directory (default results/<time>)")
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	if *out == "" {
		*out = filepath.Join("results", time.Now().Format("20060102-150405"))
	}
	var todo []scenarios.Scenario
	for _, s := range scenarios.Catalogue() {
		if !*quick || s.Quick {
			todo = append(todo, s)
		}
	}
	ctx, stop := signalContext()
	defer stop()
	start := time.Now()
	type row struct {
		name, expect, got, summary string
		ok                         bool
	}
	var rows []row
	failed := 0
	for i, s := range todo {
		cfg := s.Config
		cfg.Out = filepath.Join(*out, s.Name)
		fmt.Fprintf(os.Stderr, "[%d/%d %s] %s: %s + %s …\n", i+1, len(todo), time.Since(start).Round(time.Second), s.Name, cfg.Lock, nemesisList(cfg.Nemeses))
		res, err := runner.Run(ctx, cfg)
		r := row{name: s.Name, expect: string(s.Expect), got: string(res.Verdict), summary: res.Summary}
		if s.ExpectDeadlock {
			r.expect += "+deadlock"
			if len(res.Liveness.DeadlockedKeys) > 0 {
				r.got += "+deadlock"
			}
		}
		switch {
		case err != nil:
			r.got, r.summary = "error", err.Error()
		default:
			r.ok = r.got == r.expect
		}
		if !r.ok {
			failed++
		}
		fmt.Fprintf(os.Stderr, "    → %s (%s)\n", r.got, map[bool]string{true: "as expected", false: "EXPECTED " + r.expect}[r.ok])
		rows = append(rows, r)
		if ctx.Err() != nil {
			break
		}
	}
	fmt.Printf("\n%-32s %-18s %-18s %s\n", "SCENARIO", "EXPECTED", "GOT", "")
	for _, r := range rows {
		mark := "ok"
		if !r.ok {
			mark = "MISMATCH"
		}
		fmt.Printf("%-32s %-18s %-18s %s\n", r.name, r.expect, r.got, mark)
	}
	fmt.Printf("\n%d of %d scenarios as expected in %s; runs in %s\n", len(rows)-failed, len(todo), time.Since(start).Round(time.Second), *out)
	if failed > 0 || len(rows) < len(todo) {
		for _, r := range rows {
			if !r.ok {
				fmt.Printf("  %s: %s\n", r.name, r.summary)
			}
		}
		return 1
	}
	return 0
}
