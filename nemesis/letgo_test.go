package nemesis

import (
	"context"
	"strings"
	"testing"
)

// A failover whose aimed holder let go while it was being prepared does not
// kill: the kill would strike a hold it never aimed at. The fault is the
// cut alone, and says why.
func TestFailoverDoesNotKillOnceItsHolderLetGo(t *testing.T) {
	t.Parallel()
	env := newFakeEnv()
	env.hold(1, "lock:0")
	h := env.Holders()[0]
	p := &prepared{a: &aimed{Holding: h}, params: map[string]string{}, uncut: func(context.Context) error { return nil }}
	if p.letGo(env) {
		t.Fatalf("client 1 still holds lock:0, yet letGo says it let go (%s)", p.missed)
	}
	env.mu.Lock()
	env.holders = nil // client 1 released
	env.mu.Unlock()
	if !p.letGo(env) {
		t.Fatal("client 1 let go of lock:0, yet letGo says it holds")
	}
	f := p.cutOnly()
	if f.Effect == nil || f.Effect.Landed || !strings.Contains(f.Effect.Note, "client 1 let go of lock:0 before the kill") {
		t.Errorf("the fault's effect %+v; want not landed, saying the holder let go before the kill", f.Effect)
	}
}
