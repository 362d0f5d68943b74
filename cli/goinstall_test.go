package cli

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/scenarios"
)

// SlowTestsEnv, set to 1, runs the tests that take minutes (.ci/run sets
// it): TestGoInstallFromModuleProxy builds every shipped adapter from
// nothing.
const SlowTestsEnv = "LOCKCHAOS_SLOW_TESTS"

// testVersion is the version the module proxy of TestGoInstallFromModuleProxy
// serves the working tree as.
const testVersion = "v0.0.44"

// The README's install line, as a user runs it once the module is
// published: `go install github.com/lockchaos/lockchaos/cmd/lockchaos@VERSION`,
// here from a module proxy in a folder (the layout proxy.golang.org
// serves, holding this working tree's tracked files as testVersion), into
// an empty GOPATH and HOME, with no repository in sight (moduleProxyEnv).
// Then, in an empty folder, the installed binary lists every shipped lock
// and every catalogue scenario, and the catalogue's scenarios of every
// store and every adapter language pass (installedQuick), each adapter
// they use built on first use into the empty HOME's cache (Maven, npm and
// pip fetch their pinned versions); adapter build builds the rest.
func TestGoInstallFromModuleProxy(t *testing.T) {
	t.Parallel()
	if os.Getenv(SlowTestsEnv) != "1" {
		t.Skipf("takes minutes (it builds every adapter from nothing): set %s=1", SlowTestsEnv)
	}
	tmp := t.TempDir()
	env, gopath := moduleProxyEnv(t, tmp)
	work := filepath.Join(tmp, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	goInstall(t, work, env)
	t.Logf("go install: %.0f s", time.Since(start).Seconds())
	installed := filepath.Join(gopath, "bin", "lockchaos")
	run := func(args ...string) (string, string, int) {
		var o, e bytes.Buffer
		cmd := exec.Command(installed, args...)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = work, env, &o, &e
		code := 0
		if err := cmd.Run(); err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatalf("lockchaos %v: %v", args, err)
			}
			code = ee.ExitCode()
		}
		return o.String(), e.String(), code
	}
	stdout, stderr, code := run("list", "locks")
	if code != 0 {
		t.Fatalf("list locks: exit %d\n%s%s", code, stdout, stderr)
	}
	shipped, _ := filepath.Glob(filepath.Join("..", "adapters", "*", "*", "lock.yaml"))
	if len(shipped) < 17 {
		t.Fatalf("found %d shipped adapters in the repository", len(shipped))
	}
	for _, f := range shipped {
		name := filepath.Base(filepath.Dir(f))
		if !strings.Contains(stdout, "adapter: adapters/"+filepath.Base(filepath.Dir(filepath.Dir(f)))+"/"+name+"/lock.yaml") {
			t.Errorf("list locks does not show the shipped adapter %s\n%s", name, stdout)
		}
	}
	// Every scenario of the catalogue is in the binary.
	stdout, stderr, code = run("list", "scenarios")
	files, _ := filepath.Glob(filepath.Join("..", "scenarios", "*.yaml"))
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".yaml"); name != "grid" && !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+`\s`).MatchString(stdout) {
			t.Errorf("list scenarios does not show %s (exit %d)\n%s%s", name, code, stdout, stderr)
		}
	}
	start = time.Now()
	stdout, stderr, code = run("chaos", "--quick", "--scenarios", strings.Join(installedQuick, ","), "--out", filepath.Join(work, "quick"))
	t.Logf("chaos --quick, a scenario of each store and adapter language, the adapters they use built first: %.0f s\n%s", time.Since(start).Seconds(), stderr)
	// adapter build builds the rest (the quick catalogue uses some of
	// them), and not the ones chaos built.
	built := strings.Count(stderr, "is not built yet: building it now")
	// A cell the machine left with no evidence (inconclusive after its
	// own reruns: CI runs this test beside the whole matrix) is run again,
	// twice at most; a verdict that differs fails at once.
	for again := 1; again <= 2 && code == ExitMatrixIncomplete; again++ {
		sum, err := scenarios.ReadSummary(filepath.Join(work, "quick"))
		if err != nil {
			t.Fatal(err)
		}
		var missing []string
		for _, c := range sum.Cells {
			if c.Status == scenarios.StatusInconclusive {
				missing = append(missing, c.Name)
			}
		}
		if len(missing) == 0 {
			break
		}
		t.Logf("chaos --quick: no evidence from %v: run again", missing)
		stdout, stderr, code = run("chaos", "--quick", "--force", "--scenarios", strings.Join(missing, ","), "--out", filepath.Join(work, "quick"))
	}
	if code != ExitMatrixPassed || !strings.Contains(stdout, "PASSED: every verdict as expected") {
		t.Errorf("chaos --quick: exit %d\n%s\n%s", code, stdout, stderr)
	}
	start = time.Now()
	stdout, stderr, code = run("adapter", "build")
	t.Logf("adapter build, the rest: %.0f s\n%s", time.Since(start).Seconds(), stdout)
	if code != 0 || strings.Contains(stdout, "SKIPPED") || strings.Count(stdout, "up to date") < built {
		t.Errorf("adapter build: exit %d, want every adapter built, the %d built by chaos up to date\n%s\n%s", code, built, stdout, stderr)
	}
	if stdout, _, _ = run("list", "locks"); strings.Contains(stdout, "not built yet") {
		t.Errorf("after adapter build, list locks still shows adapters not built\n%s", stdout)
	}
	for attempt := 1; attempt <= 3; attempt++ {
		// A run the machine left with no evidence is run again.
		os.RemoveAll(filepath.Join(work, "again"))
		if _, stderr, code = run("run", "--lock", "redis-py-lock", "--duration", "1s", "--out", filepath.Join(work, "again")); code != ExitInconclusive {
			break
		}
	}
	if code != ExitSafe || strings.Contains(stderr, "not built yet") {
		t.Errorf("a run after the builds: exit %d, want the adapter found built\n%s", code, stderr)
	}

	// A lock library's own adapter, as its maintainer starts one: init,
	// check, and an audit its CI can hold (issue 44's done-means), with the
	// installed binary, outside any clone.
	if stdout, stderr, code = run("adapter", "init", "--lang", "python", "mylock"); code != 0 {
		t.Fatalf("adapter init: exit %d\n%s%s", code, stdout, stderr)
	}
	if stdout, stderr, code = run("adapter", "check", filepath.Join("mylock", "lock.yaml")); code != 0 || !strings.Contains(stdout, "PASSED") {
		t.Fatalf("adapter check of the generated adapter: exit %d\n%s%s", code, stdout, stderr)
	}
	lf := filepath.Join("mylock", "lock.yaml")
	for attempt := 1; attempt <= 2; attempt++ {
		// A claim a busy machine left with too few seeds of evidence fails
		// the audit honestly: run it again, once.
		os.RemoveAll(filepath.Join(work, "held"))
		stdout, stderr, code = run("audit", "--lock-file", lf, "--claims", "latency", "--nemeses", "latency", "--refs", "none",
			"--seeds", "3", "--parallel", "2", "--junit", "a.xml", "--out", "held")
		if !strings.Contains(stdout, "not enough evidence for latency") {
			break
		}
	}
	if x, _ := os.ReadFile(filepath.Join(work, "a.xml")); code != ExitClaimsHeld || !strings.Contains(string(x), `failures="0"`) {
		t.Errorf("audit --claims latency: exit %d, want %d with a passing JUnit\n%s%s\n%s", code, ExitClaimsHeld, stdout, stderr, x)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		// Likewise: a claim left with too few seeds of evidence is no
		// finding either way.
		os.RemoveAll(filepath.Join(work, "broken"))
		stdout, stderr, code = run("audit", "--lock-file", lf, "--claims", "pause-client", "--nemeses", "pause-client", "--refs", "none",
			"--seeds", "3", "--min-seeds", "3", "--parallel", "2", "--shrink-budget", "20s", "--shrink-tries", "1", "--out", "broken")
		if !strings.Contains(stdout, "not enough evidence for pause-client") {
			break
		}
	}
	if code != ExitClaimsBroken || !strings.Contains(stdout, "CLAIM BROKEN: pause-client broke mylock (witness: broken/witness/pause-client/") {
		t.Errorf("audit --claims pause-client: exit %d, want %d naming the witness\n%s%s", code, ExitClaimsBroken, stdout, stderr)
	}
	for _, out := range []string{"held", "broken"} {
		md, err := os.ReadFile(filepath.Join(work, out, rundir.AuditMarkdownFile))
		if err != nil {
			t.Fatal(err)
		}
		if m := absolutePath.FindString(string(md)); m != "" || strings.Contains(string(md), work) {
			t.Errorf("%s/audit.md holds an absolute path (%q):\n%s", out, m, md)
		}
	}
}

