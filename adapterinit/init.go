// Package adapterinit is `lockchaos adapter init`: it writes a small
// adapter lock (docs/protocol.md) in one of five languages, around that
// language's most used Redis client — a plain token lease where the user
// puts their own library's calls —, with its manifest files pinning exact
// versions and a lock.yaml, from skeletons embedded in the binary.
package adapterinit

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

//go:embed skeletons
var skeletons embed.FS

// skelSuffix ends the skeleton files that must not count as the Go
// skeleton's own module or code inside lockchaos's (go.mod, main.go): it is
// dropped when they are written.
const skelSuffix = ".skel"

// Languages lists the languages init writes an adapter in.
func Languages() []string {
	ents, _ := skeletons.ReadDir("skeletons")
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// Write writes lang's skeleton into dir, which must not exist or be empty,
// with its lock named name, and returns the files written (relative to
// dir).
func Write(lang, dir, name string) ([]string, error) {
	root := path.Join("skeletons", lang)
	if _, err := fs.Stat(skeletons, root); err != nil {
		return nil, fmt.Errorf("unknown language %q: want one of %s", lang, strings.Join(Languages(), ", "))
	}
	if name == "" || strings.ContainsAny(name, " ,/=") {
		return nil, fmt.Errorf("lock name %q: want a name without spaces, commas, slashes or '='", name)
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("%s is not empty: give a new folder", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var files []string
	err := fs.WalkDir(skeletons, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := skeletons.ReadFile(p)
		if err != nil {
			return err
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(p, root+"/"), skelSuffix)
		if rel == "lock.yaml" {
			b = []byte(strings.ReplaceAll(string(b), "{{name}}", name))
		}
		out := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		files = append(files, rel)
		return os.WriteFile(out, b, 0o644)
	})
	return files, err
}
