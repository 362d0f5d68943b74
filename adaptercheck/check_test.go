package adaptercheck

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockchaos/lockchaos/locks"
)

// run checks the adapter of manifest file and returns its steps by name.
func run(t *testing.T, file string) map[string]Step {
	t.Helper()
	m, err := locks.ReadManifest(file)
	if err != nil {
		t.Fatal(err)
	}
	if why := m.Missing(); why != "" {
		t.Fatalf("%s cannot run here: %s", file, why)
	}
	steps, err := Check(context.Background(), m, t.TempDir(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Step{}
	for _, s := range steps {
		out[s.Name] = s
	}
	return out
}

// The example adapter passes every step that applies to it.
func TestTheExampleAdapterPasses(t *testing.T) {
	passes(t, "../adapters/perl/token/lock.yaml")
}

// passes checks the adapter of manifest file and fails t unless every
// step that applies to it, seven or more, passed.
func passes(t *testing.T, file string) {
	t.Helper()
	steps := run(t, file)
	ran := 0
	for name, s := range steps {
		if s.Err != nil {
			t.Errorf("step %q failed: %v", name, s.Err)
		}
		if s.Skipped == "" {
			ran++
		}
	}
	if ran < 7 {
		t.Errorf("only %d steps ran: %+v", ran, steps)
	}
}

// A lock that refuses a free key a few times before its grant (a lock on
// several nodes whose nodes answer late) passes, and the check says what
// it saw; one that never grants fails (stingy.yaml, below).
func TestARefusedFreeKeyIsTriedAgain(t *testing.T) {
	m, err := locks.ReadManifest("testdata/shy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	steps, err := Check(context.Background(), m, t.TempDir(), &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if s.Err != nil {
			t.Errorf("step %q failed: %v", s.Name, s.Err)
		}
	}
	for _, want := range []string{
		"note  client 0's acquire of the free key check:a was refused 2 times, then answered granted",
		// Client 1's first acquire was of check:a, which client 0 held.
		"note  client 1's acquire of the free key check:b was refused once, then answered granted",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the check's output lacks %q:\n%s", want, out.String())
		}
	}
}

// Each deliberately broken adapter fails the step that finds its defect,
// with a message that names it.
func TestBrokenAdaptersAreNamed(t *testing.T) {
	for _, tc := range []struct {
		file, step, says string
	}{
		{"liar.yaml", "acquire, then a second client refused", "answered granted: the adapter answers granted when the lock is held by another"},
		{"mute.yaml", "acquire, then a second client refused", "gave no answer to acquire"},
		{"mute.yaml", "unknown (never granted) when its nodes are unreachable", "no answer within timeout_ms"},
		{"prose.yaml", "acquire, then a second client refused", `not a JSON message with a type: "OK, granted"`},
		{"prose.yaml", "every line is a protocol message", "not a JSON message"},
		{"stingy.yaml", "acquire, then a second client refused", "client 0's acquire of a free key: want granted, got refused"},
		{"stale-fence.yaml", "fencing tokens increase", "a fence must increase with every grant of the key"},
	} {
		steps := run(t, filepath.Join("testdata", tc.file))
		s, ok := steps[tc.step]
		if !ok || s.Err == nil {
			t.Errorf("%s: step %q did not fail: %+v", tc.file, tc.step, s)
			continue
		}
		if !strings.Contains(s.Err.Error(), tc.says) {
			t.Errorf("%s: step %q failed with %q; want it to say %q", tc.file, tc.step, s.Err, tc.says)
		}
	}
}

// An adapter whose lease value is random bytes, no JSON string, gives its
// token as token_b64 and passes like the text one: the nodes are asked for
// the bytes (locks.Mark), and release and renew get token_b64 back.
func TestABytesTokenPasses(t *testing.T) {
	passes(t, "testdata/bytes.yaml")
}
