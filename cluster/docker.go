package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/lockchaos/lockchaos/internal/ports"
)

// DefaultImage is the docker backend's image when --image is not given: built
// by `make store-images` (docker/build-image.sh) from this host's redis-server, so it
// needs no registry.
const DefaultImage = "lockchaos/redis:local"

// Labels on every container the docker backend starts. `lockchaos clean`
// removes whatever carries LabelManaged; LabelRun tells the runs apart.
const (
	LabelManaged = "lockchaos"
	LabelRun     = "lockchaos.run"
	LabelNode    = "lockchaos.node"
	// LabelDir is the host directory bind-mounted as the node's /data, so
	// that `lockchaos clean` can remove it too.
	LabelDir = "lockchaos.dir"
	// LabelOwner is the coordinator's "pid:start-time" (start time in clock
	// ticks since boot, from /proc): `lockchaos clean` leaves the containers
	// of a coordinator that still runs alone.
	LabelOwner = "lockchaos.owner"
)

// reaperImage is testcontainers-go v0.44.0's reaper (Ryuk). It cannot be pulled
// where there is no registry, so the backend turns the reaper off when the image
// is not present and removes its containers itself.
const reaperImage = "testcontainers/ryuk:0.14.0"

// containerDataDir is where a node's host directory appears in its container.
const containerDataDir = "/data"

func init() {
	RegisterBackend("docker", func(opts BackendOptions) (Backend, error) {
		return NewDocker(context.Background(), opts)
	})
}

// Docker runs each Redis node as a container, through testcontainers-go.
// Containers use host networking and bind 127.0.0.1 on a free port, so their
// traffic stays on loopback and the per-link proxies and nemeses work as they
// do with local processes; nothing ever talks to a container's bridge address.
type Docker struct {
	provider *testcontainers.DockerProvider
	api      client.APIClient
	image    string
	server   string // the server command: redis-server, valkey-server, …
	run      string // this backend's lockchaos.run label

	watchdog io.Closer // its end of the pipe to the clean-up watchdog; nil without one
}

// NewDocker connects to the Docker engine and checks that the image is there
// (pulling it when a registry can be reached). Each error says what to do.
func NewDocker(ctx context.Context, opts BackendOptions) (*Docker, error) {
	image := opts.Image
	if image == "" {
		image = DefaultImage
	}
	// A plain engine client first: testcontainers reads its configuration
	// once per process, so the reaper must be settled before its first call.
	pre, err := client.New(client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("docker backend: %w", err)
	}
	defer pre.Close()
	if err := checkEngine(ctx, pre); err != nil {
		return nil, err
	}
	// What a coordinator killed outright left, when its watchdog could not
	// clean up either (killed with it, say, as a CI job's cgroup is): its
	// containers, their directories and a PostgreSQL member's segment,
	// which stays attached until its container goes. A failure here costs
	// this run nothing.
	_, _, _ = removeContainers(ctx, pre, "", false)
	if _, set := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !set {
		if _, err := pre.ImageInspect(ctx, reaperImage); err != nil {
			os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
		}
	}
	// testcontainers logs every step to stderr; the run's output is the verdict.
	tclog.SetDefault(tclog.NewNoopLogger())
	// GetProvider, not NewDockerProvider: it names the engine's default bridge
	// network, without which testcontainers creates and attaches one of its own.
	generic, err := testcontainers.ProviderDefault.GetProvider(testcontainers.WithLogger(tclog.NewNoopLogger()))
	if err != nil {
		return nil, fmt.Errorf("docker backend: connect through testcontainers-go: %w", err)
	}
	provider, ok := generic.(*testcontainers.DockerProvider)
	if !ok {
		generic.Close()
		return nil, fmt.Errorf("docker backend: testcontainers-go gave a %T, not a Docker provider", generic)
	}
	d := &Docker{provider: provider, api: provider.Client(), image: image, run: newRunID()}
	cmd, err := d.ensureImage(ctx)
	if err != nil {
		provider.Close()
		return nil, err
	}
	d.server = serverCommand(cmd)
	d.watchdog = startWatchdog(d.run)
	return d, nil
}

// checkEngine fails fast, with the fix, when no engine answers or the engine
// is not on this machine (host networking needs it here).
func checkEngine(ctx context.Context, api *client.Client) error {
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := api.Ping(pingCtx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return fmt.Errorf("docker backend: no Docker engine answers at %s (%v): run `make setup` as root (it installs docker.io and starts dockerd), or start Docker and make its socket accessible (DOCKER_HOST); --backend local needs no Docker", api.DaemonHost(), err)
	}
	if u, err := url.Parse(api.DaemonHost()); err == nil && u.Scheme == "tcp" {
		if h := u.Hostname(); h != "localhost" && !strings.HasPrefix(h, "127.") {
			return fmt.Errorf("docker backend: the engine at %s is not on this machine; containers run with host networking on 127.0.0.1, so the engine must run here", api.DaemonHost())
		}
	}
	return nil
}

