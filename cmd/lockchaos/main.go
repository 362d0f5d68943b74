// Command lockchaos tests distributed locks for mutual exclusion under real
// faults. See README.md.
package main

import (
	"os"

	"github.com/lockchaos/lockchaos/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
