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
	t.Parallel()
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
	// Gone, whoever removed it: a docker run starting meanwhile removes a
	// dead coordinator's containers too.
	left, _ := exec.Command("docker", "ps", "-aq", "--filter", "label="+cluster.LabelRun+"="+run).Output()
	if code != 0 || len(bytes.TrimSpace(left)) > 0 {
		t.Fatalf("clean: exit %d, %q %q; containers left: %q", code, out, errOut, left)
	}
	out, _, code = lockchaos(t, "clean", "--run", run)
	if code != 0 || !strings.Contains(out, "no lockchaos containers") {
		t.Errorf("second clean: exit %d, %q", code, out)
	}
}

// pgSegment is a member's System V segment as ipcs -mp shows it: its id
// and its creator's pid.
type pgSegment struct{ id, cpid int }

// pgSegmentsOf are the segments of the members of coordinator pid: the id
// each postmaster.pid names, created by the postmaster lockchaos recorded
// (shm-creator), checked to be there.
func pgSegmentsOf(t *testing.T, pid int) []pgSegment {
	t.Helper()
	var segs []pgSegment
	for _, d := range scratchDirsOf(t, pid) {
		b, err := os.ReadFile(filepath.Join(d, "data", "postmaster.pid"))
		lines := strings.Split(string(b), "\n")
		if err != nil || len(lines) < 7 || len(strings.Fields(lines[6])) != 2 {
			continue
		}
		id, err1 := strconv.Atoi(strings.Fields(lines[6])[1])
		c, _ := os.ReadFile(filepath.Join(d, "shm-creator"))
		cpid, err2 := strconv.Atoi(strings.TrimSpace(string(c)))
		var ds unix.SysvShmDesc
		if err1 != nil || err2 != nil {
			continue
		}
		if _, err := unix.SysvShmCtl(id, unix.IPC_STAT, &ds); err == nil && int(ds.Cpid) == cpid {
			segs = append(segs, pgSegment{id, cpid})
		}
	}
	return segs
}

// killWithWatchdog kills a coordinator and its docker watchdog (its child,
// a shell), the watchdog first, as a CI job's cgroup kill ends both.
func killWithWatchdog(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		args, _ := os.ReadFile(filepath.Join(filepath.Dir(s), "cmdline"))
		if len(f) > 1 && f[1] == strconv.Itoa(cmd.Process.Pid) && bytes.HasPrefix(args, []byte("/bin/sh\x00-c\x00read -r _")) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(s)))
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatalf("kill the watchdog %d: %v", pid, err)
			}
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// A PostgreSQL run whose coordinator is killed outright leaves System V
// segments (a postmaster killed by SIGKILL cannot remove its own); each
// cleanup removes them on either backend: `lockchaos clean`, and the next
// run as it starts. On docker the run's watchdog is killed too (as a CI
// job's cgroup kill would): the members keep running in their containers,
// attached, until the cleanup removes those.
func TestKilledPostgresRunLeavesNoSharedMemory(t *testing.T) {
	for _, backend := range []string{"local", "docker"} {
		for _, cleanup := range []string{"clean", "next-run"} {
			t.Run(backend+"/"+cleanup, func(t *testing.T) {
				out := t.TempDir()
				cmd := exec.Command(bin, "run", "--lock", "pg-advisory", "--backend", backend, "--ttl", "1s", "--duration", "60s", "--out", out)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				// Killed once the workload runs: every container is created
				// by then. (A coordinator killed while dockerd still creates
				// a container for it leaves one a cleanup that has already
				// listed cannot see; the next cleanup removes it.)
				var segs []pgSegment
				started := func() bool {
					b, _ := os.ReadFile(filepath.Join(out, "history.jsonl"))
					return bytes.Contains(b, []byte(`"run-start"`))
				}
				for i := 0; i < 600 && (len(segs) < 2 || !started()); i++ {
					time.Sleep(100 * time.Millisecond)
					segs = pgSegmentsOf(t, cmd.Process.Pid)
				}
				if len(segs) < 2 || !started() {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
					t.Fatalf("the members' segments (%v) and the workload's start (%v) were never both seen", segs, started())
				}
				killWithWatchdog(t, cmd)
				if backend == "local" {
					if left := waitGone(t, cmd.Process.Pid); len(left) > 0 {
						t.Errorf("left running after the coordinator was killed: %v", left)
					}
				}
				switch cleanup {
				case "clean":
					if _, stderr, code := lockchaos(t, "clean"); code != 0 {
						t.Fatalf("clean: exit %d: %s", code, stderr)
					}
				case "next-run":
					// Its verdict does not matter: it sweeps as it starts.
					lockchaos(t, "run", "--lock", "token-lua", "--backend", backend, "--duration", "500ms", "--out", t.TempDir())
				}
				// A segment removed while backends of its dead postmaster
				// are still exiting goes at their last detach.
				left := func() (ours []pgSegment) {
					for _, s := range segs {
						var ds unix.SysvShmDesc
						if _, err := unix.SysvShmCtl(s.id, unix.IPC_STAT, &ds); err == nil && int(ds.Cpid) == s.cpid {
							ours = append(ours, s)
						}
					}
					return ours
				}
				for i := 0; i < 100 && len(left()) > 0; i++ {
					time.Sleep(100 * time.Millisecond)
				}
				if l := left(); len(l) > 0 {
					ipcs, _ := exec.Command("ipcs", "-mp").CombinedOutput()
					t.Errorf("segments %v of the killed members (id, creator) are still there after %s:\n%s", l, cleanup, ipcs)
				}
				if names, _ := containersOf(t, cmd.Process.Pid); len(names) > 0 {
					t.Errorf("containers left after %s: %v", cleanup, names)
				}
			})
		}
	}
}