// ensureImage returns the image's default command, pulling the image only when
// it is not present (testcontainers-go would retry a failed pull for minutes).
func (d *Docker) ensureImage(ctx context.Context) ([]string, error) {
	img, err := d.api.ImageInspect(ctx, d.image)
	if err == nil {
		return imageCmd(img), nil
	}
	if !cerrdefs.IsNotFound(err) {
		return nil, fmt.Errorf("docker backend: inspect image %s: %w", d.image, err)
	}
	if strings.HasPrefix(d.image, "lockchaos/") { // built here, in no registry
		fix := "`make store-images` (`make setup` does too)"
		if d.image != DefaultImage {
			fix = "`make store-images REDIS_IMAGE=" + d.image + "`"
		}
		return nil, fmt.Errorf("docker backend: image %s not found: build it from the installed redis-server with %s", d.image, fix)
	}
	pullCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	pull, err := d.api.ImagePull(pullCtx, d.image, client.ImagePullOptions{})
	if err == nil {
		err = pull.Wait(pullCtx)
	}
	if err != nil {
		return nil, fmt.Errorf("docker backend: image %s is not here and could not be pulled (%v): `docker pull %s` where a registry is reachable, or leave out --image to use %s (built by `make store-images`)", d.image, err, d.image, DefaultImage)
	}
	if img, err = d.api.ImageInspect(ctx, d.image); err != nil {
		return nil, fmt.Errorf("docker backend: inspect image %s after pulling it: %w", d.image, err)
	}
	return imageCmd(img), nil
}

func imageCmd(img client.ImageInspectResult) []string {
	if img.Config == nil {
		return nil
	}
	return img.Config.Cmd
}

// serverCommand picks the server from the image's own command (valkey images
// run valkey-server), else redis-server.
func serverCommand(cmd []string) string {
	if len(cmd) > 0 && strings.HasSuffix(filepath.Base(cmd[0]), "-server") {
		return cmd[0]
	}
	return "redis-server"
}

func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b)
}

// RunID is the lockchaos.run label of this backend's containers.
func (d *Docker) RunID() string { return d.run }

// Image is the image the nodes run.
func (d *Docker) Image() string { return d.image }

// Close removes any container of this run that is still there (the runner
// stops every node first) and ends the watchdog.
func (d *Docker) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _, err := removeContainers(ctx, d.api, d.run, true)
	if d.watchdog != nil {
		d.watchdog.Close()
	}
	return errors.Join(err, d.provider.Close())
}

// StartNode starts one container and waits until its redis-server answers
// PING on 127.0.0.1.
func (d *Docker) StartNode(ctx context.Context, spec NodeSpec) (Node, error) {
	n, err := ports.Retry(ctx, func(port int) (*DockerNode, error) { return d.startNode(ctx, spec, port) })
	if err != nil {
		return nil, fmt.Errorf("start redis node %s in a %s container: %w", spec.Name, d.image, err)
	}
	return n, nil
}

// StartSentinel starts one sentinel container (the image's server in
// sentinel mode, from the same image as the nodes) and waits until it
// answers on 127.0.0.1.
func (d *Docker) StartSentinel(ctx context.Context, spec SentinelSpec) (Sentinel, error) {
	s, err := ports.Retry(ctx, func(port int) (*DockerSentinel, error) { return d.startSentinel(ctx, spec, port) })
	if err != nil {
		return nil, fmt.Errorf("start sentinel %s in a %s container: %w", spec.Name, d.image, err)
	}
	return s, nil
}

// dockerCtr is one container of this backend, a node or a sentinel: its
// server on 127.0.0.1:port, its host directory bind-mounted as /data.
type dockerCtr struct {
	d     *Docker
	name  string
	port  int
	dir   string   // on the host; the container's /data
	log   string   // the server's log file, in dir
	ident identity // what the server answers to prove it is this one
	ctr   testcontainers.Container
	id    string
}

