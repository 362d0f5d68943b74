package scenarios

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
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
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errors.Join(errs...)
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
