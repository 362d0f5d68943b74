package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// runFiles is what a run writes in its folder (the report's files too).
var runFiles = []string{"history.jsonl", "result.json", ConfigFile, ScheduleFile, "report.html", "porcupine.html", "workers", "nodes", "sentinels"}

// claimOut makes dir ready for a new run. A folder that already holds a run
// is refused unless force: its evidence would be overwritten, and a new run
// that failed at setup would leave the old verdict beside a new, empty
// history. With force the old run's files are removed first, so nothing of
// it survives to be mistaken for the new one's.
func claimOut(dir string, force bool) error {
	var found []string
	for _, f := range runFiles {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			found = append(found, f)
		}
	}
	if len(found) == 0 {
		return nil
	}
	if !force {
		return usage("--out %s already holds a run (%s): choose another folder, or give --force to replace it", dir, strings.Join(found, ", "))
	}
	var errs []error
	for _, f := range found {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, f)))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("--force: remove the earlier run in %s: %w", dir, err)
	}
	return nil
}
