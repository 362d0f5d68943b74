// Package nats is the NATS store: one nats-server with JetStream per lock
// node, each a child of the coordinator on a free port, and its lock on a
// JetStream key-value bucket (kv_lock.go).
package nats

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Name is the store's name (a lock's Store).
const Name = "nats"

// Bucket is the key-value bucket the locks keep their keys in.
const Bucket = "lockchaos"

func init() {
	cluster.RegisterStore(cluster.Store{
		Name:        Name,
		Description: "NATS with JetStream: one nats-server per lock node (no cluster); its locks are keys of a key-value bucket whose age limit is the lease",
		Packages:    []string{"nats-server"},
		Installed:   func() bool { _, err := serverBin(); return err == nil },
		Services:    []string{"nats-server"},
		Modules:     []string{"github.com/nats-io/nats.go"},
		References:  []string{"nats-kv-lock", "etcd-mutex-fenced"},
		NoClock:     "nats-server is a Go binary, which reads time through the vDSO: the LD_PRELOAD clock shim cannot move its clock",
		Start:       start,
	})
}

// serverBin finds nats-server.
func serverBin() (string, error) { return cluster.ServerBin("nats-server", "nats-server") }

// start starts one nats-server with JetStream per lock node, each named
// after its directory, which Ready checks.
func start(ctx context.Context, backend cluster.Backend, spec cluster.EnsembleSpec) (cluster.Ensemble, error) {
	bin, err := serverBin()
	if err != nil {
		return nil, err
	}
	return cluster.StartServers(ctx, backend, spec.Members, cluster.ServerSpec{
		Store: Name, Name: "nats",
		Command: func(dir string, port int) *exec.Cmd {
			return exec.Command(bin, "--jetstream", "--store_dir", filepath.Join(dir, "jetstream"),
				"--addr", "127.0.0.1", "--port", strconv.Itoa(port), "--server_name", filepath.Base(dir))
		},
		Ready: func(ctx context.Context, addr, dir string) error {
			nc, err := connect(addr, "lockchaos", time.Second)
			if err != nil {
				return err
			}
			defer nc.Close()
			if got := nc.ConnectedServerName(); got != filepath.Base(dir) {
				return fmt.Errorf("another server answers on %s (%s)", addr, got)
			}
			return nil
		},
		HoldsLease: holdsLease,
	})
}

// connect dials the server at addr once, without reconnecting: a lock
// that lost its connection dials again itself.
func connect(addr, name string, timeout time.Duration) (*nats.Conn, error) {
	return nats.Connect("nats://"+addr, nats.Name(name), nats.Timeout(timeout), nats.NoReconnect())
}

// kvKey is the bucket's key of a lock key: a key-value key allows letters,
// digits and - / _ = . only.
func kvKey(key string) string { return strings.ReplaceAll(key, ":", "_") }

// holdsLease: the bucket's key holds the lease's token.
func holdsLease(ctx context.Context, addr, key, token string) (bool, error) {
	nc, err := connect(addr, "lockchaos-probe", 2*time.Second)
	if err != nil {
		return false, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return false, err
	}
	kv, err := js.KeyValue(ctx, Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	e, err := kv.Get(ctx, kvKey(key))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return string(e.Value()) == token, nil
}
