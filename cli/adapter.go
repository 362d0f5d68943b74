package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockchaos/lockchaos/adaptercheck"
	"github.com/lockchaos/lockchaos/adapterinit"
	"github.com/lockchaos/lockchaos/locks"
)

const adapterUsage = `Usage: lockchaos adapter check NAME|FILE   a short self-test of an adapter against a real Redis
       lockchaos adapter build [--force] [NAME...]
                                            build the shipped adapters (make adapters)
       lockchaos adapter init --lang LANG [--name NAME] DIR
                                            write a new adapter into DIR to start from

An adapter lock is a program in any language that speaks the lock protocol
(docs/protocol.md), described by a manifest, lock.yaml. The shipped ones are
in adapters/LANGUAGE/LIBRARY/ (lockchaos list shows them).

check starts a Redis and two copies of the adapter and tests, in plain
words, each part of the protocol its manifest claims: acquire and a second
client refused, release and not_held, expiry, renew, a lease kept alive,
reentry, lost events, an unreachable node (unknown, never granted) and that
every line is a protocol message. Exit status: 0 all passed, 1 a step
failed, 3 usage, 4 setup.

build runs each manifest's build command in its folder (Maven, npm, pip,
at the versions the adapter's own manifest files pin). An adapter whose
toolchain (requires) is missing is skipped, and said so; a build that fails
fails the command. An adapter whose folder has not changed since its last
build here (its files' names, sizes and times, and the files its command
names) is not built again; --force builds every one. Outside a clone of
lockchaos the shipped adapters are the ones this binary carries, unpacked
into ~/.cache/lockchaos/adapters/, where each is also built on its first
use; build builds them all at once (a CI's setup step).

init writes a small adapter in LANG (go, java, node, python or rust)
around that language's most used Redis client (go-redis, Jedis, ioredis,
redis-py, the redis crate): a plain token lease, SET key token NX PX ttl,
released and renewed by Lua, whose calls you replace with your lock
library's. Its manifest files pin exact versions (go.mod and go.sum,
pom.xml, package.json and package-lock.json, requirements.txt, Cargo.toml
and Cargo.lock), and its lock.yaml, named NAME (default: DIR's name),
says what it does. check builds an adapter whose built file is missing
with its build command first, so that init, then check DIR/lock.yaml,
passes as written.
`

func cmdAdapter(args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(os.Stderr, adapterUsage)
		if len(args) == 0 {
			return ExitUsage
		}
		return 0
	}
	switch args[0] {
	case "check":
		if len(args) != 2 || strings.HasPrefix(args[1], "-") {
			fmt.Fprint(os.Stderr, adapterUsage)
			return ExitUsage
		}
		return adapterCheck(os.Stdout, args[1])
	case "init":
		return adapterInit(os.Stdout, args[1:])
	case "build":
		force, names := false, args[1:]
		if len(names) > 0 && names[0] == "--force" {
			force, names = true, names[1:]
		}
		for _, n := range names {
			if strings.HasPrefix(n, "-") {
				fmt.Fprintf(os.Stderr, "lockchaos adapter build: unknown flag %s\n\n%s", n, adapterUsage)
				return ExitUsage
			}
		}
		return adapterBuild(os.Stdout, names, force)
	}
	fmt.Fprintf(os.Stderr, "lockchaos adapter: unknown command %q\n\n%s", args[0], adapterUsage)
	return ExitUsage
}

// adapterManifest finds an adapter lock by name or manifest path.
func adapterManifest(nameOrFile string) (*locks.Manifest, error) {
	if st, err := os.Stat(nameOrFile); err == nil && !st.IsDir() {
		return locks.ReadManifest(nameOrFile)
	}
	s, err := locks.Lookup(nameOrFile)
	if err != nil {
		return nil, err
	}
	if s.Adapter == nil {
		return nil, fmt.Errorf("lock %s is written in Go, not an adapter: adapter check is for adapter locks (lockchaos list)", s.Name)
	}
	return s.Adapter, nil
}

