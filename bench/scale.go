package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/history"
)

// ScaleRow is the checker on one synthetic history (checker.Synthetic), in
// a process of its own so that its peak RSS is the check's alone.
type ScaleRow struct {
	// Mode is "stream" (the streaming checker fed the history as it is
	// made, as CheckFile feeds it from a file) or "memory" (the whole
	// history held, then checker.Check: what the checker cost before).
	Mode      string  `json:"mode"`
	Ops       int     `json:"ops"`
	Keys      int     `json:"keys"`
	Clients   int     `json:"clients"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	// PeakRSSMiB is the process's maximum resident set (getrusage).
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	Verdict    string  `json:"verdict"`
}

// ScaleChildEnv makes a lockchaos-bench process run one ScaleRow and print
// it as JSON: "MODE OPS KEYS CLIENTS".
const ScaleChildEnv = "LOCKCHAOS_BENCH_SCALE"

// RunScaleChild measures the row ScaleChildEnv asks for, in this process.
func RunScaleChild(spec string) error {
	var row ScaleRow
	if _, err := fmt.Sscan(spec, &row.Mode, &row.Ops, &row.Keys, &row.Clients); err != nil {
		return fmt.Errorf("%s=%q: %w", ScaleChildEnv, spec, err)
	}
	start := time.Now()
	var res checker.Result
	switch row.Mode {
	case "stream":
		s := checker.NewStream(checker.Options{})
		checker.Synthetic(row.Ops, row.Clients, row.Keys, 1, s.Add)
		res = s.Result()
	case "memory":
		var events []history.Event
		checker.Synthetic(row.Ops, row.Clients, row.Keys, 1, func(e history.Event) { events = append(events, e) })
		res = checker.Check(events, checker.Options{})
	default:
		return fmt.Errorf("%s: unknown mode %q", ScaleChildEnv, row.Mode)
	}
	row.Seconds = time.Since(start).Seconds()
	row.OpsPerSec = float64(row.Ops) / row.Seconds
	row.Verdict = string(res.Verdict)
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		row.PeakRSSMiB = float64(ru.Maxrss) / 1024 // kB on Linux
	}
	return json.NewEncoder(os.Stdout).Encode(row)
}

// Scale measures each row in a child process (self is this executable).
func Scale(self string, rows []ScaleRow) ([]ScaleRow, error) {
	var out []ScaleRow
	for _, r := range rows {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d %d", ScaleChildEnv, r.Mode, r.Ops, r.Keys, r.Clients))
		cmd.Stderr = os.Stderr
		b, err := cmd.Output()
		if err != nil {
			return out, fmt.Errorf("checker scale %s %d ops: %w", r.Mode, r.Ops, err)
		}
		var got ScaleRow
		if err := json.Unmarshal(b, &got); err != nil {
			return out, fmt.Errorf("checker scale %s %d ops: %w (%s)", r.Mode, r.Ops, err, b)
		}
		out = append(out, got)
	}
	return out, nil
}

// maxRSSMiB is a finished child's peak resident set.
func maxRSSMiB(ps *os.ProcessState) float64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return float64(ru.Maxrss) / 1024
	}
	return 0
}
