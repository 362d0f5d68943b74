package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/audit"
	"github.com/lockchaos/lockchaos/compare"
	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/scenarios"
)

const mergeUsage = `Usage: lockchaos merge [--out DIR] [--junit FILE] [--json] DIR...

Joins the folders of the shards of one matrix, audit or comparison (lockchaos
chaos, audit or compare with --shard I/N, each shard run with the same flags
and build) into one folder holding what the unsharded command would have
written, with its exit status:

  chaos shards    their runs, summary.json, index.html, JUnit XML (--junit)
                  and the comparison with the baseline; chaos's exit status
                  (lockchaos chaos -h)
  audit shards    their runs and witnesses, audit.md, audit.json, audit.html,
                  the comparison, JUnit XML (--junit), audit.json on stdout
                  (--json); the claims judged again on all the shards' runs,
                  as audit judges them: 0 every claim held on enough seeds,
                  1 a claim broke or was not verified
  compare shards  their runs, compare.json, compare.csv and index.html; 0

Folders that are none of these, shards of different commands, configurations
or builds, or two folders holding the same shard or cell are a usage error
(exit 3). A missing shard leaves its cells not run: the result is
incomplete (exit 2), and the message names the shard.
`

// cmdMerge joins the shards of a matrix, an audit or a comparison into one
// folder.
func cmdMerge(args []string) int {
	fs := newFlags("merge")
	out := fs.String("out", "", "folder of the merged matrix, audit or comparison (default results/<time>-merged)")
	junit := fs.String("junit", "", "also write JUnit XML (one test case per cell, or per fault of an audit) to `FILE`")
	baseline := fs.String("baseline", DefaultBaseline, "committed summary to compare a matrix's outcomes with, when the file exists")
	jsonOut := fs.Bool("json", false, "print the merged summary (or audit.json) as JSON on stdout (the human-readable summary goes to stderr)")
	force := fs.Bool("force", false, "let --out replace the result it holds")
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

	seen := map[string]string{}
	kind := ""
	for _, d := range dirs {
		abs, _ := filepath.Abs(d)
		if prev, ok := seen[abs]; ok {
			fmt.Fprintf(os.Stderr, "lockchaos merge: %s is given twice (also as %s)\n", d, prev)
			return ExitUsage
		}
		seen[abs] = d
		k := shardKind(d)
		switch {
		case k == "":
			fmt.Fprintf(os.Stderr, "lockchaos merge: %s is not a chaos, audit or compare output: it holds no %s, %s or %s\n", d, scenarios.SummaryFile, rundir.AuditJSONFile, compare.JSONFile)
			return ExitUsage
		case kind != "" && k != kind:
			fmt.Fprintf(os.Stderr, "lockchaos merge: %s is a %s output and %s a %s output: merge joins the shards of one command\n", dirs[0], kind, d, k)
			return ExitUsage
		}
		kind = k
	}
	if *out == "" {
		*out = filepath.Join("results", time.Now().Format("20060102-150405")+"-merged")
	}
	if abs, _ := filepath.Abs(*out); seen[abs] != "" {
		fmt.Fprintf(os.Stderr, "lockchaos merge: --out %s is one of the shards: choose another folder\n", *out)
		return ExitUsage
	}
	var notFor []string
	for _, f := range []struct {
		name  string
		kinds string
	}{{"baseline", "chaos"}, {"junit", "chaos audit"}, {"json", "chaos audit"}} {
		if set[f.name] && !strings.Contains(f.kinds, kind) {
			notFor = append(notFor, "--"+f.name)
		}
	}
	if len(notFor) > 0 {
		fmt.Fprintf(os.Stderr, "lockchaos merge: %s: not for %s shards (%s writes no such output)\n", strings.Join(notFor, ", "), kind, kind)
		return ExitUsage
	}
	switch kind {
	case "audit":
		return mergeAudit(dirs, *out, *junit, *jsonOut, *force)
	case "compare":
		return mergeCompare(dirs, *out, *force)
	}

	var sums []scenarios.Summary
	for _, d := range dirs {
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
	if code, ok := linkShards(dirs, *out, scenarios.SummaryFile, "a matrix", *force); !ok {
		return code
	}
	fmt.Fprintf(os.Stderr, "lockchaos merge: %d %s, %d cells → %s\n", len(dirs), plural(len(dirs), "folder", "folders"), len(merged.Cells), *out)
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "lockchaos merge: shard %s missing: %d cells not run (the matrix is incomplete)\n", joinComma(missing), merged.Counts[scenarios.StatusNotRun])
	}
	return finishMatrix("merge", merged, *out, finishOptions{
		JUnit: *junit, Baseline: *baseline, BaselineExplicit: set["baseline"], JSON: *jsonOut, MissingShards: missing,
	})
}

