package linuxonly

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// go build (and go install) for another system stops with the one plain
// message, not with the errors of the packages that use Linux's process
// controls (Pdeathsig and the rest).
func TestBuildForAnotherSystemSaysLinuxOnly(t *testing.T) {
	for _, goos := range []string{"darwin", "windows"} {
		cmd := exec.Command("go", "build", "-o", os.DevNull, "github.com/lockchaos/lockchaos/cmd/lockchaos")
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("GOOS=%s go build succeeded", goos)
			continue
		}
		text := string(out)
		if !strings.Contains(text, "lockchaos runs only on Linux: see README.md, Install") || strings.Contains(text, "Pdeathsig") || strings.Count(text, "\n") > 2 {
			t.Errorf("GOOS=%s go build said:\n%s\nwant only that lockchaos runs only on Linux", goos, text)
		}
	}
}
