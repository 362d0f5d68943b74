package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// StoreImage is the image a store's members run in on the docker backend,
// built from the installed packages by `make store-images`
// (docker/build-image.sh --store NAME).
func StoreImage(store string) string { return "lockchaos/" + store + ":local" }

// storeBox is where a store's members run: nil on the local backend (each
// a child process of ours), else a container of the docker backend's
// engine from the store's image. Every store's Start calls it first.
func storeBox(ctx context.Context, b Backend, store string) (*storeContainers, error) {
	d, ok := b.(*Docker)
	if !ok {
		return nil, nil
	}
	image := StoreImage(store)
	if _, err := d.api.ImageInspect(ctx, image); err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("docker backend: image %s not found: build it from the installed %s with `make store-images` (`make setup` does too)", image, store)
		}
		return nil, fmt.Errorf("docker backend: inspect image %s: %w", image, err)
	}
	return &storeContainers{d: d, image: image}, nil
}

// storeContainers runs a store's members in containers of one image.
type storeContainers struct {
	d     *Docker
	image string
}

// member is the container a member named name, whose files are all in dir,
// runs in; nil (a child process) when c is. The folders in mounts (a
// server lockchaos built itself, which no image holds) are mounted
// read-only at their own paths.
func (c *storeContainers) member(name, dir string, mounts ...string) *memberBox {
	if c == nil {
		return nil
	}
	return &memberBox{c: c, name: name, dir: dir, mounts: mounts}
}

// memberBox runs a member's command, each start in a fresh container:
//   - the image holds the program at the path it has here, and the
//     member's directory is mounted at its own path, so the command is
//     the local backend's unchanged, with its output appended to the same
//     log file;
//   - host networking and host IPC: its ports are on 127.0.0.1 as a local
//     member's are, and PostgreSQL's System V segment is where a local
//     one's would be;
//   - it runs as the user the command would run as (ours, or the
//     Credential it asks for), named by this machine's /etc/passwd;
//   - its main process is the program itself (sh execs it), found by its
//     pid on this machine: the nemeses' signals reach it as they reach a
//     local member's.
//
// When the program exits the container is removed, so none outlives its
// process; the backend's watchdog and `lockchaos clean` remove those of a
// coordinator that died.
type memberBox struct {
	c         *storeContainers
	name, dir string
	mounts    []string // read-only, at their own paths

	mu sync.Mutex
	id string // the latest start's container
}

// readOnly binds each folder at its own path, read-only.
func readOnly(dirs []string) []string {
	var binds []string
	for _, d := range dirs {
		binds = append(binds, d+":"+d+":ro")
	}
	return binds
}

// containerLogEnv names the log file for the container's shell.
const containerLogEnv = "LOCKCHAOS_LOG"

