package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/suggest"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/scenarios"
)

const listUsage = `Usage: lockchaos list [--markdown|--schema] [locks|nemeses|stores|scenarios|NAME]
       lockchaos list --packages|--services [--missing]

Says what this build has. Without an argument: every lock (by store),
nemesis, store and built-in scenario by name, on one screen.
  list locks       one line for each lock: its store, language, what it is
  list nemeses     one line for each nemesis
  list stores      one line for each store
  list scenarios   one line for each built-in scenario: what it shows
  list NAME        a lock's or a nemesis's description and options, with
                   their defaults (--opt NAME.KEY=VALUE sets one), or a
                   built-in scenario's file
--markdown writes the reference of every option (docs/OPTIONS.md), --schema
the JSON Schema of a scenario file (docs/scenario.schema.json).
--packages writes the Debian packages of every store's servers on one line,
for apt-get install (make setup, .ci/run and the CI templates install
these); --services the services those packages start, which lockchaos does
not need (it starts its own servers); --missing: of the stores not
installed on this machine only.
`

func cmdList(args []string) int {
	fs := newFlags("list")
	markdown := fs.Bool("markdown", false, "write the reference as Markdown (docs/OPTIONS.md is this output)")
	schema := fs.Bool("schema", false, "write the JSON Schema of a scenario file (docs/scenario.schema.json is this output)")
	packages := fs.Bool("packages", false, "write the Debian packages of every store's servers, on one line")
	services := fs.Bool("services", false, "write the services the stores' packages start, on one line")
	missing := fs.Bool("missing", false, "with --packages or --services: of the stores not installed here only")
	if code, ok := parse(fs, listUsage, args); !ok {
		return code
	}
	if *packages || *services {
		var out []string
		for _, name := range cluster.StoreNames() {
			st, _ := cluster.LookupStore(name)
			if *missing && st.Missing() == nil {
				continue
			}
			if *packages {
				out = append(out, st.Packages...)
			} else {
				out = append(out, st.Services...)
			}
		}
		fmt.Println(strings.Join(out, " "))
		return 0
	}
	if *schema {
		b, err := scenarios.Schema()
		if err != nil {
			fmt.Fprintln(os.Stderr, "lockchaos list:", err)
			return ExitSetup
		}
		fmt.Printf("%s\n", b)
		return 0
	}
	if *markdown {
		if fs.NArg() > 0 {
			fmt.Fprintf(os.Stderr, "lockchaos list: --markdown takes no argument (got %q)\n", fs.Arg(0))
			return ExitUsage
		}
		return listMarkdown(os.Stdout)
	}
	w := os.Stdout
	switch {
	case fs.NArg() == 0:
		listShort(w)
	case fs.NArg() > 1:
		fmt.Fprintf(os.Stderr, "lockchaos list: one argument at most (got %q)\n", strings.Join(fs.Args(), " "))
		return ExitUsage
	default:
		return listOne(w, fs.Arg(0))
	}
	return 0
}

// listShort is every name on one screen, wrapped.
func listShort(w io.Writer) {
	all := locks.All()
	fmt.Fprintf(w, "Locks (%d, by store; --lock NAME; lockchaos list locks: one line each, list NAME: its options; list stores):\n", len(all))
	pending := "" // a line of stores with few locks, not yet written
	for _, store := range cluster.StoreNames() {
		var names []string
		for _, s := range all {
			if s.Store == store {
				names = append(names, s.Name)
			}
		}
		if len(names) == 0 {
			names = []string{"(no lock yet)"}
		}
		// A store whose locks fit one line shares it with the next such.
		lead, short := fmt.Sprintf("  %-10s ", store+":"), store+": "+strings.Join(names, " ")
		switch {
		case len(lead)+len(short) > 120:
			if pending != "" {
				fmt.Fprintln(w, pending)
				pending = ""
			}
			wrap(w, lead, names)
		case pending != "" && len(pending)+3+len(short) <= 120:
			pending += "   " + short
		default:
			if pending != "" {
				fmt.Fprintln(w, pending)
			}
			pending = lead + strings.Join(names, " ")
		}
	}
	if pending != "" {
		fmt.Fprintln(w, pending)
	}
	ns := append([]string{"none"}, nemesis.Names()...)
	fmt.Fprintf(w, "Nemeses (%d; --nemesis NAME[,NAME...]; lockchaos list nemeses):\n", len(ns)-1)
	wrap(w, "  ", ns)
	sc := scenarios.CatalogueNames()
	fmt.Fprintf(w, "Built-in scenarios (%d; --scenario NAME; lockchaos list scenarios: what each shows):\n", len(sc))
	wrap(w, "  ", sc)
	for _, e := range locks.ShippedErrors() {
		fmt.Fprintf(w, "\n(an adapter could not be read: %s)\n", e)
	}
}