// launch creates and starts the container, running the image's server with
// args, and waits until it answers. On failure nothing of it is left.
func (c *dockerCtr) launch(ctx context.Context, args []string, env map[string]string, binds []string) error {
	d := c.d
	req := testcontainers.ContainerRequest{
		Image: d.image,
		Name:  fmt.Sprintf("lockchaos-%s-%s-%d", d.run, c.name, c.port),
		// The server itself, not the image's entrypoint script: it is then
		// the container's main process, the one a signal reaches, and it runs
		// as us instead of dropping to a user that cannot read our files
		// (the clock shim's control file, the data directory).
		Entrypoint: []string{d.server},
		Cmd:        args,
		Env:        env,
		Labels: map[string]string{
			LabelManaged: "1", LabelRun: d.run, LabelNode: c.name, LabelDir: c.dir, LabelOwner: processOwner(os.Getpid()),
		},
		ConfigModifier: func(cfg *container.Config) {
			// Our own uid: the server's files in the host directory stay ours.
			cfg.User = fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
		},
		HostConfigModifier: func(hc *container.HostConfig) {
			hc.NetworkMode = "host"
			hc.Binds = append([]string{c.dir + ":" + containerDataDir}, binds...)
			hc.AutoRemove = false // Restart starts the same container again
		},
		// Host networking only: no endpoint on any container network.
		EndpointSettingsModifier: func(m map[string]*network.EndpointSettings) { clear(m) },
	}
	ctr, err := d.provider.CreateContainer(ctx, req)
	if ctr != nil {
		c.ctr, c.id = ctr, ctr.GetContainerID()
	}
	if err != nil {
		c.remove()
		return fmt.Errorf("create container: %w", err)
	}
	if err := ctr.Start(ctx); err != nil {
		c.remove()
		return fmt.Errorf("start container %s: %w", short(c.id), err)
	}
	if err := c.waitReady(ctx); err != nil {
		c.remove()
		return err
	}
	return nil
}

// waitReady waits for the server's answer, failing early when the container
// exits (for instance because another process took the port).
func (c *dockerCtr) waitReady(ctx context.Context) error {
	readyCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	exited := make(chan struct{})
	go func() {
		for readyCtx.Err() == nil {
			if !c.running(readyCtx) {
				close(exited)
				return
			}
			select {
			case <-readyCtx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	if err := waitReady(readyCtx, c.Addr(), c.ident, exited); err != nil {
		return fmt.Errorf("container %s: %w (%s)", short(c.id), err, c.logTail())
	}
	// Something else may answer on the port while our server failed to bind it.
	if !c.running(ctx) {
		return fmt.Errorf("container %s exited after 127.0.0.1:%d answered (%s)", short(c.id), c.port, c.logTail())
	}
	return nil
}

// Pid is the host pid of the container's main process (its server), 0
// when it does not run: what the run-queue watch of the lock nodes reads.
func (c *dockerCtr) Pid() int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := c.d.api.ContainerInspect(ctx, c.id, client.ContainerInspectOptions{})
	if err != nil || res.Container.State == nil || !res.Container.State.Running {
		return 0
	}
	return res.Container.State.Pid
}

func (c *dockerCtr) running(ctx context.Context) bool {
	res, err := c.d.api.ContainerInspect(ctx, c.id, client.ContainerInspectOptions{})
	if err != nil {
		return !cerrdefs.IsNotFound(err) // a failed inspect is not an exit
	}
	return res.Container.State != nil && res.Container.State.Running
}

// logTail is the end of the server's log file, or of the container's output
// when the server died before opening it.
func (c *dockerCtr) logTail() string {
	b, _ := os.ReadFile(filepath.Join(c.dir, c.log))
	if len(bytes.TrimSpace(b)) == 0 && c.ctr != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if rc, err := c.ctr.Logs(ctx); err == nil {
			b, _ = io.ReadAll(io.LimitReader(rc, 64<<10))
			rc.Close()
		}
	}
	if t := tail(b); t != "" {
		return "log: " + t
	}
	return "no log"
}

func (c *dockerCtr) Name() string { return c.name }
func (c *dockerCtr) Log() string  { return filepath.Join(c.dir, c.log) }
func (c *dockerCtr) Addr() string { return "127.0.0.1:" + strconv.Itoa(c.port) }

// ContainerID is the container's id.
func (c *dockerCtr) ContainerID() string { return c.id }

// Stop removes the container (killing it, paused or not) and its directory.
func (c *dockerCtr) Stop() error { return c.remove() }

func (c *dockerCtr) remove() error {
	var err error
	if c.id != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err = c.d.api.ContainerRemove(ctx, c.id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if cerrdefs.IsNotFound(err) {
			err = nil
		}
		if err != nil {
			err = fmt.Errorf("remove container %s of %s: %w", short(c.id), c.name, err)
		}
	}
	return errors.Join(err, os.RemoveAll(c.dir))
}

// DockerNode is one redis-server container.
type DockerNode struct {
	dockerCtr
	spec NodeSpec
}

func (d *Docker) startNode(ctx context.Context, spec NodeSpec, port int) (*DockerNode, error) {
	dir, err := mkScratch(spec.Name)
	if err != nil {
		return nil, fmt.Errorf("make a directory for redis node %s: %w", spec.Name, err)
	}
	n := &DockerNode{dockerCtr: dockerCtr{d: d, name: spec.Name, port: port, dir: dir, log: "redis.log",
		ident: nodeIdentity(filepath.Base(dir))}, spec: spec}
	var binds []string
	env := map[string]string{}
	// The clock shim: the library and the directory of its control file appear
	// at their host paths, so the shim inside reads the very file the nemesis
	// replaces (a bind mount of the file itself would keep the old inode).
	if spec.ClockShim != "" {
		binds = append(binds, spec.ClockShim+":"+spec.ClockShim+":ro")
		env["LD_PRELOAD"] = spec.ClockShim
	}
	if spec.ClockFile != "" {
		cdir := filepath.Dir(spec.ClockFile)
		binds = append(binds, cdir+":"+cdir+":ro")
		env[ClockFileEnv] = spec.ClockFile
	}
	if err := n.launch(ctx, n.args(), env, binds); err != nil {
		return nil, err
	}
	return n, nil
}

// args are a local node's, with the container's data directory: one list
// of server settings for both backends, so they cannot drift apart.
func (n *DockerNode) args() []string {
	return (&LocalNode{spec: n.spec, port: n.port, dir: containerDataDir, id: filepath.Base(n.dir)}).args()
}

// Signal sends sig to the container's main process with the engine's kill
// call (docker kill --signal). redis-server is that process (it is the
// container's entrypoint), so SIGSTOP, SIGCONT and SIGKILL hit exactly the
// process the local backend signals.
// Pause/unpause (the cgroup freezer) is deliberately not used for
// SIGSTOP/SIGCONT: a frozen task is not a stopped one, the engine unpauses a
// paused container whenever it delivers any other signal to it (checked on
// Docker 20.10), and one mechanism in both backends keeps their verdicts
// comparable. A container that is not running (killed, not yet restarted)
// gives ErrNotRunning.
func (n *DockerNode) Signal(sig syscall.Signal) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := n.d.api.ContainerKill(ctx, n.id, client.ContainerKillOptions{Signal: strconv.Itoa(int(sig))}); err != nil {
		if cerrdefs.IsConflict(err) && !n.running(ctx) {
			err = ErrNotRunning
		}
		return fmt.Errorf("signal %v to redis node %s (container %s): %w", sig, n.spec.Name, short(n.id), err)
	}
	return nil
}

