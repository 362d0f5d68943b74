package locks

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/history"
	"github.com/lockchaos/lockchaos/internal/jvmcds"
	"github.com/lockchaos/lockchaos/internal/logtail"
	"github.com/lockchaos/lockchaos/option"

	// It builds only for Linux: a build for another system stops there.
	_ "github.com/lockchaos/lockchaos/internal/linuxonly"
)

// ProtocolVersion is the lock protocol's version (docs/protocol.md).
const ProtocolVersion = 1

// AdapterGrace is how long past a request's timeout_ms the worker still
// waits for its answer before it calls the outcome unknown.
const AdapterGrace = 500 * time.Millisecond

// NoAnswer begins the error of a request the adapter did not answer within
// its timeout_ms and AdapterGrace: the harness stopped waiting, and the
// library may still be at work (an acquire may still take the lock). The
// history records it as the operation's error; a nemesis that needs the
// lock's own refusal does not count it as one.
const NoAnswer = "adapter gave no answer"

// NoValidityLeft is in the error of an acquire the adapter granted with no
// validity left (valid_ms 0 or less): given up at once, a refusal.
const NoValidityLeft = "granted with no validity left"

// AdapterStartTimeout bounds an adapter's start: the init_ok must come
// within it (a JVM under load takes seconds, never this long).
const AdapterStartTimeout = 2 * time.Minute

// AdapterDied, when set (the worker sets it), is called once when a
// started adapter exits on its own: its client cannot go on. (One that
// exits before it answered init fails Start instead, which says why.)
var AdapterDied func(name string, err error)

// adapter is a Locker whose lock lives in another process, one per client,
// that speaks the lock protocol on its standard input and output.
type adapter struct {
	m    *Manifest
	cfg  Config
	opts map[string]string

	cmd   *exec.Cmd
	stdin io.WriteCloser
	log   *os.File
	wmu   sync.Mutex // one line at a time on stdin and in the log

	mu        sync.Mutex
	nextID    int64
	pending   map[int64]chan answer
	abandoned map[int64]string // id → key of an acquire given up on
	lost      map[string]*lostSignal
	closing   bool
	// started: it answered init with init_ok. An exit before that is
	// Start's error; an exit after it ends the client (AdapterDied).
	started bool
	// problems are the protocol errors it made, for adapter check.
	problems []string
	dead     chan struct{} // closed when its standard output ends
	exitErr  error
	readDone chan struct{}
	// jvmFlags, for an adapter whose command runs java, replace the flags
	// lockchaos puts first (jvmcds.Flags); exitWait changes how Close ends
	// it. Both for writing its class-data archive (writeArchive).
	jvmFlags []string
	exitWait time.Duration
}

type lostSignal struct {
	ch    chan struct{}
	holds int
	fired bool
}

// answer is any line the adapter writes.
type answer struct {
	InReplyTo *int64 `json:"in_reply_to"`
	Type      string `json:"type"`
	Token     string `json:"token"`
	TokenB64  string `json:"token_b64"`
	Fence     int64  `json:"fence"`
	ValidMs   *int64 `json:"valid_ms"`
	Error     string `json:"error"`
	Key       string `json:"key"`
	Text      string `json:"text"`
}

// token is the lease the answer names: its token, or a token_b64's
// BytesToken form.
func (ans answer) token() string {
	if ans.TokenB64 != "" {
		return BytesToken + ans.TokenB64
	}
	return ans.Token
}

// withToken adds lease token to a request as the adapter gave it: token,
// or a BytesToken's base64 text as token_b64.
func withToken(req map[string]any, token string) map[string]any {
	if b64, ok := strings.CutPrefix(token, BytesToken); ok {
		req["token_b64"] = b64
	} else {
		req["token"] = token
	}
	return req
}

type adapterRenewer struct{ *adapter }
type adapterWaiter struct{ *adapter }
type adapterRenewWaiter struct{ *adapter }