// shardKind says which command wrote the folder d: chaos, audit, compare,
// or "" (none).
func shardKind(d string) string {
	for _, k := range []struct{ file, kind string }{{scenarios.SummaryFile, "chaos"}, {rundir.AuditJSONFile, "audit"}, {compare.JSONFile, "compare"}} {
		if _, err := os.Stat(filepath.Join(d, k.file)); err == nil {
			return k.kind
		}
	}
	return ""
}

// mergeAudit joins the shards of an audit (audit --shard I/N) into out;
// the merged audit is judged and ends as an audit does (finishAudit).
func mergeAudit(dirs []string, out, junit string, jsonOut, force bool) int {
	var audits []audit.Audit
	var cmps []compare.Comparison
	for _, d := range dirs {
		a, err := audit.Read(d)
		if err == nil {
			var c compare.Comparison
			c, err = compare.Read(d)
			audits, cmps = append(audits, a), append(cmps, c)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "lockchaos merge: %s is not an audit's shard: %v\n", d, err)
			return ExitUsage
		}
	}
	a, cmp, missing, err := audit.Merge(dirs, audits, cmps, out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos merge:", err)
		return ExitUsage
	}
	if code, ok := linkShards(dirs, out, rundir.AuditJSONFile, "an audit", force, rundir.AuditWitnessDir); !ok {
		return code
	}
	fmt.Fprintf(os.Stderr, "lockchaos merge: %d %s of the audit of %s, %d cells → %s\n", len(dirs), plural(len(dirs), "shard", "shards"), a.Spec.Lock, len(cmp.Cells), out)
	return finishAudit("merge", a, cmp, out, junit, jsonOut, missing)
}

// mergeCompare joins the shards of a comparison (compare --shard I/N)
// into out.
func mergeCompare(dirs []string, out string, force bool) int {
	var cmps []compare.Comparison
	for _, d := range dirs {
		c, err := compare.Read(d)
		if err != nil {
			fmt.Fprintf(os.Stderr, "lockchaos merge: %s is not a comparison's shard: %v\n", d, err)
			return ExitUsage
		}
		cmps = append(cmps, c)
	}
	cmp, missing, err := compare.Merge(dirs, cmps)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos merge:", err)
		return ExitUsage
	}
	if code, ok := linkShards(dirs, out, compare.JSONFile, "a comparison", force); !ok {
		return code
	}
	fmt.Fprintf(os.Stderr, "lockchaos merge: %d %s of a comparison, %d cells → %s\n", len(dirs), plural(len(dirs), "shard", "shards"), len(cmp.Cells), out)
	return finishCompare("merge", cmp, out, missing)
}

// linkShards claims out (it holds no file, what: "a matrix", unless
// force) and links the shards' folders into it (their runs: each cell's,
// and its attempts'), each from one shard only; a folder named in shared
// (an audit's witness/) is joined one level down. The files beside them
// (summary.json, index.html, a JUnit file) are the merge's to write.
func linkShards(dirs []string, out, file, what string, force bool, shared ...string) (code int, ok bool) {
	if code, ok := claimOut("merge", out, file, what, force, false); !ok {
		return code, false
	}
	from := map[string]string{}
	var walk func(d, sub string) bool
	walk = func(d, sub string) bool {
		entries, err := os.ReadDir(filepath.Join(d, sub))
		if err != nil {
			fmt.Fprintf(os.Stderr, "lockchaos merge: %v\n", err)
			return false
		}
		for _, e := range entries {
			name := filepath.Join(sub, e.Name())
			switch {
			case !e.IsDir():
				continue
			case sub == "" && slices.Contains(shared, e.Name()):
				if !walk(d, name) {
					return false
				}
				continue
			}
			if prev, ok := from[name]; ok {
				fmt.Fprintf(os.Stderr, "lockchaos merge: %s and %s both hold %s: the shards overlap\n", prev, d, name)
				return false
			}
			from[name] = d
		}
		return true
	}
	for _, d := range dirs {
		if !walk(d, "") {
			return ExitUsage, false
		}
	}
	if code, ok := claimOut("merge", out, file, what, true, true); !ok {
		return code, false
	}
	for name, d := range from {
		dst := filepath.Join(out, name)
		if force {
			os.RemoveAll(dst)
		}
		if err := linkTree(filepath.Join(d, name), dst); err != nil {
			fmt.Fprintf(os.Stderr, "lockchaos merge: %v\n", err)
			return ExitSetup, false
		}
	}
	return 0, true
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
