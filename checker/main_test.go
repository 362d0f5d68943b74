package checker

import (
	"flag"
	"os"
	"testing"
)

// TestMain raises rapid's default of 100 checks per property: a check of
// this package's properties takes well under a millisecond, and the rare
// histories (ties at a reentrant hand-over, a death at a release) need many
// draws to turn up. -rapid.checks or RAPID_CHECKS still win.
func TestMain(m *testing.M) {
	flag.Parse()
	given := os.Getenv("RAPID_CHECKS") != ""
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "rapid.checks" })
	if !given {
		if err := flag.Set("rapid.checks", "3000"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