func (a adapterRenewer) Renew(ctx context.Context, l Lease) (Lease, error) { return a.renew(ctx, l) }
func (a adapterWaiter) AcquireWait(ctx context.Context, key string, wait time.Duration) (Lease, error) {
	return a.acquire(ctx, key, wait)
}
func (a adapterRenewWaiter) Renew(ctx context.Context, l Lease) (Lease, error) {
	return a.renew(ctx, l)
}
func (a adapterRenewWaiter) AcquireWait(ctx context.Context, key string, wait time.Duration) (Lease, error) {
	return a.acquire(ctx, key, wait)
}

// newAdapter checks that the adapter can run here and keeps its options; it
// starts nothing (Start does, in the worker).
func newAdapter(m *Manifest, cfg Config) (Locker, error) {
	if why := m.Ready(); why != "" {
		return nil, fmt.Errorf("adapter %s cannot run here: %s", m.Name, why)
	}
	a := &adapter{m: m, cfg: cfg, pending: map[int64]chan answer{}, abandoned: map[int64]string{}, lost: map[string]*lostSignal{}}
	if d, ok := cfg.Options.(*option.Declared); ok {
		a.opts = d.Values
	}
	m = m.For(a.opts) // what the options' values change of what it does
	a.m = m
	switch {
	case m.Renew && m.Wait:
		return adapterRenewWaiter{a}, nil
	case m.Renew:
		return adapterRenewer{a}, nil
	case m.Wait:
		return adapterWaiter{a}, nil
	}
	return a, nil
}

// Lease is the lease option's value when the manifest names one and it is
// set, else the TTL.
func (a *adapter) Lease() time.Duration {
	if ms, err := strconv.ParseInt(a.opts[a.m.LeaseOption], 10, 64); err == nil && a.m.LeaseOption != "" {
		return time.Duration(ms) * time.Millisecond
	}
	return a.cfg.TTL
}

// Start runs the adapter and waits for its init_ok.
func (a *adapter) Start(ctx context.Context) error {
	bin := a.m.Command[0]
	if strings.Contains(bin, "/") && !filepath.IsAbs(bin) {
		bin = filepath.Join(a.m.Dir, bin)
	}
	args := a.m.Command[1:]
	if java, jar, ok := a.m.jvm(); ok {
		flags := a.jvmFlags
		if flags == nil {
			flags = jvmcds.Flags(java, jar)
		}
		args = append(flags, args...)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = a.m.Dir
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "LOCKCHAOS_") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Env = append(cmd.Env, a.cfg.Env...)
	// The worker's process group (no Setpgid): a pause or kill of the
	// client stops the adapter with it. Pdeathsig: it dies with the worker.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	a.log = os.Stderr
	if a.cfg.LogPath != "" {
		f, err := os.Create(a.cfg.LogPath)
		if err != nil {
			return err
		}
		a.log = f
	}
	cmd.Stderr = a.log
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("adapter %s: start %s (in %s): %w", a.m.Name, strings.Join(a.m.Command, " "), a.m.Dir, err)
	}
	a.cmd, a.stdin = cmd, stdin
	a.dead, a.readDone = make(chan struct{}), make(chan struct{})
	go a.read(stdout)

	init := map[string]any{
		"type": "init", "protocol": ProtocolVersion, "lock": a.m.Name, "store": a.m.Store,
		"nodes": nonNil(a.cfg.Addrs), "client": a.cfg.Client, "owner": a.cfg.Owner,
		"ttl_ms": a.cfg.TTL.Milliseconds(), "op_timeout_ms": a.cfg.OpTimeout.Milliseconds(),
		"seed": a.cfg.Seed, "options": nonNilMap(a.opts),
	}
	for k, v := range a.cfg.StoreInit {
		init[k] = v
	}
	if s := a.cfg.Sentinels; s != nil {
		init["sentinels"], init["sentinel_masters"], init["nat"] = s.Addrs, s.Masters, s.NAT
	}
	sctx, cancel := context.WithTimeout(ctx, AdapterStartTimeout)
	defer cancel()
	ans, err := a.call(sctx, init, 0)
	if err == nil && ans.Type == "init_ok" {
		return nil
	}
	why := a.startFailure(ans, err)
	a.Close()
	return errors.New(why + a.stderrTail())
}

