package locks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/internal/jvmcds"
)

// Build builds the adapters ms (`lockchaos adapter build`, and Ready on an
// adapter's first use), once per artifact (several manifests may share
// one: redisson-spin-lock builds redisson-rlock's jar), and not at all
// where nothing in the folder changed since its last build here (BuildKey,
// recorded with Stamp for every manifest of the folder once it is built).
// It says what it does of each on status; the builds' own output goes to
// out and errOut. It returns how many failed. One process at a time builds
// (BuildLock): a second waits, and then finds the builds done.
func Build(status, out, errOut io.Writer, ms []*Manifest, force bool) (int, error) {
	unlock, err := BuildLock(status)
	if err != nil {
		return 0, err
	}
	defer unlock()
	return build(status, out, errOut, ms, force), nil
}

// build is Build, its caller holding BuildLock.
func build(status, out, errOut io.Writer, ms []*Manifest, force bool) int {
	var order []string
	groups := map[string][]*Manifest{}
	for _, m := range ms {
		g := artifact(m)
		if groups[g] == nil {
			order = append(order, g)
		}
		groups[g] = append(groups[g], m)
	}
	failed := 0
	for _, g := range order {
		failed += buildFolder(status, out, errOut, groups[g], force)
	}
	return failed
}

// BuildLock takes the machine's adapter-build lock, an flock(2) on
// os.UserCacheDir()/lockchaos/adapter-build.lock, until the returned
// function is called: two lockchaos processes building at once (two
// first runs of an installed binary, a run beside `make adapters`) would
// run two package managers in one folder. A process that has to wait says
// so on status.
func BuildLock(status io.Writer) (unlock func(), err error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, fmt.Errorf("adapter build: %w", err)
	}
	p := filepath.Join(cache, "lockchaos", "adapter-build.lock")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("adapter build: %w", err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("adapter build: %w", err)
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		fmt.Fprintf(status, "waiting for another lockchaos process that builds adapters (it holds %s)\n", p)
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("adapter build: lock %s: %w", p, err)
	}
	return func() { f.Close() }, nil
}

// artifact names what m's build makes, so that manifests whose builds make
// the same file (redisson-spin-lock's builds redisson-rlock's jar) build
// it once: the file built, or without one named, the folder and command.
func artifact(m *Manifest) string {
	if m.Built == "" {
		return m.Dir + "\x00" + strings.Join(m.Build, "\x00")
	}
	if filepath.IsAbs(m.Built) {
		return filepath.Clean(m.Built)
	}
	return filepath.Join(m.Dir, m.Built)
}

// jvm is the JVM and the jar of an adapter whose command runs java and
// whose build makes a jar: its clients start on the jar's class-data
// archive (jvmcds), which its build writes.
func (m *Manifest) jvm() (java, jar string, ok bool) {
	if len(m.Command) == 0 || filepath.Base(m.Command[0]) != "java" || !strings.HasSuffix(m.Built, ".jar") {
		return "", "", false
	}
	return m.Command[0], artifact(m), true
}

