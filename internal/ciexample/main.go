// Command ciexample runs a GitLab CI file as a GitLab runner would run it on
// this machine, so that the example the docs ship (docs/gitlab-ci.yml) is
// run as written (.ci/run does):
//
//	go run ./internal/ciexample [-n] docs/gitlab-ci.yml
//
// It clones the checkout's HEAD into a fresh folder, then runs the file's
// jobs stage by stage, in file order: each job's before_script and script,
// in bash with `set -eo pipefail` as GitLab's shell runs them, with the
// file's and the job's variables, CI_PROJECT_DIR, and for `parallel: N`
// each of CI_NODE_INDEX 1..N with CI_NODE_TOTAL N, one after another.
// `extends`, `when` (on_success, always) and `timeout` are obeyed, and
// `needs` is met by running the stages in order.
// Jobs share the clone, so what one leaves in results/ (its artifacts) is
// where the next looks for it. `image` is not: the jobs run on this
// machine, as root on a fresh Debian one in CI. A key it does not know is
// refused, so that nothing the example asks for is silently skipped.
// -n prints the jobs' scripts instead of running them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lockchaos/lockchaos/internal/shellwords"
)

func main() {
	dry := flag.Bool("n", false, "print the jobs' scripts, do not run them")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: ciexample [-n] GITLAB-CI.yml")
		os.Exit(3)
	}
	jobs, err := Load(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "ciexample:", err)
		os.Exit(3)
	}
	if *dry {
		for _, j := range jobs {
			fmt.Printf("# job %s (stage %s, when %s)\n%s\n", j.Name, j.Stage, j.When, j.Script())
		}
		return
	}
	dir, err := os.MkdirTemp("", "ciexample-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "ciexample:", err)
		os.Exit(4)
	}
	if out, err := exec.Command("git", "clone", "--quiet", ".", dir).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "ciexample: git clone: %v\n%s", err, out)
		os.Exit(4)
	}
	fmt.Printf("ciexample: %s in a clone of HEAD, %s\n", flag.Arg(0), dir)
	if failed := Run(jobs, dir, os.Stdout); len(failed) > 0 {
		fmt.Fprintf(os.Stderr, "ciexample: %s: jobs failed: %s (clone kept in %s)\n", flag.Arg(0), strings.Join(failed, ", "), dir)
		os.Exit(1)
	}
	fmt.Printf("ciexample: %s passed; its results are in %s/results\n", flag.Arg(0), dir)
}

// Job is one run of a GitLab job: a job of `parallel: N` is N of them.
type Job struct {
	Name, Stage string
	When        string // on_success or always
	Timeout     time.Duration
	Env         []string // NAME=value: the variables, then CI_NODE_*
	Lines       []string // before_script, then script
}

// Script is the job's shell script: its lines under `set -eo pipefail`,
// each echoed first, as GitLab's runner prints them.
func (j Job) Script() string {
	var b strings.Builder
	b.WriteString("set -eo pipefail\n")
	for _, l := range j.Lines {
		fmt.Fprintf(&b, "printf '%%s\\n' %s\n%s\n", shellwords.Quote("$ "+l), l)
	}
	return b.String()
}

// gitlabJob is the part of a job's keys this runner obeys or may ignore.
type gitlabJob struct {
	Extends      stringList        `yaml:"extends"`
	Stage        string            `yaml:"stage"`
	Parallel     int               `yaml:"parallel"`
	Timeout      string            `yaml:"timeout"`
	BeforeScript []string          `yaml:"before_script"`
	Script       []string          `yaml:"script"`
	Variables    map[string]string `yaml:"variables"`
	When         string            `yaml:"when"`
	Needs        []string          `yaml:"needs"`
	Image        string            `yaml:"image"`     // the jobs run on this machine
	Artifacts    yaml.Node         `yaml:"artifacts"` // the jobs share their folder
}

// stringList is a key that takes one string or a list of them.
type stringList []string

func (s *stringList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*s = []string{n.Value}
		return nil
	}
	var l []string
	err := n.Decode(&l)
	*s = l
	return err
}

