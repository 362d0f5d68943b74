// Command lockchaos-custom is lockchaos with the example's lock compiled in:
// every command of lockchaos, and --lock example-watch-release.
package main

import (
	"os"

	_ "github.com/lockchaos/lockchaos-example/customlock" // its init calls locks.Register
	"github.com/lockchaos/lockchaos/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
