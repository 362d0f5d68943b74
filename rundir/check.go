package rundir

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/lockchaos/lockchaos/checker"
)

// Check re-reads DIR/history.jsonl, checks it, and writes DIR/result.json.
// A result it could not write (a read-only folder, a full disk) is still
// returned, with an *UnsavedError: the verdict stands, only its file is
// missing.
func Check(dir string, timeout time.Duration) (checker.Result, error) {
	res, err := checker.CheckFile(filepath.Join(dir, HistoryFile), checker.Options{Timeout: timeout})
	if err != nil {
		return checker.Result{}, err
	}
	res.Reproduce = Reproduce(dir)
	path := filepath.Join(dir, ResultFile)
	if err := WriteJSON(path, res); err != nil {
		return res, &UnsavedError{Path: path, Err: err}
	}
	return res, nil
}

// ResultFile is a run's result, in its folder.
const ResultFile = "result.json"

// UnsavedError says that a result was decided but its file at Path could
// not be written: the verdict is to be told all the same, and Path not
// named as if it held it.
type UnsavedError struct {
	Path string
	Err  error
}

func (e *UnsavedError) Error() string {
	err := e.Err
	if inner := errors.Unwrap(err); inner != nil {
		err = inner // WriteJSON's "write result.json:" says what Path says
	}
	return fmt.Sprintf("%s not saved (%v)", e.Path, err)
}

func (e *UnsavedError) Unwrap() error { return e.Err }
