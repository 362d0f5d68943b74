package locks

func init() {
	// The czxid of the lock node is the zxid of the write that created it:
	// ZooKeeper orders every write of the ensemble, across leader epochs
	// (the epoch is its high 32 bits), so a later grant has a higher one.
	Register(Spec{
		Name:        "zk-lock-fenced",
		Description: "zk-lock plus a fencing token, the lock node's czxid, that the resource checks on every read and write",
		Library:     "Go, lockchaos (go-zookeeper/zk 1.0.4)",
		Weakness:    "as `etcd-mutex-fenced`",
		Store:       "zookeeper",
		KeepsAlive:  true,
		Nodes:       3,
		New:         func(cfg Config) (Locker, error) { return newZKLock(cfg, true), nil },
	})
}
