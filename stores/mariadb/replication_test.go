package mariadb

import (
	"context"
	"testing"
	"time"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/stores/storetest"
)

// A primary and a replica: the replica streams what the primary writes,
// but a named lock is in the primary's memory only. Promoted, the replica
// grants the key to another client while the first still holds it on the
// old primary. The old primary rejoins as a replica of the new one (heal),
// and the ensemble fails over again, back to it.
func TestAPromotedReplicaHasNoneOfThePrimarysLocks(t *testing.T) {
	ctx := context.Background()
	e := storetest.Ensemble(t, Name, cluster.EnsembleSpec{Members: 2}).(cluster.Elected)
	if l, err := e.Leader(ctx); err != nil || l != 0 {
		t.Fatalf("leader %d, %v; want mdb0", l, err)
	}
	primary, replica := e.Members()[0].(*cluster.Server), e.Members()[1].(*cluster.Server)
	a := storetest.Client(t, "mariadb-get-lock", primary.Addr(), "client-a", time.Second)
	la, err := a.Acquire(ctx, "lock:0")
	if err != nil {
		t.Fatal(err)
	}
	if held, err := replica.HoldsLease(ctx, "lock:0", la.Token); err != nil || held {
		t.Fatalf("the replica names a's session as the holder before any failover: %v %v", held, err)
	}
	from, to, heal, err := e.FailOver(ctx)
	if err != nil || from != 0 || to != 1 || heal == nil {
		t.Fatalf("failover: from %d to %d, heal %v: %v", from, to, heal != nil, err)
	}
	if s := e.Serving(); len(s) != 1 || s[0] != e.Members()[1] {
		t.Fatalf("serving %v after the failover, want mdb1", s)
	}
	if l, err := e.Leader(ctx); err != nil || l != 1 {
		t.Fatalf("leader %d, %v after the failover; want mdb1", l, err)
	}
	b := storetest.Client(t, "mariadb-get-lock", replica.Addr(), "client-b", time.Second)
	lb, err := b.Acquire(ctx, "lock:0")
	if err != nil {
		t.Fatalf("b on the promoted replica: %v (want the key: the lock was not replicated)", err)
	}
	if held, err := primary.HoldsLease(ctx, "lock:0", la.Token); err != nil || !held {
		t.Errorf("the old primary no longer names a as the holder: %v %v", held, err)
	}
	// The new primary takes writes.
	if err := run(ctx, replica.Addr(), "CREATE DATABASE after_failover"); err != nil {
		t.Fatal(err)
	}
	if err := heal(ctx); err != nil {
		t.Fatal(err)
	}
	var ro, n int
	if err := query(ctx, primary.Addr(), "SELECT @@read_only", nil, &ro); err != nil || ro != 1 {
		t.Errorf("the rejoined old primary: read_only %d, %v; want 1", ro, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := query(ctx, primary.Addr(), "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'after_failover'", nil, &n)
		if err == nil && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the rejoined old primary does not replicate the new one's writes: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
	// Again: the rejoined member is the replica to promote.
	from, to, heal, err = e.FailOver(ctx)
	if err != nil || from != 1 || to != 0 {
		t.Fatalf("second failover: from %d to %d: %v", from, to, err)
	}
	if err := heal(ctx); err != nil {
		t.Fatal(err)
	}
}

// CutReplication stops the replica's I/O thread: a database the primary
// creates afterwards never reaches it, and a failover promotes it
// without; restored before a failover, the replica receives it.
func TestACutReplicaIsPromotedWithoutLaterWrites(t *testing.T) {
	ctx := context.Background()
	e := storetest.Ensemble(t, Name, cluster.EnsembleSpec{Members: 2}).(cluster.Promoting)
	primary, replica := e.Members()[0].(*cluster.Server), e.Members()[1].(*cluster.Server)
	has := func(addr, db string) bool {
		var n int
		if err := query(ctx, addr, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", []any{db}, &n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	restore, err := e.CutReplication(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, primary.Addr(), "CREATE DATABASE during_cut"); err != nil {
		t.Fatal(err)
	}
	if err := restore(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !has(replica.Addr(), "during_cut") {
		if time.Now().After(deadline) {
			t.Fatal("the restored replica never received what the primary wrote while it was cut off")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err = e.CutReplication(ctx); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, primary.Addr(), "CREATE DATABASE after_cut"); err != nil {
		t.Fatal(err)
	}
	// Slave_running is ON only while both threads run.
	var running string
	if err := query(ctx, replica.Addr(), "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'SLAVE_RUNNING'", nil, &running); err != nil || running != "OFF" {
		t.Fatalf("the cut replica's Slave_running is %q, %v; want OFF", running, err)
	}
	if _, to, _, err := e.FailOver(ctx); err != nil || to != 1 {
		t.Fatalf("failover to %d: %v", to, err)
	}
	if has(replica.Addr(), "after_cut") {
		t.Fatal("the promoted replica has what the primary wrote after its replication was cut")
	}
	if !has(replica.Addr(), "during_cut") {
		t.Fatal("the promoted replica lacks what it had received before the cut")
	}
}
