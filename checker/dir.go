package checker

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lockchaos/lockchaos/rundir"
)

// CheckDir re-reads DIR/history.jsonl, checks it, and writes DIR/result.json.
// A result it could not write (a read-only folder, a full disk) is still
// returned, with an *UnsavedError: the verdict stands, only its file is
// missing.
func CheckDir(dir string, timeout time.Duration) (Result, error) {
	res, err := CheckFile(filepath.Join(dir, rundir.HistoryFile), Options{Timeout: timeout})
	if err != nil {
		return Result{}, err
	}
	res.Reproduce = reproduce(dir)
	path := filepath.Join(dir, rundir.ResultFile)
	if err := rundir.WriteJSON(path, res); err != nil {
		return res, &UnsavedError{Path: path, Err: err}
	}
	return res, nil
}

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

// reproduce says how to make the run in dir again, for its result.json:
// the version of lockchaos, the replay command, and the configuration and
// fault schedule it ran with. Nil when dir holds no config.json (a history
// only checked).
func reproduce(dir string) *Reproduce {
	cfg, err := os.ReadFile(filepath.Join(dir, rundir.ConfigFile))
	if err != nil || !json.Valid(cfg) {
		return nil
	}
	r := &Reproduce{Version: rundir.Version(), Config: json.RawMessage(cfg)}
	if s, err := os.ReadFile(filepath.Join(dir, rundir.ScheduleFile)); err == nil && json.Valid(s) {
		r.Schedule = json.RawMessage(s)
	}
	r.Command = rundir.ReplayCommand(rundir.Program(), dir)
	return r
}
