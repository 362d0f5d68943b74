package locks

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxKeyFiles bounds the walk of an adapter's folder: a lock.yaml in a
// large tree (a home folder), or a --lock-cmd run from one, has no key,
// and is built and checked every time instead.
const maxKeyFiles = 20000

// BuildKey names a build of m's adapter: the manifest as written
// (--lock-cmd's line and folder), the contents of the files its command
// and built name (a jar, a script, wherever they are), and the name, size
// and time of every file under the adapter's folder (what a build or an
// install there changes, and a module its script imports: for --lock-cmd,
// the folder it runs in), and of every folder outside it that its build
// command names (buildsFrom). The walk skips .git, the folder's results/
// (where runs started in it write theirs) and __pycache__ (what a Python
// adapter writes as it runs). `adapter build` skips a build whose key it
// recorded after building; `run --lock-file` checks an adapter once per
// key (adaptercheck.Key).
func (m *Manifest) BuildKey() (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "adapter build 1\x00%s\x00%s\x00%s\x00%s\x00", m.Name, m.Dir, strings.Join(m.Command, "\x00"), strings.Join(m.Build, "\x00"))
	if m.File != "" {
		b, err := os.ReadFile(m.File)
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	n := 0
	// walk names every file under root, but for the folders skip says to
	// leave out.
	walk := func(root string, skip func(p string, d fs.DirEntry) bool) error {
		return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == ".git" || d.Name() == "__pycache__" || skip(p, d)) {
				return filepath.SkipDir
			}
			if n++; n > maxKeyFiles {
				return fmt.Errorf("%s holds more than %d files, too many to tell one build from another", root, maxKeyFiles)
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
	}
	results := filepath.Join(m.Dir, "results")
	if err := walk(m.Dir, func(p string, _ fs.DirEntry) bool { return p == results }); err != nil {
		return "", err
	}
	// A build that reads another folder (redisson-rlock-3.43.0's builds
	// ../redisson-rlock/pom.xml at another version) is another build when
	// that folder's sources change: its files too, less what builds
	// write there (Maven's target/, npm's node_modules/).
	for _, dir := range m.buildsFrom() {
		if err := walk(dir, func(_ string, d fs.DirEntry) bool { return d.Name() == "target" || d.Name() == "node_modules" }); err != nil {
			return "", err
		}
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

// buildsFrom lists the folders outside m's own that its build command
// names (a file there: its folder).
func (m *Manifest) buildsFrom() []string {
	var dirs []string
	for _, a := range m.Build {
		if a == "" || strings.HasPrefix(a, "-") {
			continue
		}
		p := a
		if !filepath.IsAbs(p) {
			p = filepath.Join(m.Dir, p)
		}
		st, err := os.Stat(p)
		if err != nil {
			continue // a word that is no file here: a program, a goal
		}
		if !st.IsDir() {
			p = filepath.Dir(p)
		}
		if rel, err := filepath.Rel(m.Dir, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue // inside its own folder, walked already
		}
		dirs = append(dirs, p)
	}
	return dirs
}

// Stamp records, in the user's cache directory's lockchaos/KIND/KEY, that
// what key names was done (an adapter built, or checked), with a line
// saying so. It is written in a file of its own and renamed into place:
// two runs that record at once each write a whole one.
func Stamp(kind, key, line string) error {
	p, err := stampFile(kind, key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".stamp-")
	if err != nil {
		return err
	}
	_, err = io.WriteString(f, line)
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

// Stamped says whether Stamp recorded kind's key.
func Stamped(kind, key string) bool {
	p, err := stampFile(kind, key)
	if err != nil {
		return false
	}
	_, err = os.Stat(p)
	return err == nil
}

func stampFile(kind, key string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "lockchaos", kind, key), nil
}
