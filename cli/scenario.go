package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/option"
	"github.com/lockchaos/lockchaos/scenarios"
	"github.com/lockchaos/lockchaos/settings"
)

// applyScenario replaces cfg with the run of the scenario at path (a file,
// or the name of a built-in one), then
// applies on top the flags of `run` that were given explicitly, so that
// `run --scenario F --seed 7` changes only the seed. Flags bound to cfg are
// re-applied through the flag set itself, so a flag added to `run` later
// overrides its field without a change here; --nemesis, --opt and --seed,
// which cmdRun interprets itself, are merged here.
func applyScenario(fs *flag.FlagSet, cfg *settings.Run, path, nemeses string, opts map[string]map[string]string, seed int64) (scenarios.Scenario, error) {
	given := map[string]string{}
	var order []string
	fs.Visit(func(f *flag.Flag) {
		given[f.Name] = f.Value.String()
		order = append(order, f.Name)
	})
	s, err := scenarios.Load(path) // a file, or a built-in scenario's name
	if err != nil {
		return s, err
	}
	*cfg = s.RunConfig(false)
	for _, name := range order {
		switch name {
		case "scenario", "nemesis", "opt", "seed", "lock-file":
			continue
		}
		if err := fs.Set(name, given[name]); err != nil {
			return s, fmt.Errorf("--%s: %w", name, err)
		}
	}
	if _, ok := given["nemesis"]; ok {
		cfg.Nemeses = strings.Split(nemeses, ",")
		cfg.Replay = nil // the file's steps were for its own nemeses: these draw their own
		for n := range cfg.NemesisOptions {
			if !slices.Contains(cfg.Nemeses, n) {
				delete(cfg.NemesisOptions, n) // options of a nemesis the flag dropped
			}
		}
	}
	if _, ok := given["lock"]; ok && cfg.Lock != s.Config.Lock {
		cfg.LockOptions = nil // the scenario's options were for its own lock
	}
	for owner, kv := range opts {
		if owner == cfg.Lock {
			cfg.LockOptions = option.Merged(cfg.LockOptions, kv)
			continue
		}
		if cfg.NemesisOptions == nil {
			cfg.NemesisOptions = map[string]map[string]string{}
		}
		cfg.NemesisOptions[owner] = option.Merged(cfg.NemesisOptions[owner], kv)
	}
	if _, ok := given["seed"]; ok {
		cfg.Seed = seed
	}
	if why := s.Unavailable(); why != "" && !flagsReplace(given, why) {
		return s, fmt.Errorf("scenario %s cannot run in this build: %s (see `lockchaos list`)", s.Name, why)
	}
	return s, nil
}

// flagsReplace reports whether the flags replaced what made the scenario
// unavailable (--lock or --nemesis naming something this build has).
func flagsReplace(given map[string]string, why string) bool {
	_, lock := given["lock"]
	_, nem := given["nemesis"]
	return (lock && strings.HasPrefix(why, "lock ")) || (nem && strings.HasPrefix(why, "nemesis "))
}

// afterRun writes the run's HTML report and, for a scenario, says whether
// the verdict is the one it expects, and returns the command's exit code:
// code (the verdict's), or ExitInconclusive when the run is no evidence
// either way about what the scenario expects (scenarios.Expectation.Assess,
// the rule of chaos, compare and audit: a violation that only a stall of
// the harness made, say). The verdict line printed before stays as it is.
// err is the run's (or check's): a result it says was not saved
// (*checker.UnsavedError) gets no page, since the folder's result.json, if
// any, is an older one.
func afterRun(w io.Writer, dir string, res checker.Result, err error, s *scenarios.Scenario, code int) int {
	if res.Verdict == "" {
		return code
	}
	if line := perHour(res); line != "" {
		fmt.Fprintln(w, line)
	}
	if unsaved := (*checker.UnsavedError)(nil); errors.As(err, &unsaved) {
		// The verdict line said so: no page of it either.
	} else if page, err := writeRunReport(dir); err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos: HTML report:", err)
	} else {
		fmt.Fprintf(w, "report: %s\n", page)
	}
	if s == nil || s.Expect.Verdict == "" {
		return code // no scenario, or one that expects nothing
	}
	switch status, why := s.Expect.Assess(res, len(res.Nemesis) > 0); status {
	case scenarios.StatusMatch:
		fmt.Fprintf(w, "scenario %s expects %s: as expected\n", s.Name, s.Expect)
	case scenarios.StatusInconclusive:
		fmt.Fprintf(w, "scenario %s expects %s: no evidence: %s\n", s.Name, s.Expect, why)
		if code != ExitSetup {
			code = ExitInconclusive
		}
	default:
		fmt.Fprintf(w, "scenario %s expects %s: NOT as expected (%s)\n", s.Name, s.Expect, why)
	}
	return code
}

// soakLength is how long a workload must run for its violations to be
// counted per hour.
const soakLength = 5 * time.Minute

// perHour tells a long run's violations (incidents: overlaps of one key
// that touch in time) per hour of workload, with the time of each listed
// one; "" for a shorter run.
func perHour(res checker.Result) string {
	ran := time.Duration(res.WorkloadMs * float64(time.Millisecond))
	if ran < soakLength {
		return ""
	}
	n := res.Mutex.IncidentCount
	line := fmt.Sprintf("violations: %d in %s of workload, %.1f per hour", n, ran.Round(time.Second), float64(n)/ran.Hours())
	if n == 0 {
		return line
	}
	var at []string
	for _, in := range res.Mutex.Incidents {
		at = append(at, checker.Seconds(in.StartMs))
	}
	more := ""
	if n > len(at) {
		more = fmt.Sprintf(" (the first %d; the report and history.jsonl have all)", len(at))
	}
	return line + "; at t=" + strings.Join(at, ", ") + more
}
