package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"
)

// containersOf lists the names of the lockchaos containers that the
// coordinator pid started, and their data directories.
func containersOf(t *testing.T, pid int) (names, dirs []string) {
	t.Helper()
	api, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	list, err := api.ContainerList(context.Background(), client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", cluster.LabelManaged+"=1")})
	if err != nil {
		t.Fatalf("the docker tests need a Docker engine (run `make setup` as root): %v", err)
	}
	for _, c := range list.Items {
		if strings.HasPrefix(c.Labels[cluster.LabelOwner], strconv.Itoa(pid)+":") {
			names = append(names, strings.Join(c.Names, ","))
			dirs = append(dirs, c.Labels[cluster.LabelDir])
		}
	}
	return names, dirs
}

// startDockerRun starts a long docker-backend run with every kind of
// container (lock node, replica, resource, sentinels) and waits until they
// are all up.
func startDockerRun(t *testing.T) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	const want = 6 // n0, n0r1, resource, sentinel0-2
	dir := t.TempDir()
	cmd := exec.Command(bin, "run", "--backend", "docker", "--lock", "token-lua", "--nemesis", "pause-client",
		"--replicas", "1", "--sentinels", "3", "--ttl", "300ms", "--duration", "60s", "--out", dir)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := 0; i < 200 && len(names) < want; i++ {
		time.Sleep(100 * time.Millisecond)
		names, _ = containersOf(t, cmd.Process.Pid)
	}
	if n := len(names); n < want {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the run started %d containers %v, want %d (lock node, replica, resource, 3 sentinels):\n%s", n, names, want, out)
	}
	// Wait for the workload (the sentinels must first discover each other),
	// then let a fault get going.
	for i := 0; i < 200; i++ {
		if b, _ := os.ReadFile(filepath.Join(dir, "history.jsonl")); bytes.Contains(b, []byte(`"run-start"`)) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	return cmd, out
}

func TestSIGINTDockerRunLeavesNoContainer(t *testing.T) {
	cmd, out := startDockerRun(t)
	_ = cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || (ee.ExitCode() != ExitInconclusive && ee.ExitCode() != ExitViolation) {
		t.Fatalf("exit %v after SIGINT, want inconclusive (2) or violation (1):\n%s", err, out)
	}
	// The coordinator removes its containers before it exits: no waiting.
	if left, _ := containersOf(t, cmd.Process.Pid); len(left) > 0 {
		t.Errorf("containers left after SIGINT: %v", left)
	}
}

// A coordinator killed outright cannot clean up; its watchdog does, data
// directories included.
func TestKilledDockerCoordinatorLeavesNoContainer(t *testing.T) {
	cmd, _ := startDockerRun(t)
	_, dirs := containersOf(t, cmd.Process.Pid)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	var left []string
	for i := 0; i < 100; i++ {
		if left, _ = containersOf(t, cmd.Process.Pid); len(left) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Fatalf("containers left 10 s after the coordinator was killed: %v", left)
	}
	for _, d := range dirs {
		_, err := os.Stat(d)
		for i := 0; i < 50 && !os.IsNotExist(err); i++ { // it goes just after its container
			time.Sleep(20 * time.Millisecond)
			_, err = os.Stat(d)
		}
		if !os.IsNotExist(err) {
			t.Errorf("data directory %s left behind", d)
		}
	}
}

func TestCleanRemovesWhatADeadRunLeft(t *testing.T) {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	run := "clean-test-" + hex.EncodeToString(b)
	// A container of a run whose coordinator (no such pid) is gone; created,
	// never started.
	create := exec.Command("docker", "create", "--network", "none",
		"--label", cluster.LabelManaged+"=1", "--label", cluster.LabelRun+"="+run,
		"--label", cluster.LabelOwner+"=999999999:1", cluster.DefaultImage)
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("docker create (the docker tests need `make setup` as root): %v\n%s", err, out)
	}
	out, errOut, code := lockchaos(t, "clean", "--run", run)
	if code != 0 || !strings.Contains(out, "removed") {
		t.Fatalf("clean: exit %d, %q %q", code, out, errOut)
	}
	out, _, code = lockchaos(t, "clean", "--run", run)
	if code != 0 || !strings.Contains(out, "no lockchaos containers") {
		t.Errorf("second clean: exit %d, %q", code, out)
	}
}

// A PostgreSQL run whose coordinator is killed outright leaves no System V
// segment once its leftovers are cleaned, on either backend: each member's
// segment, named in its postmaster.pid, goes before that file does (the
// docker backend's watchdog, `lockchaos clean`, the next run).
func TestKilledPostgresRunLeavesNoSharedMemory(t *testing.T) {
	for _, backend := range []string{"local", "docker"} {
		t.Run(backend, func(t *testing.T) {
			cmd := exec.Command(bin, "run", "--lock", "pg-advisory", "--backend", backend, "--ttl", "1s", "--duration", "60s", "--out", t.TempDir())
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The members' segments, by the keys their postmaster.pid names.
			var keys []int
			for i := 0; i < 600 && len(keys) < 2; i++ {
				time.Sleep(100 * time.Millisecond)
				keys = keys[:0]
				for _, d := range scratchDirsOf(t, cmd.Process.Pid) {
					b, err := os.ReadFile(filepath.Join(d, "data", "postmaster.pid"))
					if lines := strings.Split(string(b), "\n"); err == nil && len(lines) > 6 {
						if f := strings.Fields(lines[6]); len(f) == 2 {
							if k, err := strconv.Atoi(f[0]); err == nil && k != 0 {
								keys = append(keys, k)
							}
						}
					}
				}
			}
			if len(keys) < 2 {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("the members' segments were never seen (keys %v)", keys)
			}
			for _, k := range keys {
				if _, err := unix.SysvShmGet(k, 0, 0); err != nil {
					t.Fatalf("segment %#x is not there while its member runs: %v", k, err)
				}
			}
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if left := waitGone(t, cmd.Process.Pid); len(left) > 0 {
				t.Errorf("left running after the coordinator was killed: %v", left)
			}
			if backend == "docker" {
				// The run's watchdog removes its containers.
				for i := 0; i < 300; i++ {
					if names, _ := containersOf(t, cmd.Process.Pid); len(names) == 0 {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
			if _, stderr, code := lockchaos(t, "clean"); code != 0 {
				t.Fatalf("clean: exit %d: %s", code, stderr)
			}
			for _, k := range keys {
				if _, err := unix.SysvShmGet(k, 0, 0); err == nil {
					t.Errorf("segment %#x of a killed member is still there after clean (ipcs -m)", k)
				}
			}
		})
	}
}
