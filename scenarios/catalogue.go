package scenarios

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lockchaos/lockchaos/internal/suggest"
)

// GridFile is the name of the grid's file among the scenario files: it is
// not a scenario.
const GridFile = "grid.yaml"

// files are the built-in scenarios and the grid, compiled into the binary so
// that `lockchaos chaos` runs from any directory.
//
//go:embed *.yaml
var files embed.FS

// Catalogue returns the built-in scenarios, by name. An error means a
// built-in file is malformed: a bug that the package's tests catch.
func Catalogue() ([]Scenario, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, err
	}
	var out []Scenario
	var errs []error
	for _, n := range names {
		if n == GridFile {
			continue
		}
		b, err := files.ReadFile(n)
		if err != nil {
			return nil, err
		}
		s, err := Parse("scenarios/"+n, b)
		if err == nil {
			err = s.Complete()
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errors.Join(errs...)
}

// Load reads the scenario that arg names: a file on disk, or else a
// built-in scenario by its name (pause-past-ttl-token-lua, with or without
// .yaml). An argument that is neither is an error listing the built-in
// names.
func Load(arg string) (Scenario, error) {
	name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(arg), ".yaml"), ".yml")
	builtin, berr := files.ReadFile(name + ".yaml")
	if name == "" || name+".yaml" == GridFile {
		berr = fs.ErrNotExist
	}
	if _, err := os.Stat(arg); err == nil || strings.ContainsRune(arg, filepath.Separator) {
		s, err := LoadFile(arg)
		if errors.Is(err, fs.ErrNotExist) && berr == nil {
			err = fmt.Errorf("%w (the built-in scenario of that name is --scenario %s)", err, name)
		}
		return s, err
	}
	if berr == nil {
		return Parse("scenarios/"+name+".yaml", builtin)
	}
	return Scenario{}, fmt.Errorf("scenario %q: no such file, and no built-in scenario has that name%s; built-in: %s (lockchaos list scenarios)", arg, suggest.Hint(name, CatalogueNames(), "%s"), strings.Join(CatalogueNames(), ", "))
}

// File is the text of the built-in scenario called name.
func File(name string) ([]byte, error) {
	if name == "" || name+".yaml" == GridFile || strings.ContainsAny(name, "/*?[") {
		return nil, fs.ErrNotExist
	}
	return files.ReadFile(name + ".yaml")
}

// CatalogueNames lists the built-in scenarios' names.
func CatalogueNames() []string {
	paths, _ := fs.Glob(files, "*.yaml")
	var out []string
	for _, p := range paths {
		if p != GridFile {
			out = append(out, strings.TrimSuffix(p, ".yaml"))
		}
	}
	return out
}

// LoadGlob loads the scenario files on disk that pattern matches (a grid
// file among them is left out). Matching nothing is an error.
func LoadGlob(pattern string) ([]Scenario, error) {
	paths, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("scenario files %q: %w", pattern, err)
	}
	var out []Scenario
	var errs []error
	for _, p := range paths {
		if filepath.Base(p) == GridFile || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			continue
		}
		s, err := LoadFile(p)
		if err == nil {
			err = s.Complete()
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	if len(out) == 0 && len(errs) == 0 {
		return nil, fmt.Errorf("no scenario files match %q", pattern)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errors.Join(errs...)
}
