package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
)

const cleanUsage = `Usage: lockchaos clean [--run ID] [--live]

Removes what runs whose coordinator was killed before it could clean up left
behind: the containers of docker-backend runs (every container labelled
lockchaos, and the host directories they used) and the nodes' directories in
the scratch directory (/dev/shm, else the temp directory; every run also
removes these as it starts, and a docker-backend run the containers too),
with the System V shared memory a killed PostgreSQL member left. Containers
of a run whose coordinator is still running are left alone unless --live is
given.
`

func cmdClean(args []string) int {
	fs := newFlags("clean")
	run := fs.String("run", "", "only the containers of this run (their "+cluster.LabelRun+" label)")
	live := fs.Bool("live", false, "also remove the containers of runs that are still going")
	if code, ok := parse(fs, cleanUsage, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "lockchaos clean: unexpected argument %q\n", fs.Arg(0))
		return ExitUsage
	}
	dirs, derr := cluster.RemoveOrphanDirs()
	for _, d := range dirs {
		fmt.Println("removed directory", d)
	}
	if derr != nil {
		fmt.Fprintln(os.Stderr, "lockchaos clean:", derr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	removed, skipped, err := cluster.RemoveContainers(ctx, *run, *live)
	for _, name := range removed {
		fmt.Println("removed", name)
	}
	if len(skipped) > 0 {
		fmt.Printf("left %d container(s) of runs still going (--live removes them too): %v\n", len(skipped), skipped)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos clean:", err)
		return ExitSetup
	}
	if len(removed) == 0 && len(skipped) == 0 {
		fmt.Println("no lockchaos containers")
	}
	return 0
}
