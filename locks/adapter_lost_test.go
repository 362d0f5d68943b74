package locks

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// An adapter whose library reuses one token across holds (one mark per
// client, as some libraries keep) must not hand a new hold the lost
// signal of an earlier one: the first hold here is reported lost, and its
// release gets no answer (the adapter is busy); the second hold, granted
// the same token, is alive. Its lease used to carry the first hold's
// signal, already fired, and the worker ended it as lost at once: its
// pause-client was aimed at a hold that never reached its wait
// (issue 42.5).
func TestALostSignalIsOneHolds(t *testing.T) {
	dir := t.TempDir()
	script := `import json, sys, threading, time
lock = threading.Lock()
def send(*msgs):
    with lock:
        for m in msgs:
            sys.stdout.write(json.dumps(m) + "\n")
        sys.stdout.flush()
acquires = 0
for line in sys.stdin:
    req = json.loads(line)
    t = req["type"]
    if t == "init":
        out = [{"type": "init_ok"}]
    elif t == "acquire":
        acquires += 1
        out = [{"type": "granted", "token": "same"}]
        if acquires == 1:  # the library finds the lease gone a moment later
            threading.Timer(0.2, send, [{"type": "lost", "key": req["key"], "token": "same"}]).start()
    elif t == "release" and acquires == 1:
        time.sleep(1.2)  # no answer within the op timeout and its grace
        out = [{"type": "released"}]
    else:
        out = [{"type": "released"}]
    out[0]["in_reply_to"] = req["id"]
    send(*out)
`
	if err := os.WriteFile(filepath.Join(dir, "adapter.py"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &Manifest{Name: "same-token", Store: "redis", Nodes: 1, Lost: true, Requires: []string{"python3"},
		Command: []string{"python3", "adapter.py"}, Dir: dir}
	if why := m.Missing(); why != "" {
		t.Skip(why)
	}
	l, err := newAdapter(m, Config{OpTimeout: 100 * time.Millisecond, TTL: time.Second, Owner: "c0", LogPath: filepath.Join(dir, "adapter.log")})
	if err != nil {
		t.Fatal(err)
	}
	a := l.(*adapter)
	ctx := context.Background()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	first, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.Lost:
	case <-time.After(5 * time.Second):
		t.Fatal("the first hold's lost signal never came")
	}
	rctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := a.Release(rctx, first); err == nil {
		t.Fatal("the first release got an answer within the op timeout")
	}
	time.Sleep(time.Second) // its late answer is read and dropped
	second, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-second.Lost:
		t.Errorf("the second hold, granted the same token, came with the first hold's lost signal")
	default:
	}
}
