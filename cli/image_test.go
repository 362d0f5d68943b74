package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/rundir"
)

// lockchaosImage is lockchaos's own image, as `make image` tags it.
const lockchaosImage = "lockchaos/lockchaos:local"

// A lock library's repository audited by lockchaos's image, as
// docs/containers.md says to run it: the folder mounted at /src, the
// container run as the caller, with docker's own /dev/shm (64 MB). The
// servers run in the container as local processes: the lock's own Redis
// and, for the etcd reference lock beside it, etcd. The audit of the
// claim of latency exits 0 on 3 seeds of evidence; audit.md and the JUnit
// are in the mounted folder, the caller's, and audit.md holds no absolute
// path; no run failed to start (etcd preallocates 64 MB per member, more
// than such a /dev/shm holds). A user the image does not name runs
// PostgreSQL. No container of the image is left.
//
// The image is built with `make image` unless the one there was built from
// this commit with no change since (its label io.lockchaos.commit, which
// the build writes with +dirty for a checkout with changes) and the
// checkout has none either.
func TestImageAuditsAMountedRepository(t *testing.T) {
	t.Parallel()
	if os.Getenv(SlowTestsEnv) != "1" {
		t.Skipf("takes minutes (it builds the image, every adapter in it): set %s=1", SlowTestsEnv)
	}
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		t.Fatalf("no Docker engine answers (%v): run make setup as root, which installs and starts one\n%s", err, out)
	}
	buildImage(t)

	root, _ := outsideLock(t)
	run := func() (string, string, int, time.Duration) {
		os.RemoveAll(filepath.Join(root, "audit"))
		os.Remove(filepath.Join(root, "audit.xml"))
		var o, e bytes.Buffer
		cmd := exec.Command("docker", "run", "--rm", "--user", fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()),
			"-v", root+":/src", "-w", "/src", lockchaosImage,
			"audit", "--lock-file", "mylock/lock.yaml", "--claims", "latency", "--nemeses", "latency",
			"--seeds", "3", "--parallel", "2", "--junit", "audit.xml", "--out", "audit")
		cmd.Stdout, cmd.Stderr = &o, &e
		start := time.Now()
		code := 0
		if err := cmd.Run(); err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatalf("docker run: %v", err)
			}
			code = ee.ExitCode()
		}
		return o.String(), e.String(), code, time.Since(start)
	}
	var stdout, stderr string
	var code int
	for attempt := 1; attempt <= 2; attempt++ {
		// A claim a busy machine left with too few seeds of evidence fails
		// the audit honestly: run it again, once.
		var took time.Duration
		stdout, stderr, code, took = run()
		t.Logf("the audit in a container: %.0f s", took.Seconds())
		if !strings.Contains(stdout, "not enough evidence for latency") {
			break
		}
	}
	if code != ExitClaimsHeld || !strings.Contains(stdout, "Verdict: claims held") {
		t.Fatalf("audit in the image: exit %d, want %d, claims held\n%s%s", code, ExitClaimsHeld, stdout, stderr)
	}

	md, err := os.ReadFile(filepath.Join(root, "audit", rundir.AuditMarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	if m := absolutePath.FindString(string(md)); m != "" || strings.Contains(string(md), root) {
		t.Errorf("audit.md holds an absolute path (%q):\n%s", m, md)
	}
	x, err := os.ReadFile(filepath.Join(root, "audit.xml"))
	if err != nil || !strings.Contains(string(x), `failures="0"`) {
		t.Errorf("the JUnit in the mounted folder (%v): want one that passes\n%s", err, x)
	}
	for _, f := range []string{"audit.xml", filepath.Join("audit", rundir.AuditMarkdownFile)} {
		if st, err := os.Stat(filepath.Join(root, f)); err == nil && st.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
			t.Errorf("%s belongs to uid %d, not to the caller (%d)", f, st.Sys().(*syscall.Stat_t).Uid, os.Getuid())
		}
	}

	// Every run of the lock and of its references started and ended.
	b, err := os.ReadFile(filepath.Join(root, "audit", "compare.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cmp struct {
		Rows []struct {
			Lock string
			Runs []struct {
				Seed    int
				Outcome string
				Why     string
			}
		}
	}
	if err := json.Unmarshal(b, &cmp); err != nil {
		t.Fatal(err)
	}
	refs := map[string]bool{}
	for _, r := range cmp.Rows {
		refs[r.Lock] = true
		for _, run := range r.Runs {
			if run.Outcome == "error" {
				t.Errorf("%s seed %d could not run in the container: %s", r.Lock, run.Seed, run.Why)
			}
		}
	}
	if !refs["etcd-mutex-fenced"] {
		t.Errorf("the audit ran %v, want the etcd reference lock among them", refs)
	}

	// A user the image's /etc/passwd does not name (docker run --user of
	// any caller) runs PostgreSQL too: initdb refuses a user with no name.
	if out, err := exec.Command("docker", "run", "--rm", "--user", "4321:4321", lockchaosImage,
		"run", "--lock", "pg-advisory", "--duration", "2s", "--out", "/tmp/run").CombinedOutput(); err != nil {
		t.Errorf("pg-advisory as a user the image does not name: %v\n%s", err, out)
	}

	if out, err := exec.Command("docker", "ps", "-a", "-q", "--filter", "ancestor="+lockchaosImage).Output(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("containers of %s left (%v): %s", lockchaosImage, err, out)
	}
}

// buildImage runs make image unless the image there was built from this
// commit, and neither it nor the checkout had changes.
func buildImage(t *testing.T) {
	t.Helper()
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v", err)
	}
	changes, err := exec.Command("git", "status", "--porcelain").Output()
	if err != nil {
		t.Fatalf("git status: %v", err)
	}
	label, _ := exec.Command("docker", "image", "inspect", "--format", `{{index .Config.Labels "io.lockchaos.commit"}}`, lockchaosImage).Output()
	if len(changes) == 0 && strings.TrimSpace(string(label)) == strings.TrimSpace(string(head)) {
		t.Logf("%s was built from this commit (%s): not built again", lockchaosImage, strings.TrimSpace(string(head)))
		return
	}
	start := time.Now()
	cmd := exec.Command("make", "--no-print-directory", "image")
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make image: %v\n%s", err, out)
	}
	built := string(out)
	if i := strings.LastIndex(built, "\nbuilt "); i >= 0 {
		built = built[i+1:]
	}
	t.Logf("make image: %.0f s: %s", time.Since(start).Seconds(), strings.TrimSpace(built))
}