// startFailure says why the adapter did not answer init with init_ok:
// what it wrote instead, that it exited (with its status), or that it
// gave no answer.
func (a *adapter) startFailure(ans answer, err error) string {
	name := "adapter " + a.m.Name
	exited := func(wait time.Duration) (string, bool) {
		select {
		case <-a.dead:
		case <-time.After(wait):
			return "", false
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.exitErr == nil {
			return "exit 0", true
		}
		return a.exitErr.Error(), true
	}
	switch {
	case err != nil:
		// A write to an adapter that has exited fails (a broken pipe)
		// before its exit is seen: wait a moment for it.
		if status, ok := exited(time.Second); ok {
			return fmt.Sprintf("%s exited (%s) before it answered init", name, status)
		}
		return fmt.Sprintf("%s did not start: %v", name, err)
	case ans.Type == "unknown" && strings.HasPrefix(ans.Error, "adapter exited"):
		status, _ := exited(time.Second)
		return fmt.Sprintf("%s exited (%s) before it answered init", name, status)
	case ans.Type == "unknown":
		return fmt.Sprintf("%s did not answer init: %s", name, ans.Error)
	}
	return fmt.Sprintf("%s refused init: %s", name, describe(ans))
}

// ownLine marks the lines lockchaos itself writes in an adapter's log
// (logf), among the adapter's standard error.
const ownLine = "lockchaos "

// stderrTail quotes the last lines the adapter wrote on its standard
// error (its log, without lockchaos's own lines), for Start's error.
func (a *adapter) stderrTail() string {
	if a.cfg.LogPath == "" {
		return "" // it went to this process's standard error
	}
	lines := logtail.File(a.cfg.LogPath, 8, func(l string) bool { return strings.HasPrefix(l, ownLine) })
	if len(lines) == 0 {
		return fmt.Sprintf(" (it wrote nothing on its standard error; its log: %s)", a.cfg.LogPath)
	}
	return fmt.Sprintf(" (its log: %s); its standard error ends:\n  | %s", a.cfg.LogPath, strings.Join(lines, "\n  | "))
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// read dispatches the adapter's lines until its standard output ends.
func (a *adapter) read(stdout io.Reader) {
	defer close(a.readDone)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ans answer
		if err := json.Unmarshal(line, &ans); err != nil || ans.Type == "" {
			why := fmt.Sprintf("adapter protocol: it wrote a line that is not a JSON message with a type: %q", clip(string(line), 120))
			a.problem(why)
			a.failPending(why)
			continue
		}
		if ans.InReplyTo != nil {
			if *ans.InReplyTo == 0 && ans.Type == "init_ok" { // init is request 0
				a.mu.Lock()
				a.started = true
				a.mu.Unlock()
			}
			a.deliver(*ans.InReplyTo, ans)
			continue
		}
		switch ans.Type {
		case "lost":
			a.markLost(ans)
		case "log":
			a.logf("adapter: %s", ans.Text)
		default:
			a.problem(fmt.Sprintf("adapter protocol: an unasked message of type %q (only lost and log are): %s", ans.Type, clip(string(line), 120)))
		}
	}
	err := a.cmd.Wait()
	a.mu.Lock()
	a.exitErr = err
	// Before init_ok, Start says why it exited.
	died := !a.closing && a.started
	a.mu.Unlock()
	if err == nil {
		err = errors.New("exit 0")
	}
	why := "adapter exited: " + err.Error()
	a.failPending(why)
	close(a.dead)
	if died && AdapterDied != nil {
		AdapterDied(a.m.Name, err)
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func (a *adapter) logf(format string, args ...any) {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	fmt.Fprintf(a.log, ownLine+"%.3f: "+format+"\n", append([]any{float64(history.Now()) / 1e9}, args...)...)
}

// deliver hands an answer to the request waiting for it; a grant that
// comes after its acquire was given up on is released at once.
func (a *adapter) deliver(id int64, ans answer) {
	a.mu.Lock()
	ch, ok := a.pending[id]
	delete(a.pending, id)
	key, late := a.abandoned[id]
	delete(a.abandoned, id)
	a.mu.Unlock()
	switch {
	case ok:
		ch <- ans
	case late && ans.Type == "granted" && a.m.BlindRelease:
		// Its release ends the key's lock whoever holds it now (the
		// client's own next grant, or another's): the stale grant is left
		// to run out on its own.
		a.logf("a grant of %s (token %q) came after the acquire was given up on: left to its lease (blind_release: a release would end whoever's lock holds %s now)", key, ans.token(), key)
	case late && ans.Type == "granted":
		a.logf("a grant of %s (token %q) came after the acquire was given up on: releasing it", key, ans.token())
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), a.cfg.OpTimeout)
			defer cancel()
			_ = a.release(ctx, Lease{Key: key, Token: ans.token()})
		}()
	case late:
		a.logf("a late answer to request %d: %s", id, describe(ans))
	default:
		a.problem(fmt.Sprintf("adapter protocol: an answer to request %d, which was never sent: %s", id, describe(ans)))
	}
}

