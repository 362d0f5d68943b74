package cirun

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// gitlabJob is the part of a GitLab job's keys the runner obeys or may
// ignore.
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
	Image        string            `yaml:"image"` // the jobs run on this machine
	Artifacts    *gitlabArtifacts  `yaml:"artifacts"`
}

// gitlabArtifacts is what a job publishes: the runner says which of its
// paths exist (Result.Published); GitLab keeps them for the jobs after.
type gitlabArtifacts struct {
	When     string   `yaml:"when"`
	ExpireIn string   `yaml:"expire_in"`
	ExposeAs string   `yaml:"expose_as"`
	Name     string   `yaml:"name"`
	Paths    []string `yaml:"paths"`
	Reports  struct {
		JUnit stringList `yaml:"junit"`
	} `yaml:"reports"`
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

// LoadGitLab reads a GitLab CI file into the runs of its jobs, in the order
// GitLab runs them: by stage, then as the file lists them. Each job's
// before_script and script are one step, run by bash under `set -eo
// pipefail` as GitLab's shell runs them, with the file's and the job's
// variables, and for `parallel: N` each of CI_NODE_INDEX 1..N with
// CI_NODE_TOTAL N. `extends`, `when` (on_success, always) and `timeout`
// are obeyed, and `needs` is met by running the stages in order: a job
// needs every job of the stages before its own. vars, a pipeline's
// variables, take the place of the file's variables of the same name (a
// name the file does not define is refused).
func LoadGitLab(path string, vars map[string]string) ([]Job, error) {
	file, err := readMapping(path)
	if err != nil {
		return nil, err
	}
	var stages []string
	globals := map[string]string{}
	raw := map[string]gitlabJob{}
	var order []string
	top := file.Content
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
	if err := override(globals, vars); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var jobs []Job
	var before []string // the runs of the stages so far
	for _, stage := range stages {
		var these []Job
		for _, name := range order {
			if strings.HasPrefix(name, ".") {
				continue // a template, for extends
			}
			j, err := resolve(raw, name, 0)
			if err != nil {
				return nil, fmt.Errorf("%s: job %s: %w", path, name, err)
			}
			if cmpOr(j.Stage, "test") != stage {
				continue
			}
			if j.When != "" && j.When != "on_success" && j.When != "always" {
				return nil, fmt.Errorf("%s: job %s: when: %s: the runner knows on_success and always", path, name, j.When)
			}
			if a := j.Artifacts; a != nil && a.When != "" && a.When != "on_success" && a.When != "always" {
				return nil, fmt.Errorf("%s: job %s: artifacts: when: %s: the runner knows on_success and always", path, name, a.When)
			}
			j.Stage = stage
			these = append(these, expand(name, j, globals, before)...)
		}
		for _, j := range these {
			before = append(before, j.Name)
		}
		jobs = append(jobs, these...)
	}
	for _, name := range order {
		if j := raw[name]; !strings.HasPrefix(name, ".") && !slices.Contains(stages, cmpOr(j.Stage, "test")) {
			return nil, fmt.Errorf("%s: job %s: stage %q is not in stages %v", path, name, j.Stage, stages)
		}
	}
	return jobs, nil
}

// readMapping is the YAML file at path, a mapping.
func readMapping(path string) (*yaml.Node, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: not a mapping", path)
	}
	return doc.Content[0], nil
}

// override sets the variables of vars in file's, refusing a name file
// does not define.
func override(file, vars map[string]string) error {
	for k, v := range vars {
		if _, ok := file[k]; !ok {
			return fmt.Errorf("variable %s: the file defines no such variable", k)
		}
		file[k] = v
	}
	return nil
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
	if j.Artifacts != nil {
		out.Artifacts = j.Artifacts
	}
	return out
}

// expand makes the runs of job j: one, or one per CI_NODE_INDEX.
func expand(name string, j gitlabJob, globals map[string]string, needs []string) []Job {
	env := []string{"CI=true", "GITLAB_CI=true", "CI_JOB_NAME=" + name, "CI_JOB_STAGE=" + j.Stage}
	for _, vars := range []map[string]string{globals, j.Variables} {
		keys := make([]string, 0, len(vars))
		for k := range vars {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			env = append(env, k+"="+vars[k])
		}
	}
	timeout, err := time.ParseDuration(j.Timeout)
	if err != nil || timeout <= 0 {
		timeout = time.Hour // GitLab's default
	}
	lines := append(slices.Clone(j.BeforeScript), j.Script...)
	run := Job{Name: name, Stage: j.Stage, Always: j.When == "always", Needs: needs, Timeout: timeout, Env: env,
		Steps: []Step{{Name: "script", Lines: lines, Script: echoed(lines), Shell: []string{"bash"}}}}
	if a := j.Artifacts; a != nil {
		run.Artifacts = append(slices.Clone(a.Paths), a.Reports.JUnit...)
		run.ArtifactsAlways = a.When == "always"
	}
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
