package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/lockchaos/lockchaos/internal/ports"
)

// ServerSpec says how to start one member of a store that lives in a
// folder of its own (stores/NAME): a server that listens on one port of
// 127.0.0.1 and keeps its files in one directory.
type ServerSpec struct {
	// Store is the store's name: on the docker backend the member runs in
	// a container of its image (StoreImage), built by its stores/NAME/image.sh.
	Store string
	// Name is the member's name in the run ("mc0").
	Name string
	// Command is how to start the server: the same on every start (a
	// restart keeps the port and the directory, dir, where it keeps its
	// files). Its output goes to the member's log.
	Command func(dir string, port int) *exec.Cmd
	// Ready returns nil once the server on addr answers as the one this
	// member started (a server of another run may have bound the port
	// first): Start and Restart wait for it, for at most StartTimeout.
	Ready func(ctx context.Context, addr, dir string) error
	// HoldsLease asks the server on addr, alone, whether the lock's state
	// for key with token (the lease's Token) is there: how the nemeses see
	// what a fault did to a lease (LeaseHolder).
	HoldsLease func(ctx context.Context, addr, key, token string) (bool, error)
	// StartTimeout bounds a start; 0 is 30 s.
	StartTimeout time.Duration
	// Mounts are folders of this machine the command needs that the
	// store's image does not hold (a server lockchaos built itself, in
	// its cache): on the docker backend they are mounted read-only at
	// their own paths.
	Mounts []string
}

// Server is one member of a store in a folder of its own, started by
// StartServer: a child process of the coordinator (or its container's
// main process), in its own scratch directory, its output in Log. It is a
// Node: the nemeses pause, kill and restart it like any store's member.
type Server struct {
	spec ServerSpec
	dir  string
	port int
	proc process
}

// StartServer starts one member on a free port and waits until it is
// ready; another run that takes the port first makes it start again on
// another.
func StartServer(ctx context.Context, backend Backend, spec ServerSpec) (*Server, error) {
	if spec.Command == nil || spec.Ready == nil || spec.HoldsLease == nil {
		return nil, fmt.Errorf("store %s: member %s needs Command, Ready and HoldsLease functions", spec.Store, spec.Name)
	}
	box, err := storeBox(ctx, backend, spec.Store)
	if err != nil {
		return nil, err
	}
	s, err := ports.Retry(ctx, func(port int) (*Server, error) {
		dir, err := mkScratch(spec.Name)
		if err != nil {
			return nil, err
		}
		s := &Server{spec: spec, dir: dir, port: port, proc: process{box: box.member(spec.Name, dir, spec.Mounts...)}}
		if err := s.launch(ctx); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		return s, nil
	})
	if err != nil {
		return nil, fmt.Errorf("start %s member %s: %w", spec.Store, spec.Name, err)
	}
	return s, nil
}

// launch starts the process and waits until it is ready.
func (s *Server) launch(ctx context.Context) error {
	log, err := os.OpenFile(s.Log(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := s.spec.Command(s.dir, s.port)
	cmd.Stdout, cmd.Stderr = log, log
	err = s.proc.start(cmd)
	log.Close() // the child has its own copy
	if err != nil {
		return fmt.Errorf("exec %s: %w", cmd.Path, err)
	}
	limit := s.spec.StartTimeout
	if limit <= 0 {
		limit = 30 * time.Second
	}
	rctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	exited := s.proc.done()
	for {
		err := s.spec.Ready(rctx, s.Addr(), s.dir)
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return exitedEarly{fmt.Sprintf("it exited before it was ready: another process may have its port, or its log says why (%v; log: %s)", err, logTail(s.Log()))}
		case <-rctx.Done():
			s.proc.kill()
			return fmt.Errorf("not ready after %s: %v (log: %s)", limit, err, logTail(s.Log()))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// exitedEarly: a server exited during its start. A port that another
// process took is one reason, so a start on other ports is tried
// (errPortTaken); its message names neither as certain, since a server
// refused by its own settings exits the same way.
type exitedEarly struct{ msg string }

func (e exitedEarly) Error() string      { return e.msg }
func (exitedEarly) Is(target error) bool { return target == errPortTaken }

func (s *Server) Name() string { return s.spec.Name }
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }
func (s *Server) Log() string  { return filepath.Join(s.dir, "server.log") }

// Dir is the member's own directory.
func (s *Server) Dir() string { return s.dir }

// Pid is the process id of the running server.
func (s *Server) Pid() int { return s.proc.pid() }

// Signal sends sig to the server's own process only; one killed and not
// restarted gives ErrNotRunning.
func (s *Server) Signal(sig syscall.Signal) error {
	return s.proc.signal(s.spec.Store+" member "+s.spec.Name, sig)
}

// Restart starts the server again on its port and directory, once the
// port is free.
func (s *Server) Restart(ctx context.Context) error {
	s.proc.kill()
	return onOwnPort(ctx, []int{s.port}, func() error { return s.launch(ctx) },
		func(err error) bool { return errors.Is(err, errPortTaken) })
}

// HoldsLease implements LeaseHolder with the spec's HoldsLease.
func (s *Server) HoldsLease(ctx context.Context, key, token string) (bool, error) {
	return s.spec.HoldsLease(ctx, s.Addr(), key, token)
}

// Stop kills the server and removes its directory.
func (s *Server) Stop() error {
	s.proc.kill()
	return os.RemoveAll(s.dir)
}

// ServerBin finds a store's server program: on PATH, or in /usr/sbin,
// where Debian installs servers (on no user's PATH but root's). The error
// says to install pkg.
func ServerBin(program, pkg string) (string, error) {
	if bin, err := exec.LookPath(program); err == nil {
		return bin, nil
	}
	if st, err := os.Stat("/usr/sbin/" + program); err == nil && st.Mode()&0o111 != 0 {
		return "/usr/sbin/" + program, nil
	}
	return "", fmt.Errorf("%s not found in PATH or /usr/sbin: install it with `apt-get install -y %s` (Debian/Ubuntu), or run `make setup` as root", program, pkg)
}

// Servers is an ensemble of members that all serve clients and elect
// nothing (each lock node one server): what StartServers starts.
type Servers []*Server

func (ss Servers) Members() []Node { return asNodes(ss) }
func (ss Servers) Serving() []Node { return asNodes(ss) }
func (ss Servers) Close() error    { return nil }

// StartServers starts spec.Members members, named NAME0, NAME1, …, with
// spec's Store and functions; on an error it stops those it started.
func StartServers(ctx context.Context, backend Backend, members int, spec ServerSpec) (Servers, error) {
	name := spec.Name
	var ss Servers
	for i := 0; i < max(members, 1); i++ {
		spec.Name = name + strconv.Itoa(i)
		s, err := StartServer(ctx, backend, spec)
		if err != nil {
			for _, s := range ss {
				s.Stop()
			}
			return nil, err
		}
		ss = append(ss, s)
	}
	return ss, nil
}
