package adaptercheck

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
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

// Key names a build of m's adapter (locks.Manifest.BuildKey) and of this
// check: this executable's size and time (a new lockchaos may check more).
func Key(m *locks.Manifest) (string, error) {
	build, err := m.BuildKey()
	if err != nil {
		return "", err
	}
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	st, err := os.Stat(exe)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "adapter check 2\x00%s\x00%s\x00%d\x00%d\x00", build, exe, st.Size(), st.ModTime().UnixNano())
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// passed says whether a pass of key is recorded: the user's cache
// directory's lockchaos/adapter-check/KEY (locks.Stamped).
func passed(key string) bool { return locks.Stamped("adapter-check", key) }

// Record notes that m's adapter, as built now, passed the check (Gate,
// `lockchaos adapter check`), so that a run of the same build need not
// check it again.
func Record(m *locks.Manifest) error {
	key, err := Key(m)
	if err != nil {
		return err
	}
	return locks.Stamp("adapter-check", key, fmt.Sprintf("adapter %s (%s, %s) passed lockchaos adapter check at %s\n", m.Name, m.File, strings.Join(m.Command, " "), time.Now().UTC().Format(time.RFC3339)))
}