// Restart kills the container if it still runs and starts the same container
// again: same port, same /data (so an AOF file survives, as with a local
// node's directory).
func (n *DockerNode) Restart(ctx context.Context) error {
	if n.running(ctx) {
		if _, err := n.d.api.ContainerKill(ctx, n.id, client.ContainerKillOptions{Signal: "KILL"}); err != nil && !cerrdefs.IsConflict(err) {
			return fmt.Errorf("restart redis node %s: kill container %s: %w", n.spec.Name, short(n.id), err)
		}
	}
	waitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	wait := n.d.api.ContainerWait(waitCtx, n.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-wait.Result:
	case err := <-wait.Error:
		return fmt.Errorf("restart redis node %s: wait for container %s to stop: %w", n.spec.Name, short(n.id), err)
	}
	if _, err := n.d.api.ContainerStart(ctx, n.id, client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("restart redis node %s: start container %s: %w", n.spec.Name, short(n.id), err)
	}
	if err := n.waitReady(ctx); err != nil {
		return fmt.Errorf("restart redis node %s: %w", n.spec.Name, err)
	}
	return nil
}

// DockerSentinel is one sentinel container: the image's server started with
// --sentinel (redis-server and valkey-server both take it), its
// configuration in the bind-mounted /data, which Sentinel rewrites.
type DockerSentinel struct {
	dockerCtr
}

