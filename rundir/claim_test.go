package rundir

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// claimEnv, set, makes this test binary a run of its own (TestMain): it
// claims the folder named, writes to its history, says "claimed", and
// lives until its standard input closes or it is killed.
const claimEnv = "LOCKCHAOS_TEST_CLAIM"

func TestMain(m *testing.M) {
	if dir := os.Getenv(claimEnv); dir != "" {
		c, err := Claim(dir, true)
		if err != nil {
			fmt.Println("refused:", err)
			os.Exit(1)
		}
		f, err := os.OpenFile(filepath.Join(dir, HistoryFile), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			fmt.Println("history:", err)
			os.Exit(1)
		}
		fmt.Fprintln(f, `{"kind":"run-start"}`)
		fmt.Println("claimed")
		bufio.NewReader(os.Stdin).ReadString('\n')
		f.Close()
		c.Release()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// liveRun starts another process that claims dir with --force and keeps
// its run live, and returns it once it has.
func liveRun(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), claimEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if line != "claimed\n" {
		t.Fatalf("the first run did not claim %s: %q", dir, line)
	}
	return cmd
}

// A second run given --force and the folder of a run still live (another
// process) is refused, with the folder and the live run's process named,
// and the live run's history is left whole; once that run is killed (no
// Release: the kernel lets go of its flock), --force replaces its files.
func TestForceRefusesTheFolderOfALiveRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	first := liveRun(t, dir)
	hist := filepath.Join(dir, HistoryFile)
	before, err := os.ReadFile(hist)
	if err != nil || len(before) == 0 {
		t.Fatalf("the live run's history: %q, %v", before, err)
	}

	c, err := Claim(dir, true)
	var held *HeldError
	if err == nil {
		c.Release()
		t.Fatalf("--force claimed %s while the run of process %d was writing it", dir, first.Process.Pid)
	}
	if !errors.As(err, &held) || !held.Live ||
		!strings.Contains(err.Error(), fmt.Sprintf("%s: a run (process %d) is still writing it", dir, first.Process.Pid)) {
		t.Errorf("--force on a live run's folder: %v; want a HeldError naming %s and process %d", err, dir, first.Process.Pid)
	}
	if after, err := os.ReadFile(hist); err != nil || string(after) != string(before) {
		t.Errorf("the live run's history after the refused claim: %q, %v; want %q", after, err, before)
	}

	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	c, err = Claim(dir, true)
	if err != nil {
		t.Fatalf("--force on the folder of a run that was killed: %v", err)
	}
	defer c.Release()
	if after, err := os.ReadFile(hist); err != nil || len(after) != 0 {
		t.Errorf("--force after the run died: its history is %q (%v); want the new run's, empty", after, err)
	}
	if c2, err := Claim(dir, true); !errors.As(err, &held) || !held.Live {
		c2.Release()
		t.Errorf("a claim while this process holds the folder: %v; want it refused as live", err)
	}
}

// Without --force, a folder holding an ended run is refused as before,
// and the claim leaves nothing of its own behind in it.
func TestClaimRefusesAnEndedRunWithoutForce(t *testing.T) {
	dir := t.TempDir()
	c, err := Claim(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	c.Release()
	_, err = Claim(dir, false)
	var held *HeldError
	if !errors.As(err, &held) || held.Live || len(held.Found) != 1 || held.Found[0] != HistoryFile {
		t.Errorf("a second claim of an ended run's folder: %v; want a HeldError finding %s", err, HistoryFile)
	}
	if _, err := os.Lstat(filepath.Join(dir, LiveFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind: %v", LiveFile, err)
	}
}
