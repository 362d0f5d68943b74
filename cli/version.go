package cli

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/rundir"
)

// versionModules are the modules whose versions decide what a run tests:
// the lock libraries, the checker and the proxy; the stores' clients are
// each store's (cluster.Store's Modules).
var versionModules = []string{
	"github.com/go-redsync/redsync/v4",
	"github.com/bsm/redislock",
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
	mods := versionModules
	for _, name := range cluster.StoreNames() {
		st, _ := cluster.LookupStore(name)
		mods = append(mods, st.Modules...)
	}
	for _, m := range mods {
		if v, ok := deps[m]; ok {
			fmt.Fprintf(w, "  %-45s %s\n", m, v)
		}
	}
	// The adapter locks' libraries, pinned in their own manifests.
	first := true
	for _, s := range locks.All() {
		if s.Adapter == nil || s.Adapter.Code() == "" {
			continue
		}
		if first {
			fmt.Fprintln(w, "adapter locks (their libraries, pinned in each adapter's manifest):")
			first = false
		}
		fmt.Fprintf(w, "  %-45s %s\n", s.Name, s.Adapter.Code())
	}
	return 0
}
