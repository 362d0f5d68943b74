package locks

// EtcdMutexFenced is etcd-mutex with a fencing token: the create revision
// of the grant's lock key. etcd's revision counts every write to the whole
// keyspace, so a later grant's key always has a higher one, and the
// resource refuses a holder whose lease expired once a later one wrote.
// The lock breaks under a pause exactly as etcd-mutex does; the point is
// that the resource does not.
type EtcdMutexFenced struct{ *EtcdMutex }

func init() {
	Register(Spec{
		Name:        "etcd-mutex-fenced",
		Description: "etcd-mutex plus a fencing token (the lock key's create revision) that the resource checks on every read and write",
		Library:     "Go, etcd client/v3 3.5.17 `concurrency`",
		Weakness:    "the lock breaks, the resource does not — across a leader failover too",
		Store:       "etcd",
		KeepsAlive:  true,
		Nodes:       3,
		New: func(cfg Config) (Locker, error) {
			m, err := newEtcdMutex(cfg, true)
			if err != nil {
				return nil, err
			}
			return EtcdMutexFenced{m}, nil
		},
	})
}
