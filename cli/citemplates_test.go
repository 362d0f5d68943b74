package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/internal/cirun"
	"github.com/lockchaos/lockchaos/rundir"
)

// The CI templates a lock library copies (docs/ci/, docs/ci.md) run as
// written: a lock library's repository is made here (the Perl adapter of
// docs/protocol.md under a name of its own, with its lock.yaml), the
// template put where the library's CI reads it, and its jobs run by
// internal/cirun as GitLab or GitHub Actions would run them, steps and
// all: the apt-get line (as root, or with sudo), lockchaos installed with
// the template's `go install …@latest` from the module proxy of
// moduleProxyEnv into an empty GOPATH and HOME, the audit, and the
// artifacts published. Only the variables the templates tell a user to
// set are set: the claim, and the fewest seeds and faults that verify it
// (3 seeds of latency). A claim that held passes the pipeline, with the
// JUnit XML and audit.md published where the template says and audit.md
// holding no absolute path; a claim that broke fails it and publishes
// them all the same. The sharded templates run their 4 shards, then merge
// them, the merge job publishing what the single job does.
func TestCITemplatesRunAsWritten(t *testing.T) {
	t.Parallel()
	if os.Getenv(SlowTestsEnv) != "1" {
		t.Skipf("takes minutes (each template installs lockchaos and audits a lock): set %s=1", SlowTestsEnv)
	}
	tmp := t.TempDir()
	env, _ := moduleProxyEnv(t, tmp)
	// The templates' own go install (their first step) then finds the
	// compile done, by this test or TestGoInstallFromModuleProxy.
	goInstall(t, tmp, env)
	for _, tc := range []struct {
		template, file string
		faults         string // the sharded templates' 4 shards get a fault each
	}{
		{"gitlab-audit.yml", ".gitlab-ci.yml", ""},
		{"github-audit.yml", ".github/workflows/lockchaos.yml", ""},
		{"gitlab-audit-sharded.yml", ".gitlab-ci.yml", ",none,jitter,reset-peer"},
		{"github-audit-sharded.yml", ".github/workflows/lockchaos.yml", ",none,jitter,reset-peer"},
	} {
		t.Run(tc.template, func(t *testing.T) {
			for _, claim := range []struct {
				name, flags string
				held        bool
			}{
				{"latency", "--nemeses latency" + tc.faults + " --refs none --seeds 3", true},
				{"pause-client", "--nemeses pause-client" + tc.faults + " --refs none --seeds 3 --shrink-budget 20s --shrink-tries 1", false},
			} {
				var results []cirun.Result
				var log bytes.Buffer
				for attempt := 1; attempt <= 2; attempt++ {
					// A claim a busy machine left with too few seeds of
					// evidence fails the audit honestly: run it again, once.
					dir := filepath.Join(tmp, strings.TrimSuffix(tc.template, ".yml")+"-"+claim.name, "attempt"+string(rune('0'+attempt)))
					repo := libraryRepo(t, dir, tc.template, tc.file)
					load := cirun.LoadGitLab
					if strings.HasPrefix(tc.template, "github") {
						load = cirun.LoadGitHub
					}
					jobs, err := load(filepath.Join(repo, tc.file), map[string]string{"CLAIMS": claim.name, "AUDIT_FLAGS": claim.flags})
					if err != nil {
						t.Fatal(err)
					}
					start := time.Now()
					log.Reset()
					// The sharded templates' shards go side by side, as
					// on the CI's runners.
					results = cirun.Run(jobs, cirun.Config{Project: repo, Work: filepath.Join(dir, "work"), Env: env, Log: &log, Parallel: 4})
					t.Logf("%s, claim %s: %.0f s", tc.template, claim.name, time.Since(start).Seconds())
					if !strings.Contains(log.String(), "not enough evidence for "+claim.name) {
						break
					}
				}
				failed := cirun.Failed(results)
				if claim.held != (len(failed) == 0) {
					t.Errorf("claim %s: jobs failed %v, want the pipeline to %s\n%s", claim.name, failed,
						map[bool]string{true: "pass", false: "fail on the broken claim"}[claim.held], log.String())
				}
				last := results[len(results)-1]
				junit, md := published(last, "junit.xml"), published(last, rundir.AuditMarkdownFile)
				if junit == "" || md == "" {
					t.Fatalf("claim %s: job %s published %v, want junit.xml and %s\n%s", claim.name, last.Name, last.Published, rundir.AuditMarkdownFile, log.String())
				}
				x, _ := os.ReadFile(junit)
				if !strings.Contains(string(x), claim.name) || strings.Contains(string(x), `failures="0"`) != claim.held {
					t.Errorf("claim %s: %s\n%s", claim.name, junit, x)
				}
				b, _ := os.ReadFile(md)
				if m := absolutePath.FindString(string(b)); m != "" || strings.Contains(string(b), tmp) {
					t.Errorf("claim %s: audit.md holds an absolute path (%q):\n%s", claim.name, m, b)
				}
				verdict := map[bool]string{true: "Verdict: claims held", false: "Verdict: claim broken"}[claim.held]
				if !strings.Contains(string(b), verdict) {
					t.Errorf("claim %s: audit.md does not say %q:\n%s", claim.name, verdict, b)
				}
				if strings.HasPrefix(tc.template, "github") && !strings.Contains(last.Summary, verdict) {
					t.Errorf("claim %s: the job summary does not say %q:\n%s", claim.name, verdict, last.Summary)
				}
			}
		})
	}
}

// libraryRepo makes, in dir, a lock library's repository as docs/ci.md
// has it: its adapter (the Perl adapter docs/protocol.md explains, named
// mylock: the shipped one keeps its own name) with its lock.yaml at the
// top, and the CI template docs/ci/template where its CI reads it (file).
func libraryRepo(t *testing.T, dir, template, file string) string {
	t.Helper()
	repo := filepath.Join(dir, "repo")
	for from, to := range map[string]string{
		"../adapters/perl/token/adapter.pl": "adapter.pl",
		"../adapters/perl/token/lock.yaml":  "lock.yaml",
		"../docs/ci/" + template:            file,
	} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if to == "lock.yaml" {
			b = bytes.Replace(b, []byte("\nname: perl-token\n"), []byte("\nname: mylock\n"), 1)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, to)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, to), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return repo
}

// published is the file called name that the job published (a file, or
// one at the top of a folder it published), or "".
func published(r cirun.Result, name string) string {
	for _, p := range r.Published {
		for _, f := range []string{p, filepath.Join(p, name)} {
			if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() && filepath.Base(f) == name {
				return f
			}
		}
	}
	return ""
}
