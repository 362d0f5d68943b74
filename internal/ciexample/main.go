// Command ciexample runs a CI file as its CI would run it on this machine
// (internal/cirun), so that the example the docs ship (docs/gitlab-ci.yml)
// is run as written (.ci/run does):
//
//	go run ./internal/ciexample [-n] docs/gitlab-ci.yml
//
// It clones the checkout's HEAD into a fresh folder, then runs the file's
// jobs there: a GitLab CI file's (cirun.LoadGitLab), or a GitHub Actions
// workflow's (a file with `jobs:` under .github/workflows or docs/ci/
// github-*; cirun.LoadGitHub). The jobs run on this machine, as root on a
// fresh Debian one in CI.
// -n prints the jobs' scripts instead of running them.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/lockchaos/lockchaos/internal/cirun"
)

func main() {
	dry := flag.Bool("n", false, "print the jobs' scripts, do not run them")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: ciexample [-n] CI-FILE.yml")
		os.Exit(3)
	}
	file := flag.Arg(0)
	load := cirun.LoadGitLab
	if strings.Contains(filepath.ToSlash(file), ".github/workflows/") || strings.HasPrefix(filepath.Base(file), "github-") {
		load = cirun.LoadGitHub
	}
	jobs, err := load(file, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ciexample:", err)
		os.Exit(3)
	}
	if *dry {
		for _, j := range jobs {
			fmt.Printf("# job %s (stage %s, needs %v, always %v)\n", j.Name, j.Stage, j.Needs, j.Always)
			for _, s := range j.Steps {
				if s.Uses != "" {
					fmt.Printf("# uses %s %v\n", s.Uses, s.With)
				} else {
					fmt.Println(s.Script)
				}
			}
		}
		return
	}
	dir, err := os.MkdirTemp("", "ciexample-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "ciexample:", err)
		os.Exit(4)
	}
	project := filepath.Join(dir, "project")
	if out, err := exec.Command("git", "clone", "--quiet", ".", project).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "ciexample: git clone: %v\n%s", err, out)
		os.Exit(4)
	}
	fmt.Printf("ciexample: %s in a clone of HEAD, %s\n", file, project)
	results := cirun.Run(jobs, cirun.Config{Project: project, Work: dir, Log: os.Stdout})
	if failed := cirun.Failed(results); len(failed) > 0 {
		fmt.Fprintf(os.Stderr, "ciexample: %s: jobs failed: %s (clone kept in %s)\n", file, strings.Join(failed, ", "), project)
		os.Exit(1)
	}
	fmt.Printf("ciexample: %s passed; its results are in %s/results\n", file, project)
}
