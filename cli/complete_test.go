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
	t.Parallel()
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

// In an interactive bash, zsh and fish, each in a terminal (tmux), with
// the script "lockchaos completion SHELL" prints loaded as its usage says,
// Tab completes a lock name.
func TestCompletionInATerminal(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (make setup installs it)")
	}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		t.Run(sh, func(t *testing.T) {
			if _, err := exec.LookPath(sh); err != nil {
				t.Skipf("%s is not installed (make setup installs it)", sh)
			}
			dir := t.TempDir()
			script, _, code := lockchaos(t, "completion", sh)
			if code != 0 {
				t.Fatalf("completion %s: exit %d", sh, code)
			}
			file := filepath.Join(dir, "lockchaos."+sh)
			if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
				t.Fatal(err)
			}
			// lockchaos is the test's binary, as on a PATH; the prompt is "$ ".
			var rc, start string
			switch sh {
			case "bash":
				rc, start = "PS1='$ '\nlockchaos() { "+bin+" \"$@\"; }\nsource "+file+"\n", "bash --noprofile --rcfile "+filepath.Join(dir, "rc")+" -i"
			case "zsh":
				rc, start = "PS1='$ '\nlockchaos() { "+bin+" \"$@\"; }\nautoload -U compinit && compinit -u\nsource "+file+"\n", "ZDOTDIR="+dir+" zsh -i"
			case "fish":
				rc, start = "function fish_prompt; echo -n '$ '; end\nfunction lockchaos; "+bin+" $argv; end\nsource "+file+"\n", "fish --no-config --init-command 'source "+filepath.Join(dir, "rc")+"'"
			}
			name := "rc"
			if sh == "zsh" {
				name = ".zshrc"
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(rc), 0o644); err != nil {
				t.Fatal(err)
			}
			session := "lockchaos-completion-" + sh + "-" + strconv.Itoa(os.Getpid())
			tmux := func(args ...string) string {
				out, err := exec.Command("tmux", append([]string{"-L", session}, args...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("tmux %v: %v\n%s", args, err, out)
				}
				return string(out)
			}
			tmux("new-session", "-d", "-s", session, "-x", "200", "-y", "20", start)
			t.Cleanup(func() { exec.Command("tmux", "-L", session, "kill-server").Run() })
			for deadline := time.Now().Add(20 * time.Second); !strings.Contains(tmux("capture-pane", "-p", "-t", session), "$"); time.Sleep(100 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%s showed no prompt:\n%s", sh, tmux("capture-pane", "-p", "-t", session))
				}
			}
			tmux("send-keys", "-t", session, "lockchaos run --lock zk-lock-fen", "Tab")
			var screen string
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				screen = tmux("capture-pane", "-p", "-t", session)
				// (capture-pane drops the space Tab added after the name)
				if strings.Contains(screen, "$ lockchaos run --lock zk-lock-fenced") && !strings.Contains(screen, `zk-lock-fenced\`) {
					return
				}
			}
			t.Errorf("%s: Tab did not complete zk-lock-fen to zk-lock-fenced; the screen:\n%s", sh, screen)
		})
	}
}