// wrap writes names after lead, as many to a line as fit 120 columns, the
// lines after the first indented as far as lead.
func wrap(w io.Writer, lead string, names []string) {
	line := lead
	for i, n := range names {
		if i > 0 && len(line)+1+len(n) > 120 {
			fmt.Fprintln(w, strings.TrimRight(line, " "))
			line = strings.Repeat(" ", len(lead))
		} else if i > 0 {
			line += " "
		}
		line += n
	}
	fmt.Fprintln(w, line)
}

// listArgs is every argument list takes: a kind, or a name.
func listArgs() []string {
	all := append([]string{"locks", "nemeses", "stores", "scenarios"}, locks.Names()...)
	return append(append(append(all, nemesis.Names()...), cluster.StoreNames()...), scenarios.CatalogueNames()...)
}

// listOne is list's argument: a kind (one line for each of it) or a name.
func listOne(w io.Writer, arg string) int {
	switch arg {
	case "locks", "lock":
		for _, s := range locks.All() {
			fmt.Fprintf(w, "%-24s %-10s %s%s\n", s.Name, s.Store, s.Description, adapterNote(s))
		}
		return 0
	case "nemeses", "nemesis":
		fmt.Fprintf(w, "%-16s %s\n", "none", "no faults")
		for _, s := range nemesis.All() {
			fmt.Fprintf(w, "%-16s %s\n", s.Name, s.Description)
		}
		return 0
	case "stores", "store":
		for _, name := range cluster.StoreNames() {
			st, _ := cluster.LookupStore(name)
			fmt.Fprintf(w, "%-10s %s\n", st.Name, st.Description)
		}
		return 0
	case "scenarios", "scenario":
		cat, err := scenarios.Catalogue()
		if err != nil {
			fmt.Fprintln(os.Stderr, "lockchaos list:", err)
			return ExitSetup
		}
		for _, s := range cat {
			fmt.Fprintf(w, "%-48s %s\n", s.Name, s.Shows)
		}
		return 0
	}
	if s, err := locks.Lookup(arg); err == nil {
		fmt.Fprintf(w, "lock %s: %s\n  store: %s, nodes: %d%s\n", s.Name, s.Description, s.Store, s.Nodes, adapterNote(s))
		if s.Library != "" {
			fmt.Fprintf(w, "  runs: %s\n", s.Library)
		}
		if s.Weakness != "" {
			fmt.Fprintf(w, "  known weakness: %s\n", s.Weakness)
		}
		listOptions(w, s.Name, s.OptionSpecs())
		return 0
	}
	if s, err := nemesis.Lookup(arg); err == nil {
		fmt.Fprintf(w, "nemesis %s: %s\n", s.Name, s.Description)
		listOptions(w, s.Name, s.OptionSpecs())
		return 0
	}
	if st, err := cluster.LookupStore(arg); err == nil {
		fmt.Fprintf(w, "store %s: %s\n  install: %s\n", st.Name, st.Description, st.Install())
		return 0
	}
	if data, err := scenarios.File(arg); err == nil {
		fmt.Fprintf(w, "# built-in scenario %s (%s run --scenario %s)\n%s", arg, rundir.Program(), arg, data)
		return 0
	}
	fmt.Fprintf(os.Stderr, "lockchaos list: no lock, nemesis, store or built-in scenario is called %q%s\n", arg, suggest.Hint(arg, listArgs(), "%s"))
	return ExitUsage
}
