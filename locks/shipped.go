package locks

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/lockchaos/lockchaos/adapters"
)

// modulePath is lockchaos's module, as its go.mod names it.
const modulePath = "github.com/lockchaos/lockchaos"

// isRepository says whether dir is a lockchaos repository with its
// adapters: a go.mod of lockchaos's module beside adapters/LANG/LIB/lock.yaml.
// Another project's adapters/ (a lock library's own, laid out the same way)
// does not hide the shipped locks.
func isRepository(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil || !bytes.HasPrefix(bytes.TrimSpace(b), []byte("module "+modulePath+"\n")) {
		return false
	}
	ms, _ := filepath.Glob(filepath.Join(dir, "adapters", "*", "*", "lock.yaml"))
	return len(ms) > 0
}

var (
	carriedMu  sync.Mutex
	carriedDir string // where unpackShipped unpacked them; "" before
)

// unpackShipped unpacks the adapters' sources this binary carries into the
// user's cache, os.UserCacheDir()/lockchaos/adapters/HASH, HASH naming
// their contents: a binary of other sources gets a folder of its own, and
// one of the same sources finds the folder (and the builds in it) of the
// last. The files are written into a temporary folder beside it that is
// then renamed into place, so that a process never sees half of them and
// processes that unpack at once each find a whole copy.
func unpackShipped() (string, error) {
	carriedMu.Lock()
	defer carriedMu.Unlock()
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("the shipped adapters are unpacked into the user's cache folder, and there is none (%v): set $HOME or $XDG_CACHE_HOME, or $%s to a folder of adapters", err, AdaptersEnv)
	}
	root := filepath.Join(cache, "lockchaos", "adapters")
	if strings.HasPrefix(carriedDir, root+string(filepath.Separator)) {
		return carriedDir, nil
	}
	type file struct {
		name string
		data []byte
	}
	var files []file
	h := sha256.New()
	err = fs.WalkDir(adapters.Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := adapters.Files.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
		files = append(files, file{p, b})
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("shipped adapters: %w", err)
	}
	dir := filepath.Join(root, fmt.Sprintf("%x", h.Sum(nil)[:8]))
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		carriedDir = dir
		return dir, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("shipped adapters: %w", err)
	}
	tmp, err := os.MkdirTemp(root, ".unpack-")
	if err != nil {
		return "", fmt.Errorf("shipped adapters: %w", err)
	}
	for _, f := range files {
		p := filepath.Join(tmp, filepath.FromSlash(f.name))
		if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
			err = os.WriteFile(p, f.data, 0o644)
		}
		if err != nil {
			os.RemoveAll(tmp)
			return "", fmt.Errorf("shipped adapters: %w", err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("shipped adapters: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		// Another process unpacked them first.
		if st, serr := os.Stat(dir); serr != nil || !st.IsDir() {
			return "", fmt.Errorf("shipped adapters: %w", err)
		}
	}
	carriedDir = dir
	return dir, nil
}

// Carried says whether m is one of the adapters this binary carries,
// unpacked into the user's cache (and built there on first use).
func (m *Manifest) Carried() bool {
	carriedMu.Lock()
	dir := carriedDir
	carriedMu.Unlock()
	return dir != "" && strings.HasPrefix(m.Dir, dir+string(filepath.Separator))
}

// ready holds the carried adapters Ready found built, in this process.
var (
	readyMu sync.Mutex
	ready   = map[*Manifest]bool{}
)

// Ready is Missing, after building m first when it is one the binary
// carries (Carried) and is not built yet: an installed binary builds each
// shipped adapter on its first use — run, audit, compare, shrink or bench
// of that lock, or chaos planning a cell of it — as `lockchaos adapter
// build` would (Build: skipped when its folder is as its last build left
// it, at the versions its own manifest files pin). Stderr says so before
// the build starts (it takes minutes: Maven, npm, pip) and names the file
// that gets the build's own output. Such an adapter counts as built once
// its build is stamped (a build another process has begun is waited for,
// BuildLock). A repository's adapters are built by make adapters, never
// here.
func (m *Manifest) Ready() string {
	if len(m.Build) == 0 || !m.Carried() || m.MissingTools() != "" {
		return m.Missing()
	}
	readyMu.Lock()
	defer readyMu.Unlock()
	if ready[m] {
		return m.Missing()
	}
	// Every shipped manifest that builds the same artifact is stamped with it.
	ms := []*Manifest{m}
	for _, s := range All() {
		if o := s.Adapter; o != nil && o != m && o.Carried() && len(o.Build) > 0 && artifact(o) == artifact(m) && o.MissingTools() == "" {
			ms = append(ms, o)
		}
	}
	if upToDate(ms) {
		ready[m] = true
		return ""
	}
	// Another process may be building it: it is built once it lets go.
	unlock, err := BuildLock(os.Stderr)
	if err != nil {
		return "not built yet, and it could not be built: " + err.Error()
	}
	defer unlock()
	if !upToDate(ms) {
		log, err := buildLog(m)
		if err != nil {
			return "not built yet, and it could not be built: " + err.Error()
		}
		defer log.Close()
		fmt.Fprintf(os.Stderr, "lockchaos: adapter %s is not built yet: building it now in %s with %s (first use of it with this binary; this can take minutes; its output in %s)\n",
			m.Name, m.Dir, strings.Join(m.Build, " "), log.Name())
		if failed := build(os.Stderr, log, log, ms, false); failed > 0 {
			return fmt.Sprintf("not built: its build failed: see %s", log.Name())
		}
	}
	ready[m] = true
	return m.Missing()
}

// buildLog is the file for the output of m's build on first use:
// os.UserCacheDir()/lockchaos/adapter-logs/NAME.log.
func buildLog(m *Manifest) (*os.File, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cache, "lockchaos", "adapter-logs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return os.Create(filepath.Join(dir, m.Name+".log"))
}
