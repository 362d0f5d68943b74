package rundir

import (
	"path/filepath"
	"time"

	"github.com/lockchaos/lockchaos/checker"
)

// Check re-reads DIR/history.jsonl, checks it, and writes DIR/result.json.
func Check(dir string, timeout time.Duration) (checker.Result, error) {
	res, err := checker.CheckFile(filepath.Join(dir, "history.jsonl"), checker.Options{Timeout: timeout})
	if err != nil {
		return checker.Result{}, err
	}
	res.Reproduce = Reproduce(dir)
	return res, WriteJSON(filepath.Join(dir, "result.json"), res)
}
