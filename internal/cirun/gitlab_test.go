package cirun

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
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
	if len(need) < 1 || !strings.Contains(string(b), "list --packages --missing") {
		t.Fatalf("make setup's need list %v, and the stores' packages from lockchaos list --packages: the Makefile changed shape", need)
	}
	return append(need, storePackages()...)
}

// Every CI example the repository ships, before it runs the matrix or an
// audit, installs what make setup installs for it: it runs make setup, or
// installs every package of make setup's need list (one list: the
// templates of docs/ci/ name the packages as the list does). (docs/gitlab-ci.yml once installed
// Redis and gcc only: its etcd, ZooKeeper and PostgreSQL cells could not
// start.) .ci/run runs docs/gitlab-ci.yml as written; GitHub runs the
// workflows.
func TestCIExamplesInstallWhatMakeSetupInstalls(t *testing.T) {
	need := setupNeeds(t)
	examples := map[string]map[string][]string{}
	gitlab, _ := filepath.Glob("../../docs/ci/gitlab-*.yml")
	github, _ := filepath.Glob("../../docs/ci/github-*.yml")
	workflows, _ := filepath.Glob("../../.github/workflows/*.yml")
	for _, f := range append(append(append([]string{"../../docs/gitlab-ci.yml"}, gitlab...), github...), workflows...) {
		load := LoadGitLab
		if strings.Contains(f, "github") {
			load = LoadGitHub
		}
		jobs, err := load(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		file := strings.TrimPrefix(f, "../../")
		examples[file] = map[string][]string{}
		for _, j := range jobs {
			for _, s := range j.Steps {
				examples[file][j.Name] = append(examples[file][j.Name], s.Lines...)
			}
		}
	}
	matrix := regexp.MustCompile(`^\s*(\S*/)?lockchaos (chaos|audit)(\s|$)`)
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
					if strings.Contains(pkgs, "lockchaos list --packages") {
						for _, p := range storePackages() {
							installed[p] = true
						}
					}
				}
			}
		}
	}
	if matrices < 2+len(gitlab)+len(github) || len(gitlab) < 2 || len(github) < 2 {
		t.Errorf("%d jobs of the CI examples run lockchaos chaos or audit, want the GitLab and the GitHub one and those of the templates (%v, %v)", matrices, gitlab, github)
	}
}

// .ci/run runs docs/gitlab-ci.yml with this runner: it must run exactly
// the file's lines.
func TestLoadTheGitLabExample(t *testing.T) {
	jobs, err := LoadGitLab("../../docs/gitlab-ci.yml", nil)
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
	if !slices.Contains(jobs[2].Env, "CI_NODE_INDEX=3") || !slices.Contains(jobs[2].Env, "CI_NODE_TOTAL=4") || !jobs[4].Always || len(jobs[4].Needs) != 4 {
		t.Errorf("chaos 3/4 env %v, merge always %v, needs %v", jobs[2].Env, jobs[4].Always, jobs[4].Needs)
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
	jobs, err := LoadGitLab(ci, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	failed := Failed(Run(jobs, Config{Project: dir, Work: t.TempDir(), Log: &out}))
	if !slices.Equal(failed, []string{"one 2/2"}) {
		t.Errorf("failed %v, want one 2/2\n%s", failed, out.String())
	}
	log, _ := os.ReadFile(filepath.Join(dir, "log"))
	want := "base job\none 1/2 job\nnot reached\nbase job\none 2/2 job\nthree in " + filepath.Base(dir) + "\n"
	if string(log) != want {
		t.Errorf("the jobs wrote\n%s\nwant\n%s", log, want)
	}
	os.WriteFile(ci, []byte("stages: [one]\none:\n  stage: one\n  script: [true]\n  servics: [redis]\n"), 0o644)
	if _, err := LoadGitLab(ci, nil); err == nil || !strings.Contains(err.Error(), "servics") {
		t.Errorf("a key the runner does not know: %v, want it refused", err)
	}
}

// With Parallel, the runs of a `parallel: N` job go side by side, as a CI's
// runners run them: each of three waits for the other two to have started
// (so one after another, the first would give up and fail), and the next
// stage starts only once all three ended. Each job's output comes whole,
// in the jobs' order.
func TestRunsJobsSideBySide(t *testing.T) {
	dir := t.TempDir()
	ci := filepath.Join(dir, "ci.yml")
	os.WriteFile(ci, []byte(`stages: [shards, merge]
shard:
  stage: shards
  parallel: 3
  script:
    - touch "started-$CI_NODE_INDEX"
    - for i in $(seq 600); do [ "$(ls started-* | wc -l)" = 3 ] && break; sleep 0.1; done
    - test "$(ls started-* | wc -l)" = 3
    - echo "shard $CI_NODE_INDEX saw the others"
    - touch "ended-$CI_NODE_INDEX"
merge:
  stage: merge
  script:
    - test "$(ls ended-* | wc -l)" = 3
    - echo merged
`), 0o644)
	jobs, err := LoadGitLab(ci, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if failed := Failed(Run(jobs, Config{Project: dir, Work: t.TempDir(), Log: &out, Parallel: 3})); len(failed) > 0 {
		t.Fatalf("failed %v, want the three shards side by side, then the merge\n%s", failed, out.String())
	}
	var order []int
	for _, want := range []string{"shard 1 saw", "shard 2 saw", "shard 3 saw", "merged"} {
		order = append(order, strings.Index(out.String(), want))
	}
	if slices.Contains(order, -1) || !slices.IsSorted(order) {
		t.Errorf("the output is not each job's whole, in order (%v):\n%s", order, out.String())
	}
}

// A job that needs a job that has not run before it (a later one, itself,
// or none of that name) is skipped, one after another or side by side:
// it never waits for what cannot come first.
func TestANeedThatCannotComeFirstSkipsTheJob(t *testing.T) {
	step := []Step{{Name: "script", Lines: []string{"true"}, Script: "true", Shell: []string{"bash"}}}
	for _, parallel := range []int{1, 3} {
		jobs := []Job{
			{Name: "early", Needs: []string{"late"}, Timeout: time.Minute, Steps: step},
			{Name: "self", Needs: []string{"self"}, Timeout: time.Minute, Steps: step},
			{Name: "orphan", Needs: []string{"nobody"}, Timeout: time.Minute, Steps: step},
			{Name: "late", Timeout: time.Minute, Steps: step},
		}
		var out bytes.Buffer
		var got []string
		for _, r := range Run(jobs, Config{Project: t.TempDir(), Work: t.TempDir(), Log: &out, Parallel: parallel}) {
			got = append(got, r.Name+" "+r.Status)
		}
		if want := []string{"early skipped", "self skipped", "orphan skipped", "late passed"}; !slices.Equal(got, want) {
			t.Errorf("parallel %d: %v, want %v\n%s", parallel, got, want, out.String())
		}
	}
}

// storePackages are every store's Debian packages (cluster.Store's
// Packages), what lockchaos list --packages writes.
func storePackages() []string {
	var out []string
	for _, name := range cluster.StoreNames() {
		s, _ := cluster.LookupStore(name)
		out = append(out, s.Packages...)
	}
	return out
}
