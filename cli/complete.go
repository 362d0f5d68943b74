package cli

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/lockchaos/lockchaos/cluster"
	"github.com/lockchaos/lockchaos/internal/suggest"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/scenarios"
)

const completionUsage = `Usage: lockchaos completion bash|zsh|fish

Prints a script that completes lockchaos's commands, flags, and the names
of locks, nemeses, stores and built-in scenarios in that shell. Load it:
  bash:  source <(lockchaos completion bash)      (or into ~/.bashrc)
  zsh:   source <(lockchaos completion zsh)       (or into ~/.zshrc)
  fish:  lockchaos completion fish | source       (or into ~/.config/fish/completions/lockchaos.fish)
The script asks the binary itself (lockchaos __complete WORDS…), so it
knows the locks and options of the build in hand, adapters included.
`

func cmdCompletion(args []string) int {
	fs := newFlags("completion")
	if code, ok := parse(fs, completionUsage, args); !ok {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprint(os.Stderr, "lockchaos completion: name a shell: bash, zsh or fish\n")
		return ExitUsage
	}
	switch fs.Arg(0) {
	case "bash":
		fmt.Print(bashCompletion)
	case "zsh":
		fmt.Print("autoload -U +X bashcompinit && bashcompinit\n" + bashCompletion)
	case "fish":
		fmt.Print(fishCompletion)
	default:
		fmt.Fprintf(os.Stderr, "lockchaos completion: no completion for %q%s: bash, zsh or fish\n", fs.Arg(0), suggest.Hint(fs.Arg(0), []string{"bash", "zsh", "fish"}, "%s"))
		return ExitUsage
	}
	return 0
}

// bashCompletion completes through the binary that is being completed
// (COMP_WORDS[0]: lockchaos, or bin/lockchaos); a word it has nothing for
// falls back to file names (-o default).
const bashCompletion = `_lockchaos() {
  local IFS=$'\n'
  COMPREPLY=($("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:$COMP_CWORD}" 2>/dev/null))
}
complete -o default -o nospace -F _lockchaos lockchaos bin/lockchaos ./bin/lockchaos
`

// fishCompletion: fish adds the space after a finished word itself, so
// the candidates' own trailing space is trimmed.
const fishCompletion = `function __lockchaos_complete
  set -l words (commandline -opc)
  $words[1] __complete $words[2..-1] (commandline -ct) 2>/dev/null | string trim -r
end
complete -c lockchaos -f -a '(__lockchaos_complete)'
`

// cmdComplete answers the completion scripts: the words after the program
// name, the last one the word being completed (maybe empty); it prints
// one candidate per line. A candidate that needs more (a flag that takes
// a value, an option's KEY=) ends without a space; the others end with one.
func cmdComplete(words []string) int {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, before := words[len(words)-1], words[:len(words)-1]
	for _, c := range completions(before, cur) {
		fmt.Println(c)
	}
	return 0
}

func completions(before []string, cur string) []string {
	if len(before) == 0 {
		var cmds []string
		for _, c := range commandNames() {
			cmds = append(cmds, c+" ")
		}
		return withPrefix(cmds, cur)
	}
	cmd := before[0]
	prev := ""
	if len(before) > 1 {
		prev = before[len(before)-1]
	}
	flagBefore := ""
	if strings.HasPrefix(prev, "-") {
		flagBefore = strings.TrimLeft(prev, "-")
	}
	// The value of the flag just before.
	switch flagBefore {
	case "lock":
		return withPrefix(spaced(locks.Names()), cur)
	case "nemesis", "nemeses", "claims":
		return commaList(append([]string{"none"}, nemesis.Names()...), cur)
	case "locks", "refs":
		return commaList(locks.Names(), cur)
	case "scenario":
		return withPrefix(spaced(scenarios.CatalogueNames()), cur)
	case "opt":
		return optionKeys(cur)
	case "backend":
		return withPrefix(spaced(cluster.BackendNames()), cur)
	}
	if fs := flagsOf(cmd); fs != nil {
		if f := fs.Lookup(flagBefore); f != nil && !isBool(f) {
			return nil // a value the shell completes as a file, or not at all
		}
		if strings.HasPrefix(cur, "-") {
			var names []string
			fs.VisitAll(func(f *flag.Flag) { names = append(names, "--"+f.Name+" ") })
			return withPrefix(names, cur)
		}
	}
	switch cmd {
	case "list":
		return withPrefix(spaced(listArgs()), cur)
	case "help":
		return withPrefix(spaced(commandNames()), cur)
	case "completion":
		return withPrefix([]string{"bash ", "zsh ", "fish "}, cur)
	case "adapter":
		if len(before) == 1 {
			return withPrefix([]string{"check ", "build "}, cur)
		}
		var adapters []string
		for _, s := range locks.All() {
			if s.Adapter != nil {
				adapters = append(adapters, s.Name+" ")
			}
		}
		return withPrefix(adapters, cur)
	}
	return nil
}

// optionKeys completes --opt NAME.KEY=: the locks and nemeses first, then
// their options.
func optionKeys(cur string) []string {
	name, _, dotted := strings.Cut(cur, ".")
	if !dotted {
		var owners []string
		for _, n := range locks.Names() {
			owners = append(owners, n+".")
		}
		for _, n := range nemesis.Names() {
			owners = append(owners, n+".")
		}
		return withPrefix(owners, cur)
	}
	var keys []string
	if s, err := locks.Lookup(name); err == nil {
		for _, o := range s.OptionSpecs() {
			keys = append(keys, name+"."+o.Key+"=")
		}
	} else if s, err := nemesis.Lookup(name); err == nil {
		for _, o := range s.OptionSpecs() {
			keys = append(keys, name+"."+o.Key+"=")
		}
	}
	return withPrefix(keys, cur)
}

// commaList completes the last name of a comma-separated list.
func commaList(names []string, cur string) []string {
	done, last := "", cur
	if i := strings.LastIndexByte(cur, ','); i >= 0 {
		done, last = cur[:i+1], cur[i+1:]
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, last) && !strings.Contains(","+done, ","+n+",") {
			out = append(out, done+n)
		}
	}
	return out
}

func withPrefix(cands []string, cur string) []string {
	var out []string
	for _, c := range cands {
		if strings.HasPrefix(c, cur) {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

func spaced(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = n + " "
	}
	return out
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// flagsOf is the flag set of command cmd, got by running it in the mode
// where parse hands its flag set over instead of parsing (completing).
func flagsOf(cmd string) *flag.FlagSet {
	run, ok := commands[cmd]
	if !ok {
		return nil
	}
	completing = true
	defer func() { completing, completed = false, nil }()
	stdout, stderr := os.Stdout, os.Stderr
	null, err := os.Open(os.DevNull)
	if err == nil {
		os.Stdout, os.Stderr = null, null
		defer func() { os.Stdout, os.Stderr = stdout, stderr; null.Close() }()
	}
	run(nil)
	return completed
}
