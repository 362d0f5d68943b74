package nemesis

import (
	"reflect"
	"testing"
)

// The split gives each side a majority and shares as few nodes as
// possible: RedLock's five nodes share exactly one.
func TestSplitViewsAreOverlappingMajorities(t *testing.T) {
	for _, tc := range []struct {
		nodes     int
		even, odd []int
	}{
		{3, []int{0, 1}, []int{1, 2}},
		{5, []int{0, 1, 2}, []int{2, 3, 4}},
		{4, []int{0, 1, 2}, []int{1, 2, 3}},
		{7, []int{0, 1, 2, 3}, []int{3, 4, 5, 6}},
	} {
		even, odd := Views(tc.nodes)
		if !reflect.DeepEqual(even, tc.even) || !reflect.DeepEqual(odd, tc.odd) {
			t.Errorf("Views(%d) = %v, %v; want %v, %v", tc.nodes, even, odd, tc.even, tc.odd)
		}
	}
}
