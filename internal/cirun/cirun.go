// Package cirun runs a CI file's jobs as its CI would run them, on this
// machine: a GitLab CI file (LoadGitLab) or a GitHub Actions workflow
// (LoadGitHub). It is how the project tests the CI files it ships as
// written: its own CI example (docs/gitlab-ci.yml, go run
// ./internal/ciexample) and the templates a lock library copies
// (docs/ci/). A key or an action it does not know is refused, so that
// nothing a file asks for is silently skipped.
package cirun

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/internal/shellwords"
)

// Job is one run of a job: a job of a matrix (GitHub) or of `parallel: N`
// (GitLab) is one Job per value.
type Job struct {
	Name    string
	Stage   string // GitLab's stage; empty for GitHub
	Always  bool   // run even when a job it needs failed (GitLab's when: always, GitHub's if: always())
	Needs   []string
	Timeout time.Duration
	Env     []string // NAME=value: the file's, then the job's variables
	Steps   []Step
	// Fresh: the job runs in a folder of its own, as on a fresh machine
	// (GitHub; actions/checkout copies the project into it, artifacts pass
	// through upload-artifact and download-artifact). Otherwise it runs in
	// the project's folder, which the jobs share (GitLab: what one job
	// leaves in results/, its artifacts, is where the next looks for it).
	Fresh bool
	// Artifacts: the paths the job publishes (GitLab's artifacts: paths
	// and reports), relative to the project's folder.
	Artifacts []string
	// ArtifactsAlways: they are published when the job failed too
	// (GitLab's artifacts: when: always); otherwise only when it passed.
	ArtifactsAlways bool
}

// Step is a step of a job: a shell script (GitLab's before_script and
// script are one) or an action (GitHub's uses:).
type Step struct {
	Name   string
	Lines  []string // the shell lines, as the file writes them
	Script string   // what bash runs
	Shell  []string // bash and its flags
	Uses   string   // an action, mapped to its effect (actions)
	With   map[string]string
	Env    []string
	Always bool // runs even when an earlier step failed
}

// Config is where and how Run runs the jobs.
type Config struct {
	Project string    // the repository's folder
	Work    string    // the runner's own folder: fresh jobs' folders, artifacts, summaries
	Env     []string  // the machine's environment (nil: this process's)
	Log     io.Writer // the jobs' output
	// Parallel is how many jobs may run at once: as a CI's runners do,
	// the jobs whose needs are done go side by side (a `parallel: N`
	// job's runs, a matrix's), each job's output kept whole and written
	// in the jobs' order. 0 or 1: one after another, the output as it
	// comes (jobs that each fill the machine, as the matrix's shards do).
	Parallel int
}

// Result is how a job ended.
type Result struct {
	Name   string
	Status string // passed, failed or skipped
	Dir    string // where it ran
	// Published: the absolute paths of what the job published that
	// exists (GitLab's artifacts, GitHub's uploaded artifacts as stored).
	Published []string
	Summary   string // GitHub's job summary (GITHUB_STEP_SUMMARY)
}

// Failed is the names of the jobs that failed.
func Failed(results []Result) []string {
	var out []string
	for _, r := range results {
		if r.Status == "failed" {
			out = append(out, r.Name)
		}
	}
	return out
}

// Run runs jobs in order (the loaders order them so that a job comes after
// those it needs), up to c.Parallel at once, and says how each ended. A job
// is skipped when a job it needs did not pass, unless it is Always; a step
// after a failed one is skipped unless it is Always.
func Run(jobs []Job, c Config) []Result {
	base := c.Env
	if base == nil {
		base = os.Environ()
	}
	index := map[string]int{}
	for i, j := range jobs {
		index[j.Name] = i
	}
	results := make([]Result, len(jobs))
	done := make([]chan struct{}, len(jobs))
	logs := make([]bytes.Buffer, len(jobs))
	slots := make(chan struct{}, max(c.Parallel, 1))
	for i, j := range jobs {
		done[i] = make(chan struct{})
		jc := c
		if c.Parallel > 1 {
			jc.Log = &logs[i]
		}
		r := Result{Name: j.Name, Dir: c.Project}
		for _, n := range j.Needs {
			// A need that names no job before this one is one that never
			// passed.
			status := "did not run"
			if k, ok := index[n]; ok && k < i {
				<-done[k]
				status = results[k].Status
			}
			if status != "passed" && !j.Always {
				r.Status = "skipped"
				fmt.Fprintf(jc.Log, "cirun: job %s skipped: job %s %s\n", j.Name, n, status)
				break
			}
		}
		if r.Status != "" {
			results[i] = r
			close(done[i])
			continue
		}
		if c.Parallel <= 1 {
			results[i] = runJob(i, j, jc, base)
			close(done[i])
			continue
		}
		slots <- struct{}{}
		go func() {
			defer close(done[i])
			results[i] = runJob(i, j, jc, base)
			<-slots
		}()
	}
	for i := range jobs {
		<-done[i]
		if c.Parallel > 1 {
			c.Log.Write(logs[i].Bytes())
		}
	}
	return results
}

// jobRun is the state of a running job that its steps change.
type jobRun struct {
	Job
	c         Config
	dir       string
	env       []string
	path      []string // folders steps put before PATH (setup-go)
	summary   string   // GITHUB_STEP_SUMMARY's file
	published []string
}

