package nats

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
)

// ServerVersion is the nats-server release the store runs, built from the
// Go module proxy on first use (go install, its checksums verified): 2.9.21
// and later keep a clustered stream's expected-last-subject-sequence check
// serial (nats-server#4320); Debian bookworm's package, 2.9.10, does not,
// and two clients' creates of one key in a cluster both succeed
// (docs/track-record.md). image.sh builds the same one into the docker
// backend's image.
const ServerVersion = "v2.15.2"

// serverModule is the Go package go install builds.
const serverModule = "github.com/nats-io/nats-server/v2"

var buildMu sync.Mutex

// release is a nats-server tag: v2.9.20, v2.11.0-RC.1.
var release = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$`)

// serverBin is the nats-server of version ("": ServerVersion): in
// lockchaos's cache ($XDG_CACHE_HOME or ~/.cache,
// lockchaos/nats-server-VERSION), built there first when it is not. Two
// processes that build at once each build into a folder of their own and
// rename the result into place.
func serverBin(ctx context.Context, version string) (string, error) {
	if version == "" {
		version = ServerVersion
	}
	if !release.MatchString(version) {
		return "", fmt.Errorf("nats: server version %q: want a nats-server release tag, such as %s", version, ServerVersion)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("nats: where to keep nats-server %s: %w", version, err)
	}
	dir := filepath.Join(cache, "lockchaos", "nats-server-"+version)
	bin := filepath.Join(dir, "nats-server")
	buildMu.Lock()
	defer buildMu.Unlock()
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("nats: nats-server %s is built from the Go module proxy on first use, and Go is not on PATH", version)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(os.Stderr, "lockchaos: building nats-server %s from the Go module proxy into %s (first use; about a minute)\n", version, dir)
	cmd := exec.CommandContext(ctx, goBin, "install", "-trimpath", serverModule+"@"+version)
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("nats: build nats-server %s (go install %s@%s): %v\n%s", version, serverModule, version, err, out)
	}
	if err := os.Rename(filepath.Join(tmp, "nats-server"), bin); err != nil {
		return "", fmt.Errorf("nats: put the nats-server it built in place: %w", err)
	}
	return bin, nil
}
