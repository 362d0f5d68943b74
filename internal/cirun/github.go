package cirun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// The part of a GitHub Actions workflow the runner obeys or may ignore.
type ghWorkflow struct {
	Name        string            `yaml:"name"`
	On          yaml.Node         `yaml:"on"` // the runner runs the workflow as if triggered
	Permissions yaml.Node         `yaml:"permissions"`
	Concurrency yaml.Node         `yaml:"concurrency"`
	Env         map[string]string `yaml:"env"`
	Jobs        yaml.Node         `yaml:"jobs"`
}

type ghJob struct {
	Name           string            `yaml:"name"`
	RunsOn         yaml.Node         `yaml:"runs-on"` // the jobs run on this machine
	Permissions    yaml.Node         `yaml:"permissions"`
	Needs          stringList        `yaml:"needs"`
	If             string            `yaml:"if"`
	TimeoutMinutes int               `yaml:"timeout-minutes"`
	Env            map[string]string `yaml:"env"`
	Strategy       *struct {
		FailFast    *bool     `yaml:"fail-fast"`    // each run goes to its end
		MaxParallel int       `yaml:"max-parallel"` // the runner's Config.Parallel decides
		Matrix      yaml.Node `yaml:"matrix"`
	} `yaml:"strategy"`
	Steps []ghStep `yaml:"steps"`
}

type ghStep struct {
	ID    string            `yaml:"id"`
	Name  string            `yaml:"name"`
	If    string            `yaml:"if"`
	Run   string            `yaml:"run"`
	Shell string            `yaml:"shell"`
	Uses  string            `yaml:"uses"`
	With  map[string]string `yaml:"with"`
	Env   map[string]string `yaml:"env"`
}

// An action is what a `uses:` step does here: the effect its documentation
// states, for the few actions the templates use. Any other is refused.
type action struct {
	with []string // the inputs it takes
	run  func(ctx context.Context, r *jobRun, with map[string]string) error
}

var actions = map[string]action{
	// The repository's files are the job's working folder.
	"actions/checkout@v4": {nil, func(ctx context.Context, r *jobRun, _ map[string]string) error {
		return copyInto(ctx, r.c.Project, r.dir)
	}},
	// Go is on PATH, and so is $(go env GOPATH)/bin, where go install
	// puts programs. Here Go is this machine's: the version asked for is
	// not installed.
	"actions/setup-go@v5": {[]string{"go-version", "go-version-file", "cache"}, func(ctx context.Context, r *jobRun, _ map[string]string) error {
		cmd := exec.CommandContext(ctx, "bash", "-c", "go env GOPATH")
		cmd.Dir, cmd.Env = r.dir, r.environ(nil)
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("go env GOPATH: %v (no Go on PATH?)", err)
		}
		bin := filepath.Join(strings.TrimSpace(string(out)), "bin")
		r.path = append(r.path, bin)
		return os.MkdirAll(bin, 0o755)
	}},
	// path (one file or folder) is kept as the artifact name, for the
	// jobs after (download-artifact) and the test that runs the workflow
	// (Result.Published). A path missing or empty fails the step unless
	// if-no-files-found is ignore: stricter than GitHub's warn, for a
	// workflow that publishes nothing is a broken one.
	"actions/upload-artifact@v4": {[]string{"name", "path", "if-no-files-found", "retention-days"}, func(ctx context.Context, r *jobRun, with map[string]string) error {
		name := cmpOr(with["name"], "artifact")
		if strings.ContainsAny(with["path"], "\n*?[!") {
			return fmt.Errorf("path %q: the runner takes one path, no pattern", with["path"])
		}
		src := filepath.Join(r.dir, with["path"])
		if empty(src) {
			if with["if-no-files-found"] == "ignore" {
				return nil
			}
			return fmt.Errorf("path %s: no files to upload", with["path"])
		}
		dst := filepath.Join(r.c.Work, "artifacts", name)
		if _, err := os.Stat(dst); err == nil {
			return fmt.Errorf("an artifact named %s was uploaded already", name)
		}
		if err := copyInto(ctx, src, dst); err != nil {
			return err
		}
		r.published = append(r.published, dst)
		return nil
	}},
	// The artifact name, or each matching pattern, into path (into
	// path/NAME for a pattern, unless merge-multiple).
	"actions/download-artifact@v4": {[]string{"name", "pattern", "path", "merge-multiple"}, func(ctx context.Context, r *jobRun, with map[string]string) error {
		store := filepath.Join(r.c.Work, "artifacts")
		dst := filepath.Join(r.dir, with["path"])
		if with["name"] != "" {
			return copyInto(ctx, filepath.Join(store, with["name"]), dst)
		}
		names, _ := filepath.Glob(filepath.Join(store, cmpOr(with["pattern"], "*")))
		if len(names) == 0 {
			return fmt.Errorf("no artifact matches %q", with["pattern"])
		}
		for _, n := range names {
			to := filepath.Join(dst, filepath.Base(n))
			if with["merge-multiple"] == "true" {
				to = dst
			}
			if err := copyInto(ctx, n, to); err != nil {
				return err
			}
		}
		return nil
	}},
}

