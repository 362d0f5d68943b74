package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The bash script, sourced into a real bash, completes through the binary:
// commands, flags, lock and nemesis names, options.
func TestBashCompletionCompletesNamesAndFlags(t *testing.T) {
	script, _, code := lockchaos(t, "completion", "bash")
	if code != 0 {
		t.Fatalf("completion bash: exit %d", code)
	}
	file := filepath.Join(t.TempDir(), "lockchaos.bash")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		line string // the command line typed so far, the word being completed last
		want string
	}{
		{"lockchaos ru", "run "},
		{"lockchaos run --lo", "--lock "},
		{"lockchaos run --lock redl", "redlock "},
		{"lockchaos run --lock token-lua --nemesis pause-client,pause-n", "pause-client,pause-node"},
		{"lockchaos run --opt setnx-expire.g", "setnx-expire.gap="},
		{"lockchaos list zk-lock-f", "zk-lock-fenced "},
		{"lockchaos completion fi", "fish "},
	} {
		words := strings.Fields(tc.line)
		if strings.HasSuffix(tc.line, " ") {
			words = append(words, "")
		}
		words[0] = bin
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, "'"+w+"'")
		}
		prog := "source " + file + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\nCOMP_CWORD=" + strconv.Itoa(len(words)-1) +
			"\n_lockchaos\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
		out, err := exec.Command("bash", "--norc", "--noprofile", "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.line, err, out)
		}
		if !strings.Contains("\n"+string(out), "\n"+tc.want+"\n") {
			t.Errorf("%s<TAB>: %q, want %q among the candidates", tc.line, out, tc.want)
		}
	}
}

// In an interactive bash in a terminal (tmux), Tab completes a lock name.
func TestBashCompletionInATerminal(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (make setup installs it)")
	}
	dir := t.TempDir()
	script, _, _ := lockchaos(t, "completion", "bash")
	rc := filepath.Join(dir, "rc")
	// lockchaos is the test's binary, as on a PATH.
	if err := os.WriteFile(rc, []byte("PS1='$ '\nlockchaos() { "+bin+" \"$@\"; }\n"+script), 0o644); err != nil {
		t.Fatal(err)
	}
	session := "lockchaos-completion-" + strconv.Itoa(os.Getpid())
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", append([]string{"-L", session}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tmux("new-session", "-d", "-s", session, "-x", "200", "-y", "20", "bash --noprofile --rcfile "+rc+" -i")
	t.Cleanup(func() { exec.Command("tmux", "-L", session, "kill-server").Run() })
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(tmux("capture-pane", "-p", "-t", session), "$"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("bash showed no prompt")
		}
	}
	tmux("send-keys", "-t", session, "lockchaos run --lock zk-lock-fen", "Tab")
	var screen string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		screen = tmux("capture-pane", "-p", "-t", session)
		// (capture-pane drops the space Tab added after the name)
		if strings.Contains(screen, "$ lockchaos run --lock zk-lock-fenced") {
			return
		}
	}
	t.Errorf("Tab did not complete zk-lock-fen to zk-lock-fenced; the screen:\n%s", screen)
}
