package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/lockchaos/lockchaos/scenarios"
)

const mergeUsage = `Usage: lockchaos merge [--out DIR] [--junit FILE] [--json] DIR...

Joins the folders of the shards of one matrix (lockchaos chaos --shard I/N,
each run with the same flags and build) into one folder: their runs,
summary.json, index.html, JUnit XML (--junit) and the comparison with the
baseline, the same as one unsharded chaos run would have written.

Folders that are not chaos outputs, shards of different configurations, or
two folders holding the same shard or cell are a usage error (exit 3). A
missing shard leaves its cells not-run: the matrix is incomplete (exit 2).
The exit status is chaos's (lockchaos chaos -h).
`

// cmdMerge joins the shards of a matrix into one matrix folder.
func cmdMerge(args []string) int {
	fs := newFlags("merge")
	out := fs.String("out", "", "folder of the merged matrix (default results/<time>-merged)")
	junit := fs.String("junit", "", "also write JUnit XML (one test case per cell) to `FILE`")
	baseline := fs.String("baseline", DefaultBaseline, "committed summary to compare outcomes with, when the file exists")
	jsonOut := fs.Bool("json", false, "print the merged summary as JSON on stdout (the human-readable summary goes to stderr)")
	force := fs.Bool("force", false, "let --out replace the matrix it holds")
	// Flags may come before, between or after the folders.
	var dirs []string
	for rest := args; ; {
		if code, ok := parse(fs, mergeUsage, rest); !ok {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		dirs, rest = append(dirs, fs.Arg(0)), fs.Args()[1:]
	}
	if len(dirs) == 0 {
		fmt.Fprintln(os.Stderr, "lockchaos merge: give the shards' folders: lockchaos merge DIR...")
		return ExitUsage
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	var sums []scenarios.Summary
	seen := map[string]string{}
	for _, d := range dirs {
		abs, _ := filepath.Abs(d)
		if prev, ok := seen[abs]; ok {
			fmt.Fprintf(os.Stderr, "lockchaos merge: %s is given twice (also as %s)\n", d, prev)
			return ExitUsage
		}
		seen[abs] = d
		if _, err := os.Stat(filepath.Join(d, scenarios.SummaryFile)); err != nil {
			fmt.Fprintf(os.Stderr, "lockchaos merge: %s is not a chaos output: it holds no %s\n", d, scenarios.SummaryFile)
			return ExitUsage
		}
		s, err := scenarios.ReadSummary(d)
		if err != nil {
			fmt.Fprintf(os.Stderr, "lockchaos merge: %s is not a chaos output: %v\n", d, err)
			return ExitUsage
		}
		sums = append(sums, s)
	}
	merged, missing, err := scenarios.Merge(dirs, sums)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos merge:", err)
		return ExitUsage
	}

	if *out == "" {
		*out = filepath.Join("results", time.Now().Format("20060102-150405")+"-merged")
	}
	if abs, _ := filepath.Abs(*out); seen[abs] != "" {
		fmt.Fprintf(os.Stderr, "lockchaos merge: --out %s is one of the shards: choose another folder\n", *out)
		return ExitUsage
	}
	if code, ok := claimOut("merge", *out, scenarios.SummaryFile, "a matrix", *force, false); !ok {
		return code
	}
	// The shards' run folders (each cell's, and its attempts'), each
	// from one shard only.
	from := map[string]string{}
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			fmt.Fprintf(os.Stderr, "lockchaos merge: %v\n", err)
			return ExitUsage
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue // summary.json, index.html, a JUnit file: the merge writes its own
			}
			if prev, ok := from[e.Name()]; ok {
				fmt.Fprintf(os.Stderr, "lockchaos merge: %s and %s both hold %s: the shards overlap\n", prev, d, e.Name())
				return ExitUsage
			}
			from[e.Name()] = d
		}
	}
	if code, ok := claimOut("merge", *out, scenarios.SummaryFile, "a matrix", true, true); !ok {
		return code
	}
	for name, d := range from {
		dst := filepath.Join(*out, name)
		if *force {
			os.RemoveAll(dst)
		}
		if err := linkTree(filepath.Join(d, name), dst); err != nil {
			fmt.Fprintf(os.Stderr, "lockchaos merge: %v\n", err)
			return ExitSetup
		}
	}
	fmt.Fprintf(os.Stderr, "lockchaos merge: %d %s, %d cells → %s\n", len(dirs), plural(len(dirs), "folder", "folders"), len(merged.Cells), *out)
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "lockchaos merge: shard %s missing: %d cells not run (the matrix is incomplete)\n", joinComma(missing), merged.Counts[scenarios.StatusNotRun])
	}
	return finishMatrix("merge", merged, *out, finishOptions{
		JUnit: *junit, Baseline: *baseline, BaselineExplicit: set["baseline"], JSON: *jsonOut, MissingShards: missing,
	})
}

// linkTree copies the file or folder src to dst, hard-linking files where
// it can (shards' folders are large and never change).
func linkTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case !d.Type().IsRegular():
			return nil
		}
		if err := os.Link(p, target); err == nil {
			return nil
		}
		return copyFile(p, target)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return errors.Join(out.Close())
}

func joinComma(xs []string) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ", "
		}
		s += x
	}
	return s
}
