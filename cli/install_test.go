package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// lockchaosIn runs the binary in dir with env added, as an installed binary
// runs outside the repository.
func lockchaosIn(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = &o, &e
	var ee *exec.ExitError
	if err := cmd.Run(); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("lockchaos %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// Outside the repository a built-in scenario runs by its name; an unknown
// name lists the built-in ones.
func TestRunBuiltinScenarioByName(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "run")
	stdout, stderr, code := lockchaosIn(t, dir, nil, "run", "--scenario", "token-lua-no-fault", "--duration", "1s", "--out", out)
	if code != ExitSafe || !strings.Contains(stdout, "scenario token-lua-no-fault expects safe: as expected") {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	_, stderr, code = lockchaosIn(t, dir, nil, "run", "--scenario", "token-lua-no-faults", "--out", filepath.Join(dir, "bad"))
	if code != ExitUsage || !strings.Contains(stderr, `scenario "token-lua-no-faults": no such file, and no built-in scenario has that name (did you mean token-lua-no-fault?); built-in: `) || !strings.Contains(stderr, "token-lua-no-fault") {
		t.Errorf("unknown name: exit %d, stderr %q", code, stderr)
	}
}

// An installed binary, with no repository and no built shim anywhere: the
// lua lock runs its bundled script, and the clock shim is compiled into
// the (empty) cache on first use, so a clock jump lands.
func TestInstalledBinaryRunsLuaAndClockFaults(t *testing.T) {
	if _, err := os.Stat(filepath.Join(filepath.Dir(bin), "clockshim.so")); err == nil {
		t.Fatal("the test binary has a clock shim beside it")
	}
	dir, cache := t.TempDir(), t.TempDir()
	env := []string{"XDG_CACHE_HOME=" + cache, "LOCKCHAOS_CLOCKSHIM="}
	out := filepath.Join(dir, "run")
	stdout, stderr, code := lockchaosIn(t, dir, env, "run", "--lock", "lua", "--opt", "lua.file=builtin:token.lua",
		"--nemesis", "clock-jump", "--ttl", "300ms", "--hold", "60ms", "--duration", "3s", "--seed", "1", "--out", out)
	if code != ExitViolation || !strings.Contains(stdout, "caused by fault clock-jump") {
		t.Errorf("exit %d, want a violation caused by the clock jump\n%s\n%s", code, stdout, stderr)
	}
	if libs, _ := filepath.Glob(filepath.Join(cache, "lockchaos", "clockshim-*.so")); len(libs) != 1 {
		t.Errorf("the cache holds %v, want the compiled shim", libs)
	}
}