func runJob(i int, j Job, c Config, base []string) Result {
	fmt.Fprintf(c.Log, "cirun: job %s\n", j.Name)
	start := time.Now()
	r := &jobRun{Job: j, c: c, dir: c.Project}
	env := append([]string{}, base...)
	if j.Fresh {
		r.dir = filepath.Join(c.Work, fmt.Sprintf("job%02d-%s", i+1, fileName(j.Name)))
		r.summary = r.dir + ".summary.md"
		tmp := r.dir + ".tmp"
		for _, d := range []string{r.dir, tmp} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return Result{Name: j.Name, Status: "failed", Dir: r.dir}
			}
		}
		os.WriteFile(r.summary, nil, 0o644)
		env = append(env, "CI=true", "GITHUB_ACTIONS=true", "RUNNER_OS=Linux", "GITHUB_WORKSPACE="+r.dir,
			"RUNNER_TEMP="+tmp, "GITHUB_STEP_SUMMARY="+r.summary, "GITHUB_JOB="+j.Name)
		// GitHub's runners give their user sudo without a password; as
		// root on a machine with no sudo (a Debian container) it is env.
		// Jobs side by side need their own PATH kept under sudo (its
		// secure_path would pass the apt-get shim by): as root, env; else
		// sudo with PATH given again.
		sudo, err := exec.LookPath("sudo")
		switch {
		case os.Getuid() == 0 && (err != nil || c.Parallel > 1):
			r.path = append(r.path, shim(c, "sudo", `exec env "$@"`))
		case err == nil && c.Parallel > 1:
			r.path = append(r.path, shim(c, "sudo", "exec "+shellwords.Quote(sudo)+` env "PATH=$PATH" "$@"`))
		}
	} else {
		env = append(env, "CI_PROJECT_DIR="+c.Project)
	}
	// Jobs side by side share this machine's package manager, where a CI
	// gives each its own: they take turns at apt-get.
	if apt, err := exec.LookPath("apt-get"); err == nil && c.Parallel > 1 {
		r.path = append(r.path, shim(c, "apt-get", "exec flock "+shellwords.Quote(filepath.Join(c.Work, "apt-get.lock"))+" "+shellwords.Quote(apt)+` "$@"`))
	}
	r.env = append(env, j.Env...)
	ctx, cancel := context.WithTimeout(context.Background(), j.Timeout)
	defer cancel()
	failed := false
	for _, s := range j.Steps {
		if failed && !s.Always {
			fmt.Fprintf(c.Log, "cirun: step %q skipped: an earlier step failed\n", s.Name)
			continue
		}
		var err error
		if s.Uses != "" {
			fmt.Fprintf(c.Log, "cirun: step %s\n", s.Uses)
			err = runAction(ctx, r, s)
		} else {
			err = r.shell(ctx, s)
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("timed out after %v", j.Timeout)
		}
		if err != nil {
			fmt.Fprintf(c.Log, "cirun: job %s, step %q failed: %v\n", j.Name, s.Name, err)
			failed = true
		}
	}
	for _, a := range j.Artifacts {
		if failed && !j.ArtifactsAlways {
			fmt.Fprintf(c.Log, "cirun: %s not published: the job failed\n", a)
			continue
		}
		p := filepath.Join(c.Project, os.Expand(a, func(k string) string { return lookup(r.env, k) }))
		if _, err := os.Stat(p); err != nil {
			fmt.Fprintf(c.Log, "cirun: WARNING: %s: no matching files\n", a) // as GitLab says it
			continue
		}
		r.published = append(r.published, p)
	}
	res := Result{Name: j.Name, Status: "passed", Dir: r.dir, Published: r.published}
	if r.summary != "" {
		b, _ := os.ReadFile(r.summary)
		res.Summary = string(b)
	}
	took := time.Since(start).Round(time.Second)
	if failed {
		res.Status = "failed"
		fmt.Fprintf(c.Log, "cirun: job %s failed after %v\n", j.Name, took)
	} else {
		fmt.Fprintf(c.Log, "cirun: job %s passed in %v\n", j.Name, took)
	}
	return res
}

// shim writes a command of the runner's own, name, a shell script that
// runs line, into the runner's bin folder and returns the folder. It is
// written whole and then renamed, as a job beside may be running it.
func shim(c Config, name, line string) string {
	bin := filepath.Join(c.Work, "bin")
	os.MkdirAll(bin, 0o755)
	tmp, err := os.CreateTemp(bin, "."+name)
	if err == nil {
		tmp.WriteString("#!/bin/sh\n" + line + "\n")
		tmp.Chmod(0o755)
		tmp.Close()
		os.Rename(tmp.Name(), filepath.Join(bin, name))
	}
	return bin
}

// environ is the job's environment for its next step.
func (r *jobRun) environ(step []string) []string {
	env := append(append([]string{}, r.env...), step...)
	if len(r.path) > 0 {
		env = append(env, "PATH="+strings.Join(r.path, string(os.PathListSeparator))+string(os.PathListSeparator)+lookup(env, "PATH"))
	}
	return env
}

func (r *jobRun) shell(ctx context.Context, s Step) error {
	cmd := exec.CommandContext(ctx, s.Shell[0], append(s.Shell[1:], "-c", s.Script)...)
	cmd.Dir, cmd.Env = r.dir, r.environ(s.Env)
	cmd.Stdout, cmd.Stderr = r.c.Log, r.c.Log
	return cmd.Run()
}

// echoed is lines as one script under set -eo pipefail, each printed
// before it runs, as GitLab's runner prints them.
func echoed(lines []string) string {
	var b strings.Builder
	b.WriteString("set -eo pipefail\n")
	for _, l := range lines {
		fmt.Fprintf(&b, "printf '%%s\\n' %s\n%s\n", shellwords.Quote("$ "+l), l)
	}
	return b.String()
}

// lookup is the last value of name in env.
func lookup(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func fileName(s string) string { return strings.Trim(unsafeName.ReplaceAllString(s, "-"), "-") }
