package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// setupNeeds is the Debian packages make setup installs because make test
// and make chaos cannot do without them (its "need" list).
func setupNeeds(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var need []string
	for _, m := range regexp.MustCompile(`need="\$\$need ([a-z0-9.+-]+)"`).FindAllStringSubmatch(string(b), -1) {
		need = append(need, m[1])
	}
	if len(need) < 5 {
		t.Fatalf("make setup's need list %v: the Makefile changed shape", need)
	}
	return need
}

// githubRuns is the shell lines of each job of a GitHub workflow, in order.
func githubRuns(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Run string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string][]string{}
	for name, j := range wf.Jobs {
		for _, s := range j.Steps {
			out[name] = append(out[name], strings.Split(s.Run, "\n")...)
		}
	}
	return out
}

// Every CI example the repository ships, before it runs the matrix, installs
// what make setup installs for it: it runs make setup, or installs every
// package of make setup's need list. (docs/gitlab-ci.yml once installed
// Redis and gcc only: its etcd, ZooKeeper and PostgreSQL cells could not
// start.) .ci/run runs docs/gitlab-ci.yml as written; GitHub runs the
// workflows.
func TestCIExamplesInstallWhatMakeSetupInstalls(t *testing.T) {
	need := setupNeeds(t)
	examples := map[string]map[string][]string{}
	jobs, err := Load("../../docs/gitlab-ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	examples["docs/gitlab-ci.yml"] = map[string][]string{}
	for _, j := range jobs {
		examples["docs/gitlab-ci.yml"][j.Name] = j.Lines
	}
	workflows, _ := filepath.Glob("../../.github/workflows/*.yml")
	for _, w := range workflows {
		examples[strings.TrimPrefix(w, "../../")] = githubRuns(t, w)
	}
	matrix := regexp.MustCompile(`^\s*(\S*/)?lockchaos chaos(\s|$)`)
	matrices := 0
	for file, jobs := range examples {
		for name, lines := range jobs {
			installed := map[string]bool{}
			for _, l := range lines {
				if matrix.MatchString(l) {
					matrices++
					var missing []string
					for _, p := range need {
						if !installed[p] && !installed["make setup"] {
							missing = append(missing, p)
						}
					}
					if len(missing) > 0 {
						t.Errorf("%s, job %s runs the matrix without %v: run make setup first (it installs them)", file, name, missing)
					}
				}
				if strings.Contains(l, "make setup") {
					installed["make setup"] = true
				}
				if _, pkgs, ok := strings.Cut(l, "apt-get install"); ok {
					for _, p := range strings.Fields(pkgs) {
						installed[p] = true
					}
				}
			}
		}
	}
	if matrices < 2 {
		t.Errorf("%d jobs of the CI examples run lockchaos chaos, want the GitLab and the GitHub one", matrices)
	}
}

// .ci/run runs docs/gitlab-ci.yml with this runner: it must run exactly
// the file's lines.
func TestLoadTheGitLabExample(t *testing.T) {
	jobs, err := Load("../../docs/gitlab-ci.yml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range jobs {
		names = append(names, j.Name)
	}
	if want := []string{"chaos 1/4", "chaos 2/4", "chaos 3/4", "chaos 4/4", "chaos-merge"}; !slices.Equal(names, want) {
		t.Fatalf("jobs %v, want %v", names, want)
	}
	if !slices.Contains(jobs[2].Env, "CI_NODE_INDEX=3") || !slices.Contains(jobs[2].Env, "CI_NODE_TOTAL=4") || jobs[4].When != "always" {
		t.Errorf("chaos 3/4 env %v, merge when %s", jobs[2].Env, jobs[4].When)
	}
}

// The runner obeys stages, parallel, extends, variables and when, runs each
// job's lines under set -e, and refuses keys it does not know.
func TestRunObeysTheFile(t *testing.T) {
	dir := t.TempDir()
	ci := filepath.Join(dir, "ci.yml")
	os.WriteFile(ci, []byte(`stages: [one, two, three]
variables:
  WHO: file
.base:
  before_script:
    - echo "base $WHO" >> log
one:
  extends: .base
  stage: one
  parallel: 2
  variables:
    WHO: job
  script:
    - echo "one $CI_NODE_INDEX/$CI_NODE_TOTAL $WHO" >> log
    - test "$CI_NODE_INDEX" = 1
    - echo "not reached" >> log
two:
  stage: two
  script:
    - echo two >> log
three:
  stage: three
  when: always
  script:
    - echo "three in $(basename "$CI_PROJECT_DIR")" >> log
`), 0o644)
	jobs, err := Load(ci)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	failed := Run(jobs, dir, &out)
	if !slices.Equal(failed, []string{"one 2/2"}) {
		t.Errorf("failed %v, want one 2/2\n%s", failed, out.String())
	}
	log, _ := os.ReadFile(filepath.Join(dir, "log"))
	want := "base job\none 1/2 job\nnot reached\nbase job\none 2/2 job\nthree in " + filepath.Base(dir) + "\n"
	if string(log) != want {
		t.Errorf("the jobs wrote\n%s\nwant\n%s", log, want)
	}
	os.WriteFile(ci, []byte("stages: [one]\none:\n  stage: one\n  script: [true]\n  servics: [redis]\n"), 0o644)
	if _, err := Load(ci); err == nil || !strings.Contains(err.Error(), "servics") {
		t.Errorf("a key the runner does not know: %v, want it refused", err)
	}
}
