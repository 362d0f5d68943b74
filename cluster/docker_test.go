package cluster

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"
)

// The docker tests need a Docker engine and the default image. Without them
// they fail, saying what to run: a skipped container test would pass in CI
// without testing anything.
func newDocker(t *testing.T) *Docker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := NewDocker(ctx, BackendOptions{})
	if err != nil {
		t.Fatalf("the docker backend cannot run here: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if left := containers(t, d.RunID()); len(left) > 0 {
			t.Errorf("containers left after Close: %v", left)
		}
	})
	return d
}

// containers lists the containers of one run, running or not.
func containers(t *testing.T, run string) []string {
	t.Helper()
	api, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	list, err := api.ContainerList(context.Background(), client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", LabelRun+"="+run)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list.Items {
		ids = append(ids, c.ID)
	}
	return ids
}

// processState is the state letter in /proc/PID/stat: R, S, T (stopped), …
func processState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))[0]
}

func TestDockerNodeStopsContinuesKillsRestartsAndCleansUp(t *testing.T) {
	d := newDocker(t)
	ctx := context.Background()
	n, err := d.StartNode(ctx, NodeSpec{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	dn := n.(*DockerNode)
	if !strings.HasPrefix(n.Addr(), "127.0.0.1:") || ping(n.Addr()) != nil {
		t.Fatalf("fresh node does not answer on loopback: %s", n.Addr())
	}
	info, err := d.api.ContainerInspect(ctx, dn.id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Container.HostConfig.NetworkMode; mode != "host" {
		t.Errorf("network mode %q, want host", mode)
	}
	argv := strings.Join(append(info.Container.Config.Entrypoint, info.Container.Config.Cmd...), " ")
	for _, want := range []string{"redis-server --port " + strconv.Itoa(dn.port) + " --bind 127.0.0.1 ", "--dir /data --logfile /data/redis.log"} {
		if !strings.Contains(argv, want) {
			t.Errorf("the container runs %q, want %q in it", argv, want)
		}
	}
	// The signals must reach redis-server itself: it is the container's main process.
	pid := info.Container.State.Pid
	if comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); strings.TrimSpace(string(comm)) != "redis-server" {
		t.Fatalf("the container's main process is %q, not redis-server", comm)
	}

	if err := n.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The signal is delivered when the process next runs: give it a moment.
	st := processState(t, pid)
	for i := 0; i < 100 && st != "T"; i++ {
		time.Sleep(10 * time.Millisecond)
		st = processState(t, pid)
	}
	if st != "T" {
		t.Errorf("after SIGSTOP the process is in state %s, want T (stopped)", st)
	}
	if err := ping(n.Addr()); err == nil {
		t.Error("a SIGSTOPped node answered PING")
	}
	if err := n.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if err := ping(n.Addr()); err != nil {
		t.Errorf("resumed node does not answer: %v", err)
	}

	if err := n.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for dn.running(ctx) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := n.Signal(syscall.SIGSTOP); !errors.Is(err, ErrNotRunning) {
		t.Errorf("signal to a killed node: %v, want ErrNotRunning", err)
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ping(n.Addr()); err != nil {
		t.Errorf("restarted node does not answer at its old address: %v", err)
	}
	// Restart of a running node, and of a stopped one, works too.
	if err := n.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}

	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	if left := containers(t, d.RunID()); len(left) > 0 {
		t.Errorf("Stop left containers %v", left)
	}
	if _, err := os.Stat(dn.dir); !os.IsNotExist(err) {
		t.Errorf("node directory %s left behind", dn.dir)
	}
}

// With AOF the data directory survives a crash and a restart of the same
// container; without it the data is gone, as with a local node.
func TestDockerRestartKeepsDataOnlyWithAOF(t *testing.T) {
	d := newDocker(t)
	ctx := context.Background()
	for _, aof := range []string{"always", ""} {
		n, err := d.StartNode(ctx, NodeSpec{Name: "aof-" + aof, AOF: aof})
		if err != nil {
			t.Fatal(err)
		}
		c := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := n.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := n.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := c.Get(ctx, "k").Result()
		if aof != "" && got != "v" {
			t.Errorf("AOF %s: after kill and restart GET k = %q, %v; want v", aof, got, err)
		}
		if aof == "" && err != redis.Nil {
			t.Errorf("no AOF: after kill and restart GET k = %q, %v; want nil", got, err)
		}
		c.Close()
		if err := n.Stop(); err != nil {
			t.Fatal(err)
		}
	}
}

// The clock shim works in a container: the library and the control file's
// directory appear at their host paths, and a control file replaced on the
// host (by rename, as cluster.Clock does) moves the server's TIME.
func TestDockerNodeRunsUnderTheClockShim(t *testing.T) {
	shim, err := ClockShim()
	if err != nil {
		t.Fatal(err)
	}
	d := newDocker(t)
	ctx := context.Background()
	clock, err := NewClock(t.TempDir() + "/n0.clock")
	if err != nil {
		t.Fatal(err)
	}
	n, err := d.StartNode(ctx, NodeSpec{Name: "clock", ClockShim: shim, ClockFile: clock.Path()})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Stop()
	c := redis.NewClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1})
	defer c.Close()
	skew := func() time.Duration {
		now, err := c.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return time.Until(now)
	}
	if s := skew(); s > time.Minute || s < -time.Minute {
		t.Fatalf("before any change the node's clock is off by %v", s)
	}
	// An hour ahead, written as the nemesis does: a new file renamed over
	// the old one, which the container sees only through its directory.
	if err := os.WriteFile(clock.Path()+".new", []byte("3600000000000 1000000 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(clock.Path()+".new", clock.Path()); err != nil {
		t.Fatal(err)
	}
	s := skew()
	for i := 0; i < 100 && s < 59*time.Minute; i++ {
		time.Sleep(10 * time.Millisecond)
		s = skew()
	}
	if s < 59*time.Minute || s > 61*time.Minute {
		t.Errorf("after setting the clock an hour ahead the node's clock is off by %v", s)
	}
	info, err := d.api.ContainerInspect(ctx, n.(*DockerNode).id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if env := strings.Join(info.Container.Config.Env, " "); !strings.Contains(env, "LD_PRELOAD="+shim) {
		t.Errorf("environment %q lacks LD_PRELOAD", env)
	}
}

func TestDockerWithoutEngineSaysToRunMakeSetup(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+t.TempDir()+"/no-docker.sock")
	_, err := NewDocker(context.Background(), BackendOptions{})
	if err == nil || !strings.Contains(err.Error(), "make setup") {
		t.Errorf("error = %v, want one that says to run make setup", err)
	}
}

func TestDockerMissingImageFailsFastAndSaysWhatToDo(t *testing.T) {
	for image, fix := range map[string]string{
		// Ours: never pulled, built by make store-images.
		"lockchaos/redis:no-such-tag": "make store-images REDIS_IMAGE=lockchaos/redis:no-such-tag",
		// Any other: one pull attempt, here from a registry on loopback that is not there.
		"127.0.0.1:9/no/such-image:1": "docker pull 127.0.0.1:9/no/such-image:1",
	} {
		start := time.Now()
		_, err := NewDocker(context.Background(), BackendOptions{Image: image})
		if err == nil || !strings.Contains(err.Error(), fix) {
			t.Errorf("%s: error = %v, want one that says %q", image, err, fix)
		}
		if took := time.Since(start); took > 15*time.Second {
			t.Errorf("%s: failing took %v", image, took)
		}
	}
}

func TestRemoveContainersRemovesADeadRunsLeftoversOnly(t *testing.T) {
	d := newDocker(t)
	ctx := context.Background()
	n, err := d.StartNode(ctx, NodeSpec{Name: "left"})
	if err != nil {
		t.Fatal(err)
	}
	dir := n.(*DockerNode).dir
	// This process is alive: its containers are not leftovers.
	removed, skipped, err := RemoveContainers(ctx, d.RunID(), false)
	if err != nil || len(removed) != 0 || len(skipped) != 1 {
		t.Fatalf("live run: removed %v, skipped %v, %v; want it skipped", removed, skipped, err)
	}
	removed, _, err = RemoveContainers(ctx, d.RunID(), true)
	if err != nil || len(removed) != 1 {
		t.Fatalf("removed %v, %v; want the node's container", removed, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("node directory %s left behind", dir)
	}
	if ownerAlive(processOwner(os.Getpid())) != true || ownerAlive("999999999:1") || ownerAlive("") {
		t.Error("ownerAlive does not tell this process from others")
	}
}