// problem logs and keeps a protocol error.
func (a *adapter) problem(why string) {
	a.logf("%s", why)
	a.mu.Lock()
	a.problems = append(a.problems, why)
	a.mu.Unlock()
}

// Problems lists the protocol errors the adapter made so far.
func (a *adapter) Problems() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.problems...)
}

func (a *adapter) failPending(why string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for id, ch := range a.pending {
		ch <- answer{Type: "unknown", Error: why}
		delete(a.pending, id)
	}
}

func (a *adapter) markLost(ans answer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.lost[ans.token()]
	if s == nil || !a.m.Lost {
		a.logf("lost event for token %q, which holds nothing%s", ans.token(), map[bool]string{true: "", false: " (the manifest does not claim lost: true)"}[a.m.Lost])
		return
	}
	if !s.fired {
		s.fired = true
		close(s.ch)
	}
}

// call sends one request and waits for its answer: until the context's
// deadline plus AdapterGrace, or at once when the context is cancelled.
// wait is added to the deadline for a blocking acquire's request.
func (a *adapter) call(ctx context.Context, req map[string]any, wait time.Duration) (answer, error) {
	if a.cmd == nil {
		return answer{}, errors.New("adapter not started")
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(a.cfg.OpTimeout + wait)
	}
	ch := make(chan answer, 1)
	a.mu.Lock()
	id := a.nextID
	a.nextID++
	a.pending[id] = ch
	a.mu.Unlock()
	req["id"] = id
	if req["type"] != "init" {
		req["timeout_ms"] = max(time.Until(deadline).Milliseconds(), 1)
	}
	line, _ := json.Marshal(req)
	line = append(line, '\n')
	// A call cancelled before it is sent goes out with its cancel in one
	// write: the adapter reads both before its library's call can run.
	cancelled := a.m.Cancel && ctx.Err() == context.Canceled
	if cancelled {
		line = append(line, a.cancelLine(id)...)
	}
	a.wmu.Lock()
	_, err := a.stdin.Write(line)
	a.wmu.Unlock()
	if err != nil {
		a.drop(id, "")
		return answer{}, fmt.Errorf("adapter: could not send %s: %w", req["type"], err)
	}
	budget := time.Until(deadline) + AdapterGrace
	timer := time.NewTimer(budget)
	defer timer.Stop()
	done := ctx.Done()
	if cancelled {
		done = nil
	}
	for {
		select {
		case ans := <-ch:
			if ans.Type == "cancelled" && cancelled {
				// Its token, if it gave one: what the cancelled call
				// may have taken, for the caller to give back.
				return ans, fmt.Errorf("%w: the adapter cancelled its %s in flight", context.Canceled, req["type"])
			}
			return ans, nil
		case <-done:
			if ctx.Err() == context.Canceled && a.m.Cancel {
				// Cancel it the adapter's way, and wait for what became
				// of it: cancelled, or done first.
				a.wmu.Lock()
				_, err := a.stdin.Write(a.cancelLine(id))
				a.wmu.Unlock()
				if err == nil {
					cancelled, done = true, nil
					continue
				}
			}
			if ctx.Err() == context.Canceled {
				a.drop(id, keyOf(req))
				return answer{}, ctx.Err()
			}
			done = nil // a deadline: wait out the grace
		case <-timer.C:
			a.drop(id, keyOf(req))
			return answer{}, fmt.Errorf("%s to %s within %v", NoAnswer, req["type"], budget.Round(time.Millisecond))
		}
	}
}

