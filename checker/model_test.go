package checker

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

func mop(op string, c int, key string, depth int, call, ret int64) porcupine.Operation {
	return porcupine.Operation{ClientId: c, Input: MutexInput{Op: op, Client: c, Key: key, Depth: depth}, Call: call, Return: ret}
}

func TestMutexModel(t *testing.T) {
	const a, b = "lock:a", "lock:b"
	tests := []struct {
		name string
		ops  []porcupine.Operation
		want bool
	}{
		{"empty", nil, true},
		{"one hold", []porcupine.Operation{
			mop(OpAcquire, 0, a, 0, 0, 10), mop(OpRelease, 0, a, 1, 20, 30)}, true},
		{"hand-over", []porcupine.Operation{
			mop(OpAcquire, 0, a, 0, 0, 10), mop(OpRelease, 0, a, 1, 20, 30),
			mop(OpAcquire, 1, a, 0, 5, 20), mop(OpRelease, 1, a, 1, 40, 41)}, true},
		{"concurrent acquires linearize in either order", []porcupine.Operation{
			mop(OpAcquire, 0, a, 0, 0, 100), mop(OpRelease, 0, a, 1, 110, 120),
			mop(OpAcquire, 1, a, 0, 0, 10), mop(OpRelease, 1, a, 1, 20, 30)}, true},
		{"overlap", []porcupine.Operation{
			mop(OpAcquire, 0, a, 0, 0, 10), mop(OpRelease, 0, a, 1, 20, 30),
			mop(OpAcquire, 1, a, 0, 5, 15), mop(OpRelease, 1, a, 1, 40, 41)}, false},
		{"different keys do not exclude each other", []porcupine.Operation{
			mop(OpAcquire, 0, a, 0, 0, 10), mop(OpRelease, 0, a, 1, 20, 30),
			mop(OpAcquire, 1, b, 0, 5, 15), mop(OpRelease, 1, b, 1, 40, 41)}, true},
		{"reentry", []porcupine.Operation{
			mop(OpAcquire, 0, a, 0, 0, 10), mop(OpAcquire, 0, a, 1, 11, 12),
			mop(OpRelease, 0, a, 2, 13, 14), mop(OpRelease, 0, a, 1, 15, 16)}, true},
		{"reentry does not let another client in", []porcupine.Operation{
			mop(OpAcquire, 0, a, 0, 0, 10), mop(OpAcquire, 0, a, 1, 11, 12),
			mop(OpRelease, 0, a, 2, 13, 14), mop(OpAcquire, 1, a, 0, 14, 15),
			mop(OpRelease, 0, a, 1, 20, 21)}, false},
		{"a drop frees every level", []porcupine.Operation{
			mop(OpAcquire, 0, a, 0, 0, 10), mop(OpAcquire, 0, a, 1, 11, 12),
			mop(OpDrop, 0, a, 2, 20, 20), mop(OpAcquire, 1, a, 0, 21, 22)}, true},
		{"a release by another client", []porcupine.Operation{
			mop(OpAcquire, 0, a, 0, 0, 10), mop(OpRelease, 1, a, 1, 20, 30)}, false},
		{"a release of a free lock", []porcupine.Operation{mop(OpRelease, 0, a, 1, 0, 1)}, false},
		{"a drop of a free lock", []porcupine.Operation{mop(OpDrop, 0, a, 1, 0, 0)}, false},
		// A client's operations touching at one instant stay in program
		// order: the inner release cannot go before the inner acquire and
		// free the lock for client 1's zero-length hold at t=20.
		{"a client's own operations keep their order at a tie", []porcupine.Operation{
			mop(OpAcquire, 0, a, 0, 0, 10), mop(OpAcquire, 0, a, 1, 15, 20), mop(OpRelease, 0, a, 2, 20, 25),
			mop(OpAcquire, 1, a, 0, 18, 20), mop(OpRelease, 1, a, 1, 20, 22),
			mop(OpRelease, 0, a, 1, 30, 31)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := porcupine.CheckOperations(MutexModel(), tc.ops); got != tc.want {
				t.Errorf("linearizable %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMutexModelHashAgreesWithEqual(t *testing.T) {
	m := MutexModel()
	states := []mutexState{free, {0, 1}, {0, 2}, {1, 1}, {-1, 1}}
	for _, x := range states {
		for _, y := range states {
			if m.Equal(x, y) && m.Hash(x) != m.Hash(y) {
				t.Errorf("equal %v %v with different hashes", x, y)
			}
			if (x == y) != m.Equal(x, y) {
				t.Errorf("Equal(%v, %v) = %v", x, y, m.Equal(x, y))
			}
		}
	}
	if m.Hash(mutexState{0, 1}) == m.Hash(mutexState{1, 0}) {
		t.Error("hash mixes holder and depth")
	}
	if s := m.DescribeState(mutexState{3, 2}); s != "held by client 3 (depth 2)" {
		t.Errorf("describe %q", s)
	}
}
