package shrink

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
)

func upTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// fails says a subset still fails when it holds every item of cause.
func fails(cause ...int) func([]int) bool {
	return func(s []int) bool {
		for _, c := range cause {
			if !slices.Contains(s, c) {
				return false
			}
		}
		return true
	}
}

func TestShrinkDDMinFindsTheFailingPair(t *testing.T) {
	got, tests := DDMin(context.Background(), upTo(16), fails(3, 11))
	if !slices.Equal(got, []int{3, 11}) {
		t.Fatalf("DDMin = %v, want [3 11]", got)
	}
	// ddmin's bound is n² tests; a pair among 16 takes far fewer.
	if tests == 0 || tests > 40 {
		t.Errorf("%d tests for a pair among 16 items", tests)
	}
	t.Logf("%d tests", tests)
}

func TestShrinkDDMinIsOneMinimal(t *testing.T) {
	// Fails when it holds 2 and any one of 5, 9: {2, 5} or {2, 9} is
	// 1-minimal; {2, 5, 9} is not.
	test := func(s []int) bool { return slices.Contains(s, 2) && (slices.Contains(s, 5) || slices.Contains(s, 9)) }
	got, _ := DDMin(context.Background(), upTo(12), test)
	if !test(got) {
		t.Fatalf("DDMin = %v, which does not fail", got)
	}
	for i := range got {
		less := slices.Delete(slices.Clone(got), i, i+1)
		if test(less) {
			t.Errorf("DDMin = %v is not 1-minimal: %v fails too", got, less)
		}
	}
}

func TestShrinkDDMinOneItemAndNone(t *testing.T) {
	got, tests := DDMin(context.Background(), upTo(8), fails(6))
	if !slices.Equal(got, []int{6}) {
		t.Errorf("DDMin = %v, want [6]", got)
	}
	// A failure that needs no item at all ends empty: the empty set is
	// the complement of the last single item.
	got, _ = DDMin(context.Background(), upTo(8), fails())
	if len(got) != 0 {
		t.Errorf("DDMin = %v, want nothing", got)
	}
	// A single item that is needed is tested once, without it.
	got, tests = DDMin(context.Background(), []int{4}, fails(4))
	if !slices.Equal(got, []int{4}) || tests != 1 {
		t.Errorf("DDMin = %v after %d tests, want [4] after 1 (the empty set)", got, tests)
	}
	got, tests = DDMin(context.Background(), []int(nil), fails())
	if len(got) != 0 || tests != 0 {
		t.Errorf("DDMin of nothing = %v after %d tests", got, tests)
	}
}

func TestShrinkDDMinNeverTestsASubsetTwice(t *testing.T) {
	seen := map[string]bool{}
	test := func(s []int) bool {
		k := key(s)
		if seen[k] {
			t.Errorf("%v tested twice", s)
		}
		seen[k] = true
		return fails(1, 2, 13)(s)
	}
	got, tests := DDMin(context.Background(), upTo(16), test)
	if !slices.Equal(got, []int{1, 2, 13}) || tests != len(seen) {
		t.Errorf("DDMin = %v after %d tests (%d distinct)", got, tests, len(seen))
	}
}

// A flaky oracle fails, when the cause is there, only with probability
// 0.6 — as a real run does, with its timings. DDMin keeps only subsets a
// test saw fail, so whatever it returns holds the cause; it may be less
// than minimal.
func TestShrinkDDMinFlakyOracle(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		test := func(s []int) bool { return fails(3, 11)(s) && rng.Float64() < 0.6 }
		got, _ := DDMin(context.Background(), upTo(16), test)
		if !fails(3, 11)(got) {
			t.Errorf("seed %d: DDMin = %v lost the cause", seed, got)
		}
	}
}

// The budget (the context) stops the search between tests: what it
// returns is the smallest failing subset found so far.
func TestShrinkDDMinBudgetStopsIt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	test := func(s []int) bool {
		calls++
		if calls == 3 {
			cancel()
		}
		return fails(3, 11)(s)
	}
	got, tests := DDMin(ctx, upTo(16), test)
	if tests != 3 || calls != 3 {
		t.Errorf("%d tests (%d calls) after the budget ran out at the third", tests, calls)
	}
	if !fails(3, 11)(got) || len(got) == 2 {
		t.Errorf("DDMin = %v: want a failing subset not yet minimal", got)
	}
}