func (d *Docker) startSentinel(ctx context.Context, spec SentinelSpec, port int) (*DockerSentinel, error) {
	dir, myid, err := newSentinelDir(spec, port, containerDataDir)
	if err != nil {
		return nil, err
	}
	s := &DockerSentinel{dockerCtr{d: d, name: spec.Name, port: port, dir: dir, log: "sentinel.log", ident: sentinelIdentity(myid)}}
	if err := s.launch(ctx, []string{containerDataDir + "/sentinel.conf", "--sentinel"}, nil, nil); err != nil {
		return nil, err
	}
	return s, nil
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// RemoveContainers removes the containers lockchaos started (run "": of every
// run, else of that run) and the host directories they used, except those
// of a coordinator that is still running unless live is set. It returns the
// names of the containers it removed and of those it left to a live run.
// `lockchaos clean` calls it after a crashed run.
func RemoveContainers(ctx context.Context, run string, live bool) (removed, skipped []string, err error) {
	api, err := client.New(client.FromEnv)
	if err != nil {
		return nil, nil, err
	}
	defer api.Close()
	if err := checkEngine(ctx, api); err != nil {
		return nil, nil, err
	}
	return removeContainers(ctx, api, run, live)
}

func removeContainers(ctx context.Context, api client.APIClient, run string, live bool) (removed, skipped []string, err error) {
	f := make(client.Filters).Add("label", LabelManaged+"=1")
	if run != "" {
		f.Add("label", LabelRun+"="+run)
	}
	list, err := api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, nil, fmt.Errorf("list lockchaos containers: %w", err)
	}
	var errs []error
	for _, c := range list.Items {
		name := short(c.ID)
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		if !live && ownerAlive(c.Labels[LabelOwner]) {
			skipped = append(skipped, name)
			continue
		}
		_, err := api.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress") {
			// Its run's watchdog is removing it, and its directory after.
			continue
		}
		if err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove container %s: %w", name, err))
			continue
		}
		removed = append(removed, name)
		// Only a directory this backend made: lockchaos-* in the scratch
		// directory; what its server left outside it goes first (the
		// container is gone, so nothing is attached any more).
		if dir := c.Labels[LabelDir]; filepath.Dir(dir) == filepath.Clean(ScratchDir()) && strings.HasPrefix(filepath.Base(dir), "lockchaos-") {
			releaseOrphan(dir)
			if err := os.RemoveAll(dir); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return removed, skipped, errors.Join(errs...)
}

// processOwner identifies a process across pid reuse: "pid:start-time".
func processOwner(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return strconv.Itoa(pid)
	}
	// The command (field 2) may hold spaces; the fields after its ')' do not.
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(fields) < 20 {
		return strconv.Itoa(pid)
	}
	return strconv.Itoa(pid) + ":" + fields[19] // field 22, starttime
}

// ownerAlive says whether the process a LabelOwner names still runs (on this
// machine, in this pid namespace).
func ownerAlive(owner string) bool {
	pid, err := strconv.Atoi(strings.SplitN(owner, ":", 2)[0])
	if err != nil || pid <= 0 {
		return false
	}
	return processOwner(pid) == owner
}

// startWatchdog starts a small process that outlives the coordinator: when the
// coordinator is gone (normal exit, or SIGKILL: its end of the pipe closes),
// it removes this run's containers and their directories with the docker
// CLI. The runner stops its nodes itself; this covers a coordinator that
// cannot, and `lockchaos clean` covers a machine without the docker CLI.
func startWatchdog(run string) io.Closer {
	docker, err := exec.LookPath("docker")
	if err != nil {
		return nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	defer r.Close()
	// $0 docker, $1 the run, $2 the temp directory its data directories are in.
	script := `read -r _
for id in $("$0" ps -aq --filter label=` + LabelRun + `="$1"); do
  dir=$("$0" inspect -f '{{index .Config.Labels "` + LabelDir + `"}}' "$id")
  "$0" rm -f "$id" >/dev/null 2>&1
  # A PostgreSQL member's System V segment (host IPC) outlives its
  # container: the one line 7 of postmaster.pid names, if the postmaster
  # we started created it (` + pgShmCreator + `: its pid; ipcs -mp: shmid owner cpid).
  shmid=$(sed -n 7p "$dir/data/postmaster.pid" 2>/dev/null | awk '{print $2}')
  cpid=$(cat "$dir/` + pgShmCreator + `" 2>/dev/null)
  if [ -n "$shmid" ] && [ -n "$cpid" ] &&
    ipcs -mp 2>/dev/null | awk -v id="$shmid" -v pid="$cpid" '$1 == id && $3 == pid {f = 1} END {exit !f}'; then
    ipcrm -m "$shmid" >/dev/null 2>&1
  fi
  case "$dir" in "$2"/lockchaos-*) rm -rf "$dir" ;; esac
done`
	cmd := exec.Command("/bin/sh", "-c", script, docker, run, filepath.Clean(ScratchDir()))
	cmd.Stdin = r
	// Its own session: a terminal's Ctrl-C must not end it before it cleans up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return nil
	}
	go cmd.Wait()
	return w
}
