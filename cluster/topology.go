package cluster

// Topology is what a run asks of the servers: the scenario file's
// topology section, the flags of the same names, and the part of the run's
// settings (settings.Run) and of the nemeses' view of a run
// (nemesis.Topology) that says it. Declared once here; both embed it.
type Topology struct {
	// Backend runs the servers: "local" (the default) or another
	// registered backend; Image is its container image where it uses one.
	Backend string `flag:"backend" file:"topology.backend" help:"where the store's servers run: local (processes: redis-server, etcd, ZooKeeper, postgres) or docker (one container each, host networking)"`
	Image   string `flag:"image" file:"topology.image" help:"container {image} of the Redis nodes for --backend docker (default lockchaos/redis:local, built by 'make store-images'; where a registry is reachable any redis or valkey image, e.g. redis:7.2); etcd, ZooKeeper and PostgreSQL run lockchaos/STORE:local, built by 'make store-images'"`
	// Nodes is the number of lock nodes; 0 uses the lock's default.
	Nodes int `flag:"nodes" file:"topology.nodes" help:"lock nodes (0: the lock's default)"`
	// Replicas per lock node, each replicating from its primary through a
	// relay of its own (for the failover nemeses).
	Replicas int `flag:"replicas" file:"topology.replicas" help:"replicas per lock node, each replicating through its own proxy (failover nemeses)"`
	// Sentinels watching every lock node's primary (needs Replicas), run by
	// the backend like the nodes; failover-sentinel lets them promote.
	Sentinels int `flag:"sentinels" file:"topology.sentinels" help:"sentinels watching the lock nodes, run by the backend like the nodes (failover-sentinel; needs --replicas)"`
	// Persistence of the lock nodes and replicas: "none" (the default),
	// "everysec" or "always" (AOF with that appendfsync).
	Persistence string `flag:"persistence" file:"topology.persistence" help:"lock nodes' persistence: none, everysec or always (AOF appendfsync; matters to crash-restart)"`
	// ServerVersion is the release of the store's server, for a store that
	// builds its server from source (Store.ServerVersion); "" its default.
	ServerVersion string `flag:"server-version" file:"topology.server-version" help:"the release of the store's server, for a store that builds its own from the Go module proxy (NATS: a nats-server tag such as v2.9.20; default the store's pinned one)"`
	// Pooler puts a connection pooler between the clients and each lock
	// node: "" (none) or "pgbouncer" (PostgreSQL).
	Pooler string `flag:"pooler" file:"topology.pooler" help:"a connection pooler between the clients and the store: pgbouncer (PostgreSQL locks: PgBouncer in transaction mode with one server connection, so that every client's statements share one backend session)"`
}
