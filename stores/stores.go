// Package stores gathers the stores that live in a folder of their own,
// stores/NAME: a Go package that registers the store (cluster.RegisterStore,
// its members started with cluster.StartServers or an ensemble of its own)
// and its locks (locks.Register) from an init function. This file imports
// each for that, and the command imports this package; docs/stores.md
// says what else a new store needs (its grid row and its docs row).
//
// The first four stores (redis, etcd, zookeeper, postgres) are still files
// of package cluster and locks.
package stores

import (
	_ "github.com/lockchaos/lockchaos/stores/hazelcast"
	_ "github.com/lockchaos/lockchaos/stores/mariadb"
	_ "github.com/lockchaos/lockchaos/stores/nats"
)
