// Package rundir is a run's folder: the names of the files a run writes
// there (and of those a shrink and an audit write in theirs), the atomic
// writer, the claim of a folder for a run, and the commands printed to
// make a run again (Program, ReplayCommand). It imports nothing of
// lockchaos but internal helpers, so every package may import it: the
// runner writes a run folder; the checker (CheckDir), the report, the
// shrinker and compare read one.
package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	_ "github.com/lockchaos/lockchaos/internal/linuxonly" // syscall.Flock
)

// ScheduleFile is the fault schedule a run executed, in its folder: every
// step of every nemesis, with the fault it became or why it was missed.
// `lockchaos run --replay DIR` takes the same steps again.
const ScheduleFile = "schedule.json"

// ConfigFile is the run's whole configuration, in its folder, as it ran
// (defaults filled in): what --replay starts from.
const ConfigFile = "config.json"

// WriteJSON writes v to path as indented JSON, whole or not at all.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	// Whole or not at all: written beside, then renamed over path, so that
	// a full disk leaves no half file for a reader to choke on.
	tmp := path + ".tmp"
	err = os.WriteFile(tmp, append(b, '\n'), 0o644)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// Version is this build's version: its module version, or the VCS
// revision it was built from ("(modified)" when the tree had changes).
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(no build information)"
	}
	version := bi.Main.Version
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = " (modified)"
			}
		}
	}
	if rev != "" && !strings.Contains(version, rev[:min(12, len(rev))]) {
		version += " " + rev[:min(12, len(rev))] + modified
	}
	return strings.TrimSpace(version)
}

// File names a run's report adds to its folder.
const (
	ReportFile    = "report.html"
	PorcupineFile = "porcupine.html"
)

// Files is what a run writes in its folder (the report's files too).
var Files = []string{HistoryFile, ResultFile, ConfigFile, ScheduleFile, ReportFile, PorcupineFile, "workers", "nodes", "sentinels"}

// Claim makes dir ready for a new run and claims it, for as long as the
// run lasts: the returned claim holds an flock(2) on dir's LiveFile until
// Release, or until the process ends however it ends (the kernel lets go
// of it then, so a run that died holds nothing). A folder whose run is
// still live is refused, even with force: clearing it would delete the
// history that run is writing. A folder that holds an earlier run is
// refused unless force: its evidence would be overwritten, and a new run
// that failed at setup would leave the old verdict beside a new, empty
// history. With force the old run's files are removed first (Clear), so
// nothing of it survives to be mistaken for the new one's. history.jsonl
// is created here exclusively too.
func Claim(dir string, force bool) (*Claimed, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create output directory %s: %w", dir, err)
	}
	c, pid, err := lockLive(dir)
	if err != nil {
		return nil, fmt.Errorf("claim %s: %w", dir, err)
	}
	if c == nil {
		return nil, &HeldError{Dir: dir, Live: true, Pid: pid}
	}
	if found := held(dir); len(found) > 0 {
		if !force {
			c.Release()
			return nil, &HeldError{Dir: dir, Found: found}
		}
		if err := Clear(dir); err != nil {
			c.Release()
			return nil, fmt.Errorf("--force: remove the earlier run in %s: %w", dir, err)
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, HistoryFile), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		c.Release()
		if errors.Is(err, fs.ErrExist) {
			return nil, &HeldError{Dir: dir, Found: []string{HistoryFile}}
		}
		return nil, fmt.Errorf("claim %s: %w", dir, err)
	}
	return c, nil
}

// LiveFile, in a run's folder, is what the live run holds its flock on
// (Claim); it holds the run's process id, for the message of a run
// refused the folder. Release removes it.
const LiveFile = ".run.lock"

// Claimed is a live run's hold of its folder (Claim).
type Claimed struct{ f *os.File }

// Release lets go of the folder: its LiveFile is removed while still
// locked (a claim that opened it meanwhile sees it gone, and makes its
// own), then closed.
func (c *Claimed) Release() {
	if c == nil || c.f == nil {
		return
	}
	os.Remove(c.f.Name())
	c.f.Close()
	c.f = nil
}

// lockLive takes the flock of dir's LiveFile, or, when a live process
// holds it, returns no claim and that process's id (0 if it has not
// written it yet).
func lockLive(dir string) (*Claimed, int, error) {
	path := filepath.Join(dir, LiveFile)
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, 0, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			b, _ := io.ReadAll(f)
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				return nil, pid, nil
			}
			return nil, 0, err
		}
		// Locked; but the run that held it may have removed it (Release)
		// between this open and this lock: then the lock is of a file no
		// one else will open, and a new one is made.
		locked, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, 0, err
		}
		now, err := os.Stat(path)
		if err == nil && os.SameFile(locked, now) {
			if err = f.Truncate(0); err == nil {
				_, err = f.WriteString(strconv.Itoa(os.Getpid()) + "\n")
			}
			if err != nil {
				os.Remove(path)
				f.Close()
				return nil, 0, err
			}
			return &Claimed{f: f}, 0, nil
		}
		f.Close()
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, 0, err
		}
	}
}

// HistoryFile is a run's history, in its folder.
const HistoryFile = "history.jsonl"

// ResultFile is a run's result, in its folder.
const ResultFile = "result.json"

// held lists the files of a run (Files) that dir holds.
func held(dir string) []string {
	var found []string
	for _, f := range Files {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			found = append(found, f)
		}
	}
	return found
}

// Clear removes what a run wrote in dir (Files), and nothing else.
func Clear(dir string) error {
	var errs []error
	for _, f := range held(dir) {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, f)))
	}
	return errors.Join(errs...)
}

// HeldError refuses a folder that holds a run already: the user chooses
// another, or gives --force. Flag is the flag that named the folder
// ("--out"), when the user gave it: the message blames no flag that was
// not given.
type HeldError struct {
	Dir   string
	Found []string
	Flag  string
	// Live is a run still writing Dir (process Pid; 0 when unknown):
	// --force does not replace it.
	Live bool
	Pid  int
}

func (e *HeldError) Error() string {
	if e.Live {
		who := "a run"
		if e.Pid > 0 {
			who = fmt.Sprintf("a run (process %d)", e.Pid)
		}
		if e.Flag != "" {
			return fmt.Sprintf("%s %s: %s is still writing it: wait for it to end, or choose another folder (--force replaces only a run that has ended)", e.Flag, e.Dir, who)
		}
		return fmt.Sprintf("%s: %s is still writing it: wait for it to end, or give --out another folder (--force replaces only a run that has ended)", e.Dir, who)
	}
	if e.Flag != "" {
		return fmt.Sprintf("%s %s already holds a run (%s): choose another folder, or give --force to replace it", e.Flag, e.Dir, strings.Join(e.Found, ", "))
	}
	return fmt.Sprintf("%s already holds a run (%s): give --out another folder, or --force to replace it", e.Dir, strings.Join(e.Found, ", "))
}
