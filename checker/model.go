package checker

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"
)

// Mutex operation names (MutexInput.Op).
const (
	OpAcquire = "acquire"
	OpRelease = "release"
	// OpDrop: the holder let go of every level at once, without a release:
	// it learned it lost the lock, its process died, or the history ended.
	// A plain release would only lower a reentrant depth by one and leave the
	// lock held in the model after the client had stopped holding it.
	OpDrop = "drop"
)

// MutexInput is the input of one porcupine operation of the mutex model.
//
// Depth is the reentrancy depth the client itself had reached on Key just
// before the operation. It pins a client's own operations in program order:
// when one returns and the next is invoked in the same nanosecond, porcupine
// may otherwise linearize them swapped, and an inner release swapped before
// an inner acquire frees the lock for an instant inside the hold, in which a
// zero-length hold of another client would linearize.
type MutexInput struct {
	Op     string
	Client int
	Key    string
	Depth  int
}

// mutexState is the lock as the model sees it: who holds it and how many
// times. holder is -1 and depth 0 when the lock is free.
type mutexState struct {
	holder int
	depth  int
}

var free = mutexState{holder: -1}

// MutexModel is a reentrant mutex, partitioned by key: an acquire is legal
// when the lock is free or already held by the same client; a release or a
// drop only by the holder. Operation outputs (ok, not-held, lost...) are for
// the visualization only: every operation given to the model is one the
// client performed, and a hold ends at its release whatever the answer.
func MutexModel() porcupine.Model {
	return porcupine.Model{
		Partition: partitionByKey,
		Init:      func() any { return free },
		Step: func(state, input, _ any) (bool, any) {
			s, in := state.(mutexState), input.(MutexInput)
			if s.depth != in.Depth || (s.depth > 0 && s.holder != in.Client) {
				return false, s
			}
			switch in.Op {
			case OpAcquire:
				return true, mutexState{holder: in.Client, depth: s.depth + 1}
			case OpRelease:
				if s.depth == 0 {
					return false, s
				}
				if s.depth == 1 {
					return true, free
				}
				return true, mutexState{holder: in.Client, depth: s.depth - 1}
			case OpDrop:
				return s.depth > 0, free
			}
			return false, s
		},
		Equal: func(a, b any) bool { return a.(mutexState) == b.(mutexState) },
		Hash: func(state any) uint64 {
			s := state.(mutexState)
			return uint64(uint32(s.holder))<<32 | uint64(uint32(s.depth))
		},
		DescribeOperation: func(input, output any) string {
			in := input.(MutexInput)
			if output == nil {
				return fmt.Sprintf("%s(%s) by client %d", in.Op, in.Key, in.Client)
			}
			return fmt.Sprintf("%s(%s) by client %d → %v", in.Op, in.Key, in.Client, output)
		},
		DescribeState: func(state any) string {
			s := state.(mutexState)
			if s.depth == 0 {
				return "free"
			}
			return fmt.Sprintf("held by client %d (depth %d)", s.holder, s.depth)
		},
	}
}

// partitionByKey splits a history per lock key, keys in sorted order so the
// partitions (and a visualization of them) do not depend on map order.
func partitionByKey(ops []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	for _, op := range ops {
		k := op.Input.(MutexInput).Key
		byKey[k] = append(byKey[k], op)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, byKey[k])
	}
	return parts
}