func runAction(ctx context.Context, r *jobRun, s Step) error {
	return actions[s.Uses].run(ctx, r, s.With)
}

// copyInto copies src (a file, or a folder's contents) into the folder dst.
func copyInto(ctx context.Context, src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		src += "/."
	}
	if out, err := exec.CommandContext(ctx, "cp", "-a", src, dst+"/").CombinedOutput(); err != nil {
		return fmt.Errorf("cp %s: %v: %s", src, err, out)
	}
	return nil
}

// empty says whether path is missing, or holds no file with something in it.
func empty(path string) bool {
	some := errors.New("some")
	err := filepath.WalkDir(path, func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
			return some
		}
		return nil
	})
	return err != some
}

// LoadGitHub reads a GitHub Actions workflow into the runs of its jobs, in
// an order where each comes after the jobs it needs. A job of a matrix is a
// run per combination of its values. Each job runs in a folder of its own,
// as on a fresh machine (Job.Fresh); its `run:` steps run in bash -e, as
// Actions' default shell on Linux (bash -eo pipefail with `shell: bash`),
// with the workflow's, the job's and the step's env and ${{ matrix.X }}
// and ${{ env.X }} put in as Actions does. A `uses:` step is one of
// actions', mapped to its effect. `if:` is always() or success() (the
// default). vars take the place of the workflow's env of the same names
// (a name the workflow does not define is refused).
func LoadGitHub(path string, vars map[string]string) ([]Job, error) {
	file, err := readMapping(path)
	if err != nil {
		return nil, err
	}
	var wf ghWorkflow
	if err := strictDecode(file, &wf); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if wf.Env == nil {
		wf.Env = map[string]string{}
	}
	if err := override(wf.Env, vars); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if wf.Jobs.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: jobs: not a mapping", path)
	}
	var ids []string
	raw := map[string]ghJob{}
	for i := 0; i+1 < len(wf.Jobs.Content); i += 2 {
		var j ghJob
		id := wf.Jobs.Content[i].Value
		if err := strictDecode(wf.Jobs.Content[i+1], &j); err != nil {
			return nil, fmt.Errorf("%s: job %s: %w", path, id, err)
		}
		ids = append(ids, id)
		raw[id] = j
	}
	runs := map[string][]string{} // job id: its runs' names
	var jobs []Job
	for len(runs) < len(ids) {
		progress := false
		for _, id := range ids {
			j := raw[id]
			if runs[id] != nil || !allIn(j.Needs, runs) {
				continue
			}
			for _, n := range j.Needs {
				if _, ok := raw[n]; !ok {
					return nil, fmt.Errorf("%s: job %s needs %s, which the workflow does not define", path, id, n)
				}
			}
			these, err := ghRuns(id, j, wf.Env, runs)
			if err != nil {
				return nil, fmt.Errorf("%s: job %s: %w", path, id, err)
			}
			for _, r := range these {
				runs[id] = append(runs[id], r.Name)
			}
			jobs = append(jobs, these...)
			progress = true
		}
		if !progress {
			return nil, fmt.Errorf("%s: the jobs' needs make a cycle, or name a job the workflow does not define", path)
		}
	}
	return jobs, nil
}

func allIn(needs []string, done map[string][]string) bool {
	for _, n := range needs {
		if done[n] == nil {
			return false
		}
	}
	return true
}

// ghRuns is the runs of job id: one per combination of its matrix.
func ghRuns(id string, j ghJob, wfEnv map[string]string, runs map[string][]string) ([]Job, error) {
	always, err := ghIf(j.If)
	if err != nil {
		return nil, err
	}
	var needs []string
	for _, n := range j.Needs {
		needs = append(needs, runs[n]...)
	}
	combos := []map[string]string{{}}
	var keys []string
	if j.Strategy != nil && j.Strategy.Matrix.Kind != 0 {
		var m map[string][]string
		if err := j.Strategy.Matrix.Decode(&m); err != nil {
			return nil, fmt.Errorf("strategy: matrix: %w (the runner takes lists of values, no include or exclude)", err)
		}
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			var next []map[string]string
			for _, c := range combos {
				for _, v := range m[k] {
					d := map[string]string{k: v}
					for ck, cv := range c {
						d[ck] = cv
					}
					next = append(next, d)
				}
			}
			combos = next
		}
	}
	timeout := 360 * time.Minute // GitHub's default
	if j.TimeoutMinutes > 0 {
		timeout = time.Duration(j.TimeoutMinutes) * time.Minute
	}
	var out []Job
	for _, matrix := range combos {
		name := id
		if len(keys) > 0 {
			var vs []string
			for _, k := range keys {
				vs = append(vs, matrix[k])
			}
			name += " (" + strings.Join(vs, ", ") + ")"
		}
		env, jobEnv, err := ghEnv(j.Env, matrix, wfEnv)
		if err != nil {
			return nil, err
		}
		run := Job{Name: name, Always: always, Needs: needs, Timeout: timeout, Fresh: true,
			Env: append(sortedEnv(wfEnv), sortedEnv(env)...)}
		for i, s := range j.Steps {
			st, err := ghStepOf(s, matrix, jobEnv)
			if err != nil {
				return nil, fmt.Errorf("step %d (%s): %w", i+1, cmpOr(s.Name, s.Uses), err)
			}
			run.Steps = append(run.Steps, st)
		}
		out = append(out, run)
	}
	return out, nil
}

