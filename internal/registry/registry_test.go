package registry

import (
	"fmt"
	"slices"
	"testing"
)

func TestARegistryKeepsNamesInOrderAndRefusesDuplicates(t *testing.T) {
	r := New[int]("lock")
	for i, n := range []string{"b", "a", "c"} {
		if err := r.Add(n, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Add("a", 9); err == nil || err.Error() != "duplicate lock a" {
		t.Errorf("duplicate: %v", err)
	}
	if got := r.All(); !slices.Equal(got, []int{1, 0, 2}) {
		t.Errorf("All %v, want by name", got)
	}
	if v, err := r.Lookup("c"); err != nil || v != 2 {
		t.Errorf("Lookup c: %d, %v", v, err)
	}
	if _, err := r.Lookup("x"); err == nil || err.Error() != `unknown lock "x"; known: a, b, c` {
		t.Errorf("unknown: %v", err)
	}
	if err := r.Add("abc", 3); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Lookup("acb"); err == nil || err.Error() != `unknown lock "acb" (did you mean "abc"?); known: a, abc, b, c` {
		t.Errorf("unknown, near a name: %v", err)
	}
	r.Remove("abc")
	r.Unknown = func(name string, known []string) error { return fmt.Errorf("%s not in %v", name, known) }
	r.Remove("b")
	if _, err := r.Lookup("b"); err == nil || err.Error() != "b not in [a c]" {
		t.Errorf("after Remove: %v", err)
	}
}