// cancelLine is the request that cancels request of (docs/protocol.md):
// it has an id of its own, and no answer; the answer to of says what
// became of it.
func (a *adapter) cancelLine(of int64) []byte {
	a.mu.Lock()
	id := a.nextID
	a.nextID++
	a.mu.Unlock()
	line, _ := json.Marshal(map[string]any{"id": id, "type": "cancel", "of": of})
	return append(line, '\n')
}

func keyOf(req map[string]any) string {
	if req["type"] == "acquire" {
		return req["key"].(string)
	}
	return ""
}

// drop forgets request id; an acquire's late grant will be released.
func (a *adapter) drop(id int64, acquireKey string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.pending, id)
	if acquireKey != "" {
		a.abandoned[id] = acquireKey
	}
}

func describe(ans answer) string {
	s := ans.Type
	if ans.Error != "" {
		s += ": " + ans.Error
	}
	return s
}

// unexpected is the error of an answer of the wrong type.
func unexpected(op string, ans answer) error {
	switch ans.Type {
	case "unknown":
		return errors.New(ans.Error)
	case "error":
		return errors.New("adapter error: " + ans.Error)
	}
	return fmt.Errorf("adapter protocol: %s answered %q", op, describe(ans))
}

func (a *adapter) Acquire(ctx context.Context, key string) (Lease, error) {
	return a.acquire(ctx, key, 0)
}

func (a *adapter) acquire(ctx context.Context, key string, wait time.Duration) (Lease, error) {
	ans, err := a.call(ctx, map[string]any{"type": "acquire", "key": key, "wait_ms": wait.Milliseconds()}, wait)
	if err != nil {
		if ans.Type == "cancelled" && ans.token() != "" {
			// Cancelled, under a lease the adapter named: the caller may
			// hold it, and releases it as a careful caller does.
			return Lease{Key: key, Owner: a.cfg.Owner, Token: ans.token()}, err
		}
		return Lease{}, err
	}
	switch ans.Type {
	case "granted":
		switch {
		case ans.Token == "" && ans.TokenB64 == "":
			return Lease{}, errors.New("adapter protocol: granted without a token")
		case ans.Token != "" && ans.TokenB64 != "":
			return Lease{}, errors.New("adapter protocol: granted with both token and token_b64: give one")
		case strings.HasPrefix(ans.Token, BytesToken):
			return Lease{}, fmt.Errorf("adapter protocol: granted token %q begins with %q, which marks a token_b64's bytes: give such a token as token_b64", ans.Token, BytesToken)
		case ans.TokenB64 != "":
			if _, err := base64.StdEncoding.DecodeString(ans.TokenB64); err != nil {
				return Lease{}, fmt.Errorf("adapter protocol: granted token_b64 %q is not standard base64: %v", ans.TokenB64, err)
			}
		}
		l := Lease{Key: key, Owner: a.cfg.Owner, Token: ans.token(), Fence: ans.Fence}
		if ans.ValidMs != nil && *ans.ValidMs <= 0 {
			// Granted with no validity left: a caller that checks it never
			// enters, and undoes the grant, as Redlock's step 5 does (and
			// the Go Redlock: a refusal). Recorded as a granted hold that
			// was lost at once, it overlapped a next holder by the
			// microseconds between the two (node-redlock 5 with its
			// validity checked, on containers beside CPU hogs, 2026-11-30).
			rerr := a.release(context.WithoutCancel(ctx), l)
			msg := fmt.Sprintf("%s (valid_ms %d): given up, as a caller that checks its validity does", NoValidityLeft, *ans.ValidMs)
			if rerr != nil && !errors.Is(rerr, ErrNotHeld) {
				msg += fmt.Sprintf("; its release: %v", rerr)
			}
			return Lease{}, fmt.Errorf("%w: %s", ErrNotAcquired, msg)
		}
		if ans.ValidMs != nil {
			l.Deadline = history.Now() + *ans.ValidMs*int64(time.Millisecond)
		}
		if a.m.Lost {
			a.mu.Lock()
			// A re-entry shares its hold's signal; a grant after a signal
			// fired is a new lease, whose own loss is still to come (a
			// library that reuses one token across holds).
			s := a.lost[l.Token]
			if s == nil || s.fired {
				s = &lostSignal{ch: make(chan struct{})}
				a.lost[l.Token] = s
			}
			s.holds++
			l.Lost = s.ch
			a.mu.Unlock()
		}
		return l, nil
	case "refused":
		if ans.Error != "" {
			return Lease{}, fmt.Errorf("%w: %s", ErrNotAcquired, ans.Error)
		}
		return Lease{}, ErrNotAcquired
	}
	return Lease{}, unexpected("acquire", ans)
}