func adapterCheck(w io.Writer, nameOrFile string) int {
	m, err := adapterManifest(nameOrFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos adapter check:", err)
		return ExitUsage
	}
	scratch, err := adaptercheck.Scratch()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos adapter check:", err)
		return ExitSetup
	}
	ctx, stop := signalContext()
	defer stop()
	fmt.Fprintf(w, "adapter check %s (%s; logs in %s)\n", m.Name, m.File, scratch)
	// An adapter not built yet (one adapter init wrote) is built first.
	if len(m.Build) > 0 && m.MissingTools() == "" && m.Unbuilt() {
		fmt.Fprintf(w, "building it first (%s is missing): %s\n", m.Built, strings.Join(m.Build, " "))
		if failed, err := locks.Build(w, w, os.Stderr, []*locks.Manifest{m}, false); err != nil || failed > 0 {
			if err != nil {
				fmt.Fprintln(os.Stderr, "lockchaos adapter check:", err)
			}
			os.RemoveAll(scratch)
			return 1
		}
	}
	steps, err := adaptercheck.Check(ctx, m, scratch, w)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos adapter check:", err)
		return ExitSetup
	}
	failed := 0
	for _, s := range steps {
		if s.Err != nil {
			failed++
		}
	}
	if failed > 0 {
		fmt.Fprintf(w, "FAILED: %d of %d steps; the adapter's standard error is in %s\n", failed, len(steps), scratch)
		return 1
	}
	os.RemoveAll(scratch)
	fmt.Fprintf(w, "PASSED: %s speaks the lock protocol (%d steps)\n", m.Name, len(steps))
	// A run of this build of it (--lock-file) need not check it again.
	_ = adaptercheck.Record(m)
	return 0
}

// shippedAdapters lists the shipped adapter manifests, or those named.
func shippedAdapters(names []string) ([]*locks.Manifest, error) {
	if errs := locks.ShippedErrors(); len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	var out []*locks.Manifest
	if len(names) == 0 {
		for _, s := range locks.All() {
			if s.Adapter != nil {
				out = append(out, s.Adapter)
			}
		}
		return out, nil
	}
	for _, n := range names {
		m, err := adapterManifest(n)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// adapterBuild builds the shipped adapters (locks.Build): those whose
// toolchain is missing are skipped, and said so.
func adapterBuild(w io.Writer, names []string, force bool) int {
	ms, err := shippedAdapters(names)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos adapter build:", err)
		return ExitUsage
	}
	var build []*locks.Manifest
	skipped := 0
	for _, m := range ms {
		if why := m.MissingTools(); why != "" {
			fmt.Fprintf(w, "SKIPPED %s: %s — its rows will not run\n", m.Name, why)
			skipped++
			continue
		}
		if len(m.Build) == 0 {
			fmt.Fprintf(w, "ok      %s: nothing to build\n", m.Name)
			continue
		}
		build = append(build, m)
	}
	failed, err := locks.Build(w, w, os.Stderr, build, force)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos adapter build:", err)
		return ExitSetup
	}
	if skipped > 0 {
		fmt.Fprintf(w, "%d adapter(s) skipped: install their toolchains (see adapters/README.md)\n", skipped)
	}
	if failed > 0 {
		return 1
	}
	return 0
}

// adapterInit is `lockchaos adapter init --lang LANG [--name NAME] DIR`.
func adapterInit(w io.Writer, args []string) int {
	fs := flag.NewFlagSet("adapter init", flag.ContinueOnError)
	lang := fs.String("lang", "", "the adapter's language: "+strings.Join(adapterinit.Languages(), ", "))
	name := fs.String("name", "", "the lock's name in its lock.yaml (default: DIR's name)")
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if err == nil && (*lang == "" || fs.NArg() != 1) {
		err = errors.New("want --lang LANG and one folder")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "lockchaos adapter init: %v\n\n%s", err, adapterUsage)
		return ExitUsage
	}
	dir := fs.Arg(0)
	if *name == "" {
		abs, _ := filepath.Abs(dir)
		*name = filepath.Base(abs)
	}
	files, err := adapterinit.Write(*lang, dir, *name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "lockchaos adapter init:", err)
		return ExitUsage
	}
	fmt.Fprintf(w, "wrote %s adapter %s in %s: %s\n", *lang, *name, dir, strings.Join(files, ", "))
	fmt.Fprintf(w, "next: lockchaos adapter check %s (builds it first), then put your lock library's calls where the comments say\n", filepath.Join(dir, "lock.yaml"))
	return 0
}
