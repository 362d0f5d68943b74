package adaptercheck

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/locks"
)

// A run of an adapter that fails the check is no evidence: the nemeses
// judge whether a fault landed from the tokens the adapter says its nodes
// keep, and the verdict trusts its answers. `lockchaos run --lock-file` and
// --lock-cmd therefore check the adapter first (Gate), once per build of
// it: a pass is recorded in the user's cache directory under a key of the
// adapter's manifest and files and of this executable (Key), and a run of
// the same build after it starts at once. The shipped adapters, taken by
// name, are checked by CI (.ci/run) instead: checking them again before
// each of make chaos's runs would add seconds to each (a check takes 6 to
// 7 s on two busy cores, a JVM's as a Perl script's).

// FailedError is an adapter that failed the check: the steps that failed,
// in the check's own words.
type FailedError struct {
	Name, File string
	Failed     []Step
	Steps      int
	// Logs is the folder of the check's logs (the adapter's standard error).
	Logs string
}

func (e *FailedError) Error() string {
	var b strings.Builder
	what := e.Name
	if e.File != "" {
		what += " (" + e.File + ")"
	}
	fmt.Fprintf(&b, "adapter %s fails `lockchaos adapter check` (%d of %d steps), so a run of it would be no evidence: the faults' landing is judged from what it says its nodes keep:", what, len(e.Failed), e.Steps)
	for _, s := range e.Failed {
		fmt.Fprintf(&b, "\n  FAIL  %s: %v", s.Name, s.Err)
	}
	fmt.Fprintf(&b, "\nits logs are in %s; docs/protocol.md says what each step wants", e.Logs)
	return b.String()
}

// Gate checks m's adapter unless this build of it passed before, saying
// on w what it does; a check that fails once the adapter has started is
// made again once. It returns nil when the adapter passed, now or before;
// a *FailedError when a step failed (both times); any other error when the check could not be made
// (its servers did not start, or ctx was cancelled).
func Gate(ctx context.Context, m *locks.Manifest, w io.Writer) error {
	key, kerr := Key(m)
	if kerr == nil && passed(key) {
		fmt.Fprintf(w, "adapter %s passed `lockchaos adapter check` before, as built now\n", m.Name)
		return nil
	}
	note := "once per build of the adapter"
	if kerr != nil {
		note = "every run: " + kerr.Error()
	}
	fmt.Fprintf(w, "checking adapter %s first (lockchaos adapter check, %s)\n", m.Name, note)
	start := time.Now()
	// A step may fail because the machine was too busy for its timing (an
	// answer within timeout_ms, a lease that outlives a sleep): a check
	// that fails after the adapter started is made again, and the adapter
	// is refused only when it fails that too, with the second check's
	// words.
	var steps, failed []Step
	var scratch string
	for attempt := 1; attempt <= 2; attempt++ {
		if attempt == 2 {
			fmt.Fprintf(w, "  %d step(s) failed (%s); checking again, in case the machine was too busy\n", len(failed), failed[0].Name)
			os.RemoveAll(scratch)
		}
		var err error
		if scratch, err = Scratch(); err != nil {
			return err
		}
		// The steps that fail are the error's; those that pass go unsaid.
		steps, err = Check(ctx, m, scratch, io.Discard)
		if err == nil && ctx.Err() != nil {
			err = fmt.Errorf("interrupted while checking adapter %s (%w)", m.Name, ctx.Err())
		}
		if err != nil {
			os.RemoveAll(scratch)
			return err
		}
		failed = nil
		for _, s := range steps {
			if s.Err != nil {
				failed = append(failed, s)
			}
		}
		if len(failed) == 0 || failed[0].Name == "init" {
			break // an adapter that did not start is not made late by a busy machine: its start has minutes
		}
	}
	if len(failed) > 0 {
		return &FailedError{Name: m.Name, File: m.File, Failed: failed, Steps: len(steps), Logs: scratch}
	}
	os.RemoveAll(scratch)
	fmt.Fprintf(w, "adapter %s passed (%d steps, %.1f s)\n", m.Name, len(steps), time.Since(start).Seconds())
	// Keyed again: an adapter may write into its folder as it runs (a
	// Python adapter its __pycache__), and the next run sees that folder.
	_ = Record(m)
	return nil
}

// maxFiles bounds the walk of an adapter's folder: a lock.yaml in a large
// tree (a home folder), or a --lock-cmd run from one, is checked before
// every run instead.
const maxFiles = 20000

// Key names a build of m's adapter and of this check: the manifest as
// written (--lock-cmd's line and folder), the contents of the files its
// command and built name (a jar, a script, wherever they are), the name,
// size and time of every file under the adapter's folder (what a build or
// an install there changes, and a module its script imports: for
// --lock-cmd, the folder it runs in), and this executable's size and time
// (a new lockchaos may check more). The walk skips .git and the folder's
// results/, where runs started in it write theirs.
func Key(m *locks.Manifest) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "adapter check 1\x00%s\x00%s\x00%s\x00", m.Name, m.Dir, strings.Join(m.Command, "\x00"))
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	st, err := os.Stat(exe)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "%s\x00%d\x00%d\x00", exe, st.Size(), st.ModTime().UnixNano())
	if m.File != "" {
		b, err := os.ReadFile(m.File)
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	results := filepath.Join(m.Dir, "results")
	n := 0
	err = filepath.WalkDir(m.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || p == results) {
			return filepath.SkipDir
		}
		if n++; n > maxFiles {
			return fmt.Errorf("%s holds more than %d files, too many to tell one build from another", m.Dir, maxFiles)
		}
		if d.IsDir() {
			// Its entries are named below; its own time changes with
			// results/ made beside them.
			fmt.Fprintf(h, "%s\x00dir\x00", p)
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			// A link (a package manager's): where it points and what is there.
			to, _ := os.Readlink(p)
			fmt.Fprintf(h, "%s\x00", to)
			if st, err := os.Stat(p); err == nil {
				info = st
			}
		}
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00%v\x00", p, info.Size(), info.ModTime().UnixNano(), info.Mode())
		return nil
	})
	if err != nil {
		return "", err
	}
	for _, a := range append(append([]string(nil), m.Command...), m.Built) {
		if a == "" {
			continue
		}
		p := a
		if !filepath.IsAbs(p) {
			p = filepath.Join(m.Dir, p)
		}
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			continue // a word that is no file here: an interpreter, a flag
		}
		f, err := os.Open(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00", p)
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// passFile is where a pass of key is recorded: the user's cache
// directory's lockchaos/adapter-check/KEY.
func passFile(key string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "lockchaos", "adapter-check", key), nil
}

func passed(key string) bool {
	p, err := passFile(key)
	if err != nil {
		return false
	}
	_, err = os.Stat(p)
	return err == nil
}

// Record notes that m's adapter, as built now, passed the check (Gate,
// `lockchaos adapter check`), so that a run of the same build need not
// check it again. The pass is written in a file of its own and renamed
// into place: two runs that check at once each write a whole one.
func Record(m *locks.Manifest) error {
	key, err := Key(m)
	if err != nil {
		return err
	}
	p, err := passFile(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".pass-")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "adapter %s (%s, %s) passed lockchaos adapter check at %s\n", m.Name, m.File, strings.Join(m.Command, " "), time.Now().UTC().Format(time.RFC3339))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