// moduleProxyEnv serves this working tree as lockchaos's module at
// testVersion from a module proxy in tmp (serveModule), and is the
// environment of a machine with no clone in sight that installs from it:
// an empty HOME and GOPATH under tmp, GOPATH/bin on PATH, and the
// machine's own Go settings left out. The other modules come from this
// machine's module cache, which is in the proxy's layout too
// (GOMODCACHE/cache/download), so an install needs no network (nor the
// checksum database: GOSUMDB=off); the build cache is shared (it only
// saves compiling).
func moduleProxyEnv(t *testing.T, tmp string) (env []string, gopath string) {
	t.Helper()
	goEnv := func(name string) string {
		b, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(b))
	}
	modCache, buildCache := goEnv("GOMODCACHE"), goEnv("GOCACHE")
	proxy := filepath.Join(tmp, "proxy")
	serveModule(t, proxy, testVersion)
	home, gopath := filepath.Join(tmp, "home"), filepath.Join(tmp, "gopath")
	for _, d := range []string{home, gopath} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The machine's own settings that point elsewhere are left out.
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "HOME", "GOPATH", "GOMODCACHE", "GOBIN", "GOFLAGS", "GOPROXY", "GONOSUMDB", "GONOPROXY", "GOPRIVATE", "GOSUMDB",
			"XDG_CACHE_HOME", "XDG_CONFIG_HOME", "LOCKCHAOS_ADAPTERS", "LOCKCHAOS_CLOCKSHIM", "GOTOOLCHAIN":
			continue
		}
		env = append(env, kv)
	}
	// -trimpath: a package compiled from a module is known in the build
	// cache by its module and version, not by the GOPATH it was unpacked
	// in, so the installs of the tests share their compiles (goInstall).
	env = append(env, "HOME="+home, "GOPATH="+gopath, "GOCACHE="+buildCache, "GOTOOLCHAIN=local", "GOFLAGS=-trimpath",
		"GOPROXY=file://"+proxy+",file://"+filepath.Join(modCache, "cache", "download"),
		// This working tree is in no checksum database, and this machine
		// may not reach one: the other modules are the ones its go.sum
		// names, from this machine's module cache.
		"GOSUMDB=off",
		"PATH="+filepath.Join(gopath, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	return env, gopath
}

// installedQuick are the catalogue's scenarios the installed binary runs:
// one of every store the catalogue has a scenario of (Redis with
// Sentinel, etcd, ZooKeeper, PostgreSQL behind PgBouncer, MariaDB,
// Hazelcast's member jar; NATS has none) and of every adapter language
// (Java, Node, Python; Go is built in), the clock shim among them.
var installedQuick = []string{
	"manual-sentinel-failover-loses-lock",
	"etcd-mutex-pause-past-lease",
	"zk-fenced-tokens-survive-failover",
	"pg-advisory-behind-pgbouncer",
	"mariadb-get-lock-replica-promoted",
	"hazelcast-fenced-lock-pause-past-session",
	"shedlock-jdbc-clock-ahead-takes-a-held-lock",
	"node-redlock-validity-on-a-stepped-back-clock",
	"redis-py-reacquire-deletes-a-held-lock",
}

// moduleCompile is held by the first go install from a test's module
// proxy: the slow tests that install lockchaos (this one and
// TestCITemplatesRunAsWritten) run side by side, and with -trimpath
// (moduleProxyEnv) a compile is the same whatever the GOPATH, so the
// second finds the first's in the shared build cache instead of
// compiling everything again beside it.
var moduleCompile sync.Mutex

// goInstall runs the README's install line in dir with env
// (moduleProxyEnv), holding moduleCompile.
func goInstall(t *testing.T, dir string, env []string) {
	t.Helper()
	moduleCompile.Lock()
	defer moduleCompile.Unlock()
	install := exec.Command("go", "install", "github.com/lockchaos/lockchaos/cmd/lockchaos@"+testVersion)
	install.Dir, install.Env = dir, env
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install: %v\n%s", err, out)
	}
}

