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

// Config is sent by the coordinator to a worker on its standard input.
type Config struct {
	Client int    `json:"client"`
	Owner  string `json:"owner"`
	Lock   string `json:"lock"`
	// Adapter is the manifest of an adapter lock (a process of any
	// language, docs/protocol.md), AdapterLog the file for its standard
	// error.
	Adapter    *locks.Manifest   `json:"adapter,omitempty"`
	AdapterLog string            `json:"adapter_log,omitempty"`
	Options    map[string]string `json:"options"`
	// LockAddrs are this client's proxied addresses of the lock nodes.
	LockAddrs []string `json:"lock_addrs"`
	// ResourceAddr is the resource node, reached directly: no fault touches it.
	ResourceAddr string        `json:"resource_addr"`
	Keys         int           `json:"keys"`
	TTL          time.Duration `json:"ttl"`
	Hold         time.Duration `json:"hold"`
	// Wait > 0 makes acquire blocking: retry every Retry until Wait passed.
	Wait  time.Duration `json:"wait"`
	Retry time.Duration `json:"retry"`
	// Think is the most a client sleeps between two attempts.
	Think     time.Duration `json:"think"`
	OpTimeout time.Duration `json:"op_timeout"`
	Seed      int64         `json:"seed"`
	// Renew runs a watchdog beside each hold that renews the lease every
	// TTL/3 (locks that implement locks.Renewer).
	Renew bool `json:"renew,omitempty"`
	// Reentry is the probability that a hold acquires its lock once more
	// inside, and so releases it twice (reentrant locks).
	Reentry float64 `json:"reentry,omitempty"`
}

// KeyName is the lock key of key index i.
func KeyName(i int) string { return fmt.Sprintf("lock:%d", i) }

// ResourceKey is the counter that key protects, on the resource node.
func ResourceKey(key string) string { return "resource:" + key }

// FenceKey holds the highest fencing token the resource has seen for key.
func FenceKey(key string) string { return "fence:" + key }
