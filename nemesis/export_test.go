package nemesis

import (
	"testing"
	"time"
)

// What the external tests (package nemesis_test, one file a nemesis) may
// see of the package's insides: the build every test of options uses, and
// the option values that are not exported.

// MustBuild builds the named nemesis from the options given, durations in
// TTLs against a 100 ms TTL; any error fails the test.
func MustBuild(t *testing.T, name string, given map[string]string) Nemesis {
	t.Helper()
	s, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Build(given, 100*time.Millisecond)
	if err != nil {
		t.Fatalf("%s %v: %v", name, given, err)
	}
	return b.Nemesis
}

// The values of the client and node options that name no number.
const (
	HolderClient = holderClient // client=holder (or random)
	RandomNode   = randomNode   // node=random
	HolderNode   = holderNode   // node=holder
)

// LinkChoice is the value of a links option: kind (all, holder, client, node)
// and a number, -1 for a random one.
func LinkChoice(kind string, n int) linkChoice { return linkChoice{kind: kind, n: n} }

// RateText is the rate as the record shows it.
func (c *ClockDrift) RateText() string { return c.rate() }

// RegisterForTest registers a nemesis that only the calling test uses (one
// that wraps a real nemesis to watch it work), and removes it when the test
// ends, so that the tests that list every nemesis never see it.
func RegisterForTest(t *testing.T, s Spec) {
	t.Helper()
	Register(s)
	t.Cleanup(func() { registered.Remove(s.Name) })
}

// Redirect points lock node i's client links at addr, as a failover does.
var Redirect = redirect
