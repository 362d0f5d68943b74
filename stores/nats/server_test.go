package nats

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The scripts that build images read the server's release from server.go
// with one sed expression (stores/nats/image.sh, and lockchaos's own image,
// docker/build-lockchaos-image.sh): it must find ServerVersion.
func TestTheImageScriptsReadTheServerVersion(t *testing.T) {
	for _, script := range []string{"image.sh", "../../docker/build-lockchaos-image.sh"} {
		b, err := os.ReadFile(script)
		if err != nil {
			t.Fatal(err)
		}
		var expr string
		for _, line := range strings.Split(string(b), "\n") {
			if i := strings.Index(line, "sed -n '"); i >= 0 && strings.Contains(line, "ServerVersion") {
				expr = line[i+len("sed -n '"):]
				expr = expr[:strings.Index(expr, "'")]
			}
		}
		if expr == "" {
			t.Fatalf("%s: no sed expression that reads ServerVersion", script)
		}
		out, err := exec.Command("sed", "-n", expr, "server.go").Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(out)); got != ServerVersion {
			t.Errorf("%s reads %q from server.go, want %q", script, got, ServerVersion)
		}
	}
}

// A release that is not a nats-server tag is refused before go install
// sees it.
func TestAServerVersionMustBeAReleaseTag(t *testing.T) {
	for _, v := range []string{"latest", "2.9.20", "v2.9.20 -x", "master"} {
		if _, err := serverBin(context.Background(), v); err == nil || !strings.Contains(err.Error(), "want a nats-server release tag") {
			t.Errorf("server version %q: %v", v, err)
		}
	}
}