// serveModule writes, under dir, a module proxy (the GOPROXY protocol's
// layout: MODULE/@v/list, VERSION.info, VERSION.mod, VERSION.zip) that
// serves this working tree's tracked files as lockchaos's module at
// version. The zip follows the module zip rules: every file under
// MODULE@VERSION/, none in a folder holding another module (example/).
func serveModule(t *testing.T, dir, version string) {
	t.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v", err)
	}
	root := strings.TrimSpace(string(top))
	ls, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	const module = "github.com/lockchaos/lockchaos"
	v := filepath.Join(dir, filepath.FromSlash(module), "@v")
	if err := os.MkdirAll(v, 0o755); err != nil {
		t.Fatal(err)
	}
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	files := 0
	for _, name := range strings.Split(strings.TrimRight(string(ls), "\x00"), "\x00") {
		if inSubmodule(root, name) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, name))
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		f, err := zw.Create(module + "@" + version + "/" + name)
		if err == nil {
			_, err = f.Write(b)
		}
		if err != nil {
			t.Fatal(err)
		}
		files++
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]string{"Version": version, "Time": time.Now().UTC().Format(time.RFC3339)})
	for name, b := range map[string][]byte{"list": []byte(version + "\n"), version + ".info": info, version + ".mod": mod, version + ".zip": zipped.Bytes()} {
		if err := os.WriteFile(filepath.Join(v, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("module proxy %s: %s@%s, %d files", dir, module, version, files)
}

// inSubmodule says whether the tracked file name lies in a folder (below
// root) that holds a go.mod of its own: another module, left out of the zip.
func inSubmodule(root, name string) bool {
	for d := filepath.Dir(name); d != "."; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(root, d, "go.mod")); err == nil {
			return true
		}
	}
	return false
}
