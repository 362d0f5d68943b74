// Package adapters carries the shipped adapter locks' sources
// (LANGUAGE/LIBRARY: lock.yaml, the language's own manifest with its pinned
// versions and lock file, the adapter's code) in the lockchaos binary, so
// that an installed binary has every shipped lock (locks.AdaptersDir
// unpacks them into the user's cache and builds them there on first use).
// What a build makes (node_modules/, target/, lib/) is left out.
package adapters

import "embed"

// Files holds the sources, under LANGUAGE/LIBRARY/ as in the repository.
// TestEmbeddedAdaptersAreTheTrackedOnes checks that no tracked file of an
// adapter is left out of the patterns.
//
//go:embed */*.py */*.js
//go:embed */*/lock.yaml */*/*.py */*/*.js */*/*.pl */*/*.txt */*/*.json */*/pom.xml */*/src
var Files embed.FS
