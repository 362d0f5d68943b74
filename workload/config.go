// Package workload is what each client process does: loop acquire → hold →
// release on the lock under test, doing a read-modify-write on the protected
// resource inside every hold, and report every step to the coordinator
// before acting on it.
package workload

import (
	"fmt"
	"time"

	"github.com/lockchaos/lockchaos/locks"
)

// Workload is what every client does, as the run's settings say it: the
// scenario file's workload section and the flags of the same names. The
// run's settings (settings.Run), each worker's Config and the nemeses'
// view of a run (nemesis.Topology) embed it; it is declared only here.
type Workload struct {
	Clients int           `flag:"clients" file:"workload.clients" help:"client processes"`
	Keys    int           `flag:"keys" file:"workload.keys" help:"lock keys the clients contend for"`
	TTL     time.Duration `flag:"ttl" file:"workload.ttl" span:"plain" help:"lock lease time"`
	Hold    time.Duration `flag:"hold" file:"workload.hold" help:"time spent inside each critical section"`
	// Wait > 0 makes acquires blocking for up to Wait, retrying every Retry.
	Wait  time.Duration `flag:"wait" file:"workload.wait" help:"blocking acquire: retry for up to this long (0: try once)"`
	Retry time.Duration `flag:"retry" file:"workload.retry" help:"blocking acquire: retry interval (0: TTL/10)"`
	// Think is the most a client sleeps between attempts.
	Think time.Duration `flag:"think" file:"workload.think" help:"most a client sleeps between attempts"`
	// OpTimeout bounds each operation on the lock's store; 0 means the TTL.
	OpTimeout time.Duration `flag:"op-timeout" file:"workload.op-timeout" help:"timeout of each operation on the lock's store (0: the TTL)"`
	// Renew runs a watchdog beside each hold that renews the lease every
	// TTL/3 (locks that implement locks.Renewer).
	Renew bool `flag:"renew" file:"workload.renew" help:"renew a held lease every TTL/3 from a watchdog in each client (locks that can renew)"`
	// Reentry is the probability that a hold acquires its lock once more
	// inside, and so releases it twice (reentrant locks).
	Reentry float64 `flag:"reentry" file:"workload.reentry" help:"probability that a hold acquires its lock again inside and releases it twice (reentrant locks)"`
}

// Config is sent by the coordinator to a worker on its standard input.
type Config struct {
	Workload
	Client int    `json:"client"`
	Owner  string `json:"owner"`
	Lock   string `json:"lock"`
	// Adapter is the manifest of an adapter lock (a process of any
	// language, docs/protocol.md), AdapterLog the file for its standard
	// error.
	Adapter    *locks.Manifest `json:"adapter,omitempty"`
	AdapterLog string          `json:"adapter_log,omitempty"`
	// AdapterEnv is added to the adapter's environment: the clock shim's
	// when a nemesis moves this client's clock (locks.Config.Env).
	AdapterEnv []string          `json:"adapter_env,omitempty"`
	Options    map[string]string `json:"options"`
	// LockAddrs are this client's proxied addresses of the lock nodes.
	LockAddrs []string `json:"lock_addrs"`
	// Sentinels, in a Redis run with sentinels, are this client's way to
	// find the primaries itself (locks.Sentinels).
	Sentinels *locks.Sentinels `json:"sentinels,omitempty"`
	// StoreInit is what an adapter's init carries for the lock's store
	// (locks.Config.StoreInit).
	StoreInit map[string]any `json:"store_init,omitempty"`
	// ResourceAddr is the resource node, reached directly: no fault touches it.
	ResourceAddr string `json:"resource_addr"`
	Seed         int64  `json:"seed"`
}

// KeyName is the lock key of key index i.
func KeyName(i int) string { return fmt.Sprintf("lock:%d", i) }

// ResourceKey is the counter that key protects, on the resource node.
func ResourceKey(key string) string { return "resource:" + key }

// FenceKey holds the highest fencing token the resource has seen for key.
func FenceKey(key string) string { return "fence:" + key }