// ghEnv is a level's env with its expressions put in (env), and the env
// context the level below sees (all: the levels above merged with it).
func ghEnv(level map[string]string, matrix, above map[string]string) (env, all map[string]string, err error) {
	env = map[string]string{}
	all = map[string]string{}
	for k, v := range above {
		all[k] = v
	}
	for k, v := range level {
		if env[k], err = ghExpand(v, matrix, above); err != nil {
			return nil, nil, fmt.Errorf("env %s: %w", k, err)
		}
		all[k] = env[k]
	}
	return env, all, nil
}

func ghStepOf(s ghStep, matrix, jobEnv map[string]string) (Step, error) {
	always, err := ghIf(s.If)
	if err != nil {
		return Step{}, err
	}
	env, all, err := ghEnv(s.Env, matrix, jobEnv)
	if err != nil {
		return Step{}, err
	}
	first, _, _ := strings.Cut(s.Run, "\n")
	st := Step{Name: cmpOr(s.Name, cmpOr(s.Uses, first)), Always: always, Env: sortedEnv(env)}
	switch {
	case s.Uses != "" && s.Run != "":
		return st, errors.New("both uses and run")
	case s.Uses != "":
		a, ok := actions[s.Uses]
		if !ok {
			var known []string
			for k := range actions {
				known = append(known, k)
			}
			sort.Strings(known)
			return st, fmt.Errorf("uses %s: the runner knows only %s", s.Uses, strings.Join(known, ", "))
		}
		st.Uses, st.With = s.Uses, map[string]string{}
		for k, v := range s.With {
			if !contains(a.with, k) {
				return st, fmt.Errorf("uses %s: with %s: the runner does not know that input", s.Uses, k)
			}
			if st.With[k], err = ghExpand(v, matrix, all); err != nil {
				return st, err
			}
		}
		if s.Shell != "" {
			return st, errors.New("shell on a uses step")
		}
	case s.Run != "":
		run, err := ghExpand(s.Run, matrix, all)
		if err != nil {
			return st, err
		}
		st.Lines, st.Script = strings.Split(strings.TrimRight(run, "\n"), "\n"), run
		switch s.Shell {
		case "":
			st.Shell = []string{"bash", "-e"}
		case "bash":
			st.Shell = []string{"bash", "--noprofile", "--norc", "-eo", "pipefail"}
		default:
			return st, fmt.Errorf("shell %s: the runner knows bash", s.Shell)
		}
	default:
		return st, errors.New("neither uses nor run")
	}
	return st, nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func sortedEnv(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

var ghExpr = regexp.MustCompile(`\$\{\{\s*(.*?)\s*\}\}`)

// ghExpand puts matrix.X and env.X in for ${{ }}; any other expression is
// refused.
func ghExpand(s string, matrix, env map[string]string) (string, error) {
	var err error
	out := ghExpr.ReplaceAllStringFunc(s, func(m string) string {
		e := ghExpr.FindStringSubmatch(m)[1]
		if k, ok := strings.CutPrefix(e, "matrix."); ok {
			if v, ok := matrix[k]; ok {
				return v
			}
		}
		if k, ok := strings.CutPrefix(e, "env."); ok {
			if v, ok := env[k]; ok {
				return v
			}
		}
		if err == nil {
			err = fmt.Errorf("${{ %s }}: the runner knows matrix.X and env.X of the values the workflow sets", e)
		}
		return m
	})
	return out, err
}

// ghIf is whether an if: runs whatever failed before (always()); success(),
// the default, runs only when nothing did.
func ghIf(cond string) (bool, error) {
	c := strings.TrimSpace(cond)
	if m := ghExpr.FindStringSubmatch(c); m != nil && m[0] == c {
		c = m[1]
	}
	switch c {
	case "", "success()":
		return false, nil
	case "always()":
		return true, nil
	}
	return false, fmt.Errorf("if: %s: the runner knows always() and success()", cond)
}