// writeArchive writes the class-data archive of m's jar (a Java adapter)
// unless it exists: one client of the adapter, started with the flags
// that write it, its init naming servers where nothing listens (127.0.0.1
// port 1) and its standard input closed, loads its library's classes as
// it fails to connect, and writes them as it exits. It says so on status
// when it wrote one; a failure only means clients start slower.
func writeArchive(status io.Writer, m *Manifest) {
	java, jar, ok := m.jvm()
	if !ok {
		return
	}
	archive, err := jvmcds.Archive(java, jar)
	if err != nil {
		return
	}
	if _, err := os.Stat(archive); err == nil {
		return
	}
	start := time.Now()
	err = jvmcds.Write(java, jar, func(flags []string) error {
		nowhere := "127.0.0.1:1"
		a := &adapter{m: m, cfg: Config{
			Addrs: []string{nowhere}, TTL: time.Second, OpTimeout: time.Second, Owner: "client-0",
			// Every store's own init fields, each naming nowhere: an
			// adapter ignores what its store does not use.
			StoreInit: map[string]any{"connect": nowhere, "user": "lockchaos", "cluster": "lockchaos",
				"dsn": "host=127.0.0.1 port=1 user=lockchaos dbname=postgres sslmode=disable connect_timeout=1"},
			LogPath: archive + ".log",
		}, pending: map[int64]chan answer{}, abandoned: map[int64]string{}, lost: map[string]*lostSignal{},
			jvmFlags: flags, exitWait: 3 * time.Second}
		// An adapter that waits for its servers (Hazelcast's client
		// retries for ever) is stopped by Close: SIGTERM, a normal exit.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if a.Start(ctx) == nil {
			a.Close()
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.exitErr
	})
	if err != nil {
		fmt.Fprintf(status, "note    %s: its clients start without a class-data archive (%v; the JVM's output: %s.log)\n", m.Name, err, archive)
		return
	}
	if _, err := os.Stat(archive); err != nil {
		return // another lockchaos process writes it
	}
	os.Remove(archive + ".log")
	fmt.Fprintf(status, "ok      %s: class-data archive of %s written in %.1f s (its clients start faster)\n", m.Name, filepath.Base(jar), time.Since(start).Seconds())
}

// upToDate says whether every one of ms was built here as its folder is now.
func upToDate(ms []*Manifest) bool {
	for _, m := range ms {
		key, err := m.BuildKey()
		if err != nil || m.Missing() != "" || !Stamped("adapter-build", key) {
			return false
		}
	}
	return true
}

// buildFolder runs the build the manifests ms share (the first's command),
// unless every one of them was built here as its folder is now, and says
// so of each; it returns how many failed.
func buildFolder(status, out, errOut io.Writer, ms []*Manifest, force bool) int {
	first := ms[0]
	if !force && upToDate(ms) {
		for _, m := range ms {
			fmt.Fprintf(status, "ok      %s: up to date (nothing in %s changed since its build)\n", m.Name, m.Dir)
		}
		writeArchive(status, first)
		return 0
	}
	start := time.Now()
	cmd := exec.Command(first.Build[0], first.Build[1:]...)
	cmd.Dir = first.Dir
	// What the build prints is passed on as it comes, but for terminal
	// control sequences alone: Debian's Maven 3.8 writes a colour reset
	// (ESC[0m) on each quiet build, whatever style.color says.
	cmd.Stdout, cmd.Stderr = plainText{out}, plainText{errOut}
	if err := cmd.Run(); err != nil {
		for _, m := range ms {
			fmt.Fprintf(status, "FAILED  %s: %s (in %s): %v\n", m.Name, strings.Join(m.Build, " "), m.Dir, err)
		}
		return len(ms)
	}
	failed := 0
	for i, m := range ms {
		if why := m.Missing(); why != "" {
			fmt.Fprintf(status, "FAILED  %s: built, but %s\n", m.Name, why)
			failed++
			continue
		}
		if i == 0 {
			fmt.Fprintf(status, "ok      %s: built in %.1f s\n", m.Name, time.Since(start).Seconds())
		} else {
			fmt.Fprintf(status, "ok      %s: built with %s (the same artifact)\n", m.Name, first.Name)
		}
		if i == 0 {
			writeArchive(status, m)
		}
		// Keyed after the build: the folder as the build left it.
		if key, err := m.BuildKey(); err == nil {
			_ = Stamp("adapter-build", key, fmt.Sprintf("adapter %s built by %s at %s\n", m.Name, strings.Join(m.Build, " "), time.Now().UTC().Format(time.RFC3339)))
		}
	}
	return failed
}

// plainText passes on what is written to it less the terminal control
// sequences (ESC [ … letter) of each write; a write of nothing else is
// dropped.
type plainText struct{ w io.Writer }

var controlSequence = regexp.MustCompile("\x1b\\[[0-9;?]*[A-Za-z]")

func (p plainText) Write(b []byte) (int, error) {
	plain := controlSequence.ReplaceAll(b, nil)
	if len(plain) > 0 {
		if _, err := p.w.Write(plain); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}