func (a *adapter) Release(ctx context.Context, l Lease) error {
	return a.release(ctx, l)
}

func (a *adapter) release(ctx context.Context, l Lease) error {
	ans, err := a.call(ctx, withToken(map[string]any{"type": "release", "key": l.Key}, l.Token), 0)
	// The hold is over whatever the answer: its lost signal is no later
	// hold's.
	a.mu.Lock()
	if s := a.lost[l.Token]; s != nil && s.ch == l.Lost {
		if s.holds--; s.holds <= 0 {
			delete(a.lost, l.Token)
		}
	}
	a.mu.Unlock()
	if err != nil {
		return err
	}
	switch ans.Type {
	case "released":
		return nil
	case "not_held":
		return ErrNotHeld
	}
	return unexpected("release", ans)
}

func (a *adapter) renew(ctx context.Context, l Lease) (Lease, error) {
	ans, err := a.call(ctx, withToken(map[string]any{"type": "renew", "key": l.Key}, l.Token), 0)
	if err != nil {
		return l, err
	}
	switch ans.Type {
	case "renewed":
		if ans.ValidMs != nil {
			l.Deadline = history.Now() + *ans.ValidMs*int64(time.Millisecond)
		}
		return l, nil
	case "not_held":
		return l, ErrNotHeld
	}
	return l, unexpected("renew", ans)
}

// Close ends the adapter: its standard input closes, and it is killed if it
// has not exited 2 s later (with exitWait set: asked by SIGTERM to exit
// if it has not exited exitWait later, and killed a minute after that).
func (a *adapter) Close() error {
	if a.cmd == nil {
		return nil
	}
	a.mu.Lock()
	a.closing = true
	a.mu.Unlock()
	a.stdin.Close()
	wait := 2 * time.Second
	if a.exitWait > 0 {
		wait = a.exitWait
	}
	exited := func(wait time.Duration) bool {
		select {
		case <-a.dead:
			return true
		case <-time.After(wait):
			return false
		}
	}
	// Writing a class-data archive, a JVM still busy (connecting) is
	// asked to exit (SIGTERM: a normal exit, which writes it, in seconds)
	// before it is killed.
	if !exited(wait) && (a.exitWait == 0 || !a.signalled(syscall.SIGTERM) || !exited(time.Minute)) {
		_ = a.cmd.Process.Signal(syscall.SIGCONT)
		_ = a.cmd.Process.Kill()
		select {
		case <-a.dead:
		case <-time.After(2 * time.Second): // a child of its own holds its output open
		}
	}
	if a.log != os.Stderr {
		a.log.Close()
	}
	return nil
}

// signalled sends the adapter sig, and says whether it went.
func (a *adapter) signalled(sig os.Signal) bool {
	return a.cmd.Process.Signal(sig) == nil
}