// Load reads a GitLab CI file into the runs of its jobs, in the order they
// run: by stage, then as the file lists them.
func Load(path string) ([]Job, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: not a mapping of jobs", path)
	}
	var stages []string
	globals := map[string]string{}
	raw := map[string]gitlabJob{}
	var order []string
	top := doc.Content[0].Content
	for i := 0; i+1 < len(top); i += 2 {
		key, val := top[i].Value, top[i+1]
		var err error
		switch key {
		case "stages":
			err = val.Decode(&stages)
		case "variables":
			err = val.Decode(&globals)
		default:
			var j gitlabJob
			if err = strictDecode(val, &j); err == nil {
				raw[key] = j
				order = append(order, key)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %w", path, top[i].Line, key, err)
		}
	}
	var jobs []Job
	for _, stage := range stages {
		for _, name := range order {
			if strings.HasPrefix(name, ".") {
				continue // a template, for extends
			}
			j, err := resolve(raw, name, 0)
			if err != nil {
				return nil, fmt.Errorf("%s: job %s: %w", path, name, err)
			}
			if j.Stage == "" {
				j.Stage = "test"
			}
			if j.Stage != stage {
				continue
			}
			jobs = append(jobs, expand(name, j, globals)...)
		}
	}
	for _, name := range order {
		if j := raw[name]; !strings.HasPrefix(name, ".") && !slices.Contains(stages, cmpOr(j.Stage, "test")) {
			return nil, fmt.Errorf("%s: job %s: stage %q is not in stages %v", path, name, j.Stage, stages)
		}
	}
	return jobs, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// strictDecode decodes n into v, refusing keys v has no field for.
func strictDecode(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	return dec.Decode(v)
}

// resolve is job name with what it extends merged under it: a key of its
// own wins, variables merge.
func resolve(raw map[string]gitlabJob, name string, depth int) (gitlabJob, error) {
	j, ok := raw[name]
	if !ok {
		return j, fmt.Errorf("extends %s, which the file does not define", name)
	}
	if depth > 10 {
		return j, errors.New("extends nests more than 10 deep")
	}
	var merged gitlabJob
	for _, base := range j.Extends {
		b, err := resolve(raw, base, depth+1)
		if err != nil {
			return j, err
		}
		merged = overlay(merged, b)
	}
	return overlay(merged, j), nil
}

func overlay(base, j gitlabJob) gitlabJob {
	vars := map[string]string{}
	for k, v := range base.Variables {
		vars[k] = v
	}
	for k, v := range j.Variables {
		vars[k] = v
	}
	out := base
	out.Variables = vars
	if j.Stage != "" {
		out.Stage = j.Stage
	}
	if j.Parallel != 0 {
		out.Parallel = j.Parallel
	}
	if j.Timeout != "" {
		out.Timeout = j.Timeout
	}
	if j.BeforeScript != nil {
		out.BeforeScript = j.BeforeScript
	}
	if j.Script != nil {
		out.Script = j.Script
	}
	if j.When != "" {
		out.When = j.When
	}
	if j.Needs != nil {
		out.Needs = j.Needs
	}
	return out
}

// expand makes the runs of job j: one, or one per CI_NODE_INDEX.
func expand(name string, j gitlabJob, globals map[string]string) []Job {
	env := []string{"CI=true", "GITLAB_CI=true", "CI_JOB_NAME=" + name, "CI_JOB_STAGE=" + j.Stage}
	for _, vars := range []map[string]string{globals, j.Variables} {
		keys := make([]string, 0, len(vars))
		for k := range vars {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			env = append(env, k+"="+vars[k])
		}
	}
	timeout, err := time.ParseDuration(j.Timeout)
	if err != nil || timeout <= 0 {
		timeout = time.Hour // GitLab's default
	}
	run := Job{Name: name, Stage: j.Stage, When: cmpOr(j.When, "on_success"), Timeout: timeout, Env: env,
		Lines: append(slices.Clone(j.BeforeScript), j.Script...)}
	if j.Parallel < 2 {
		return []Job{run}
	}
	var out []Job
	for i := 1; i <= j.Parallel; i++ {
		r := run
		r.Name = fmt.Sprintf("%s %d/%d", name, i, j.Parallel)
		r.Env = append(slices.Clone(env), fmt.Sprintf("CI_NODE_INDEX=%d", i), fmt.Sprintf("CI_NODE_TOTAL=%d", j.Parallel))
		out = append(out, r)
	}
	return out
}

// Run runs jobs in dir, in order, and returns the names of those that
// failed. A job that is not `when: always` is not run once a job of an
// earlier stage failed, as GitLab does.
func Run(jobs []Job, dir string, log io.Writer) (failed []string) {
	failedStage := ""
	for _, j := range jobs {
		if failedStage != "" && failedStage != j.Stage && j.When != "always" {
			fmt.Fprintf(log, "ciexample: job %s skipped: stage %s failed\n", j.Name, failedStage)
			continue
		}
		fmt.Fprintf(log, "ciexample: job %s (stage %s)\n", j.Name, j.Stage)
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), j.Timeout)
		cmd := exec.CommandContext(ctx, "bash", "-c", j.Script())
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), "CI_PROJECT_DIR="+dir), j.Env...)
		cmd.Stdout, cmd.Stderr = log, log
		err := cmd.Run()
		if ctx.Err() != nil {
			err = fmt.Errorf("timed out after %v", j.Timeout)
		}
		cancel()
		took := time.Since(start).Round(time.Second)
		if err != nil {
			fmt.Fprintf(log, "ciexample: job %s failed after %v: %v\n", j.Name, took, err)
			failed = append(failed, j.Name)
			if failedStage == "" {
				failedStage = j.Stage
			}
			continue
		}
		fmt.Fprintf(log, "ciexample: job %s passed in %v\n", j.Name, took)
	}
	return failed
}
