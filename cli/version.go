package cli

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/lockchaos/lockchaos/rundir"
)

// versionModules are the modules whose versions decide what a run tests:
// the lock libraries, the Redis client, the checker and the proxy.
var versionModules = []string{
	"github.com/go-redsync/redsync/v4",
	"github.com/bsm/redislock",
	"github.com/redis/go-redis/v9",
	"github.com/anishathalye/porcupine",
	"github.com/Shopify/toxiproxy/v2",
	"github.com/testcontainers/testcontainers-go",
}

// cmdVersion prints this build's version (its module version, or the VCS
// revision it was built from), the Go version, and the versions of the
// modules a verdict depends on.
func cmdVersion(w io.Writer) int {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		fmt.Fprintln(w, "lockchaos (no build information)")
		return 0
	}
	fmt.Fprintf(w, "lockchaos %s\n%s\n", rundir.Version(), bi.GoVersion)
	deps := map[string]string{}
	for _, d := range bi.Deps {
		v := d.Version
		if d.Replace != nil {
			v = d.Replace.Path + " " + d.Replace.Version
		}
		deps[d.Path] = v
	}
	for _, m := range versionModules {
		if v, ok := deps[m]; ok {
			fmt.Fprintf(w, "  %-45s %s\n", m, v)
		}
	}
	return 0
}
