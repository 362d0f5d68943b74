package procs

import (
	"os/exec"
	"strconv"
	"testing"
)

func TestChildrenFindsAChildByNameAndNotOthers(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	want := "sleep " + strconv.Itoa(cmd.Process.Pid)
	found := false
	for _, c := range Children("slee") {
		found = found || c == want
	}
	if !found {
		t.Errorf("Children(%q) = %v, want %q in it", "slee", Children("slee"), want)
	}
	if got := Children("no-such-command"); len(got) != 0 {
		t.Errorf("Children(no-such-command) = %v", got)
	}
	cmd.Process.Kill()
	cmd.Wait()
	for _, c := range Children("slee") {
		if c == want {
			t.Errorf("a reaped child is still listed: %s", c)
		}
	}
}
