package bench

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// MatrixRow is the wall time of one `lockchaos chaos` invocation.
type MatrixRow struct {
	Command string  `json:"command"`
	Cells   int     `json:"cells"`
	Seconds float64 `json:"seconds"`
	Exit    int     `json:"exit"`
}

// Matrix runs `bin chaos args... --out out` and times it; the run folders it
// leaves are counted as cells.
func Matrix(ctx context.Context, bin string, out string, args ...string) (MatrixRow, error) {
	all := append([]string{"chaos"}, args...)
	all = append(all, "--out", out)
	cmd := exec.CommandContext(ctx, bin, all...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	start := time.Now()
	err := cmd.Run()
	row := MatrixRow{Command: "lockchaos " + strings.Join(append([]string{"chaos"}, args...), " "), Seconds: time.Since(start).Seconds()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		row.Exit = ee.ExitCode()
	case err != nil:
		return row, err
	}
	cells, _ := filepath.Glob(filepath.Join(out, "*", "history.jsonl"))
	row.Cells = len(cells)
	return row, nil
}