// run starts cmd in a new container and returns its main process and a
// channel closed once that has exited and the container is gone.
func (b *memberBox) run(cmd *exec.Cmd) (*os.Process, chan struct{}, error) {
	d := b.c.d
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	log, ok := cmd.Stdout.(*os.File)
	if !ok || cmd.Stderr != cmd.Stdout {
		return nil, nil, fmt.Errorf("run %s in a container: its output must go to one log file", b.name)
	}
	// The program at the path it really has: the image holds no symbolic
	// links into /etc/alternatives.
	prog, err := filepath.EvalSymlinks(cmd.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("run %s in a container: %w", b.name, err)
	}
	user := fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
	if a := cmd.SysProcAttr; a != nil && a.Credential != nil {
		user = fmt.Sprintf("%d:%d", a.Credential.Uid, a.Credential.Gid)
		// The shell opens the log as that user; a child of ours would
		// have inherited our descriptor instead.
		if err := os.Chown(log.Name(), int(a.Credential.Uid), int(a.Credential.Gid)); err != nil {
			return nil, nil, fmt.Errorf("run %s in a container: hand its log to uid %d: %w", b.name, a.Credential.Uid, err)
		}
	}
	env := append([]string{containerLogEnv + "=" + log.Name(), "PATH=/usr/bin:/bin"}, cmd.Env...)
	workdir := cmd.Dir
	if workdir == "" {
		workdir = b.dir
	}
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	create, err := d.api.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: fmt.Sprintf("lockchaos-%s-%s-%s", d.run, b.name, hex.EncodeToString(suffix)),
		Config: &container.Config{
			Image:      b.c.image,
			Entrypoint: []string{"/bin/sh", "-c", `exec "$0" "$@" >>"$` + containerLogEnv + `" 2>&1`},
			Cmd:        append([]string{prog}, cmd.Args[1:]...),
			Env:        env,
			WorkingDir: workdir,
			User:       user,
			Labels: map[string]string{
				LabelManaged: "1", LabelRun: d.run, LabelNode: b.name, LabelDir: b.dir, LabelOwner: processOwner(os.Getpid()),
			},
		},
		HostConfig: &container.HostConfig{
			NetworkMode: "host",
			IpcMode:     "host",
			Binds: append([]string{
				b.dir + ":" + b.dir,
				"/etc/passwd:/etc/passwd:ro",
				"/etc/group:/etc/group:ro",
			}, readOnly(b.mounts)...),
		},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("create a %s container for %s: %w", b.c.image, b.name, err)
	}
	id := create.ID
	b.mu.Lock()
	b.id = id
	b.mu.Unlock()
	remove := func() error {
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := d.api.ContainerRemove(rctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if cerrdefs.IsNotFound(err) {
			err = nil
		}
		return err
	}
	if _, err := d.api.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		return nil, nil, errors.Join(fmt.Errorf("start the %s container of %s: %w", b.c.image, b.name, err), remove())
	}
	info, err := d.api.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	var pid int
	if err == nil && info.Container.State != nil {
		pid = info.Container.State.Pid
	}
	if pid <= 0 {
		return nil, nil, errors.Join(fmt.Errorf("the %s container of %s (%s) has no running process (inspect: %v; log: %s)", b.c.image, b.name, short(id), err, logTail(log.Name())), remove())
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("find the process of %s (pid %d): %w", b.name, pid, err), remove())
	}
	exited := make(chan struct{})
	go func() {
		wait := d.api.ContainerWait(context.Background(), id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
		select {
		case <-wait.Result:
		case <-wait.Error:
			// The engine went away: wait for the process itself.
			for processAlive(pid) {
				time.Sleep(10 * time.Millisecond)
			}
		}
		b.keepOutput(id, log.Name())
		_ = remove()
		close(exited)
	}()
	return proc, exited, nil
}

// processAlive says whether process pid still exists (a zombie does not
// count: a container's main process is reaped by its engine).
func processAlive(pid int) bool {
	st, ok := readProcStat(pid)
	return ok && st.state != 'Z'
}

// keepOutput appends what the container itself printed to the member's
// log: the server's own output is already there, so this is only ever the
// shell's complaint when it could not start the server.
func (b *memberBox) keepOutput(id, logPath string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc, err := b.c.d.api.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return
	}
	defer rc.Close()
	out, _ := io.ReadAll(io.LimitReader(rc, 64<<10))
	if len(bytes.TrimSpace(out)) == 0 {
		return
	}
	if f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0); err == nil {
		fmt.Fprintf(f, "container %s: %s\n", short(id), bytes.TrimSpace(out))
		f.Close()
	}
}

// awaitKilled waits until the process pid, just sent SIGKILL, has exited
// and its container is gone. Should it outlive the signal (a signal that
// could not be sent, say), every second it is signalled again by its pid
// and by the engine (docker kill), so that a kill never waits for the run
// to end.
func (b *memberBox) awaitKilled(pid int, exited <-chan struct{}) {
	b.mu.Lock()
	id := b.id
	b.mu.Unlock()
	for {
		select {
		case <-exited:
			return
		case <-time.After(time.Second):
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = b.c.d.api.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"})
		cancel()
	}
}
