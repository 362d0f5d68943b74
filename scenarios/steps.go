package scenarios

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/locks"
	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/settings"
	"github.com/lockchaos/lockchaos/workload"
)

// fileStep is one recorded step of a nemesis in a scenario file
// (faults.nemeses[i].steps), the fields of schedule.json's steps: the quiet
// time before it (gap, read by option.ParseSpan) and its target choices. A
// scenario whose nemeses list their steps takes exactly those steps, as
// `lockchaos run --replay` does (settings.Run.Replay), instead of drawing
// its own: that is how `lockchaos shrink` writes a minimal counterexample.
type fileStep struct {
	Gap    Duration `yaml:"gap"`
	Client int      `yaml:"client"`
	Key    string   `yaml:"key"`
	Node   int      `yaml:"node"`
	Seed   uint64   `yaml:"seed"`
}

// replay returns the steps the file's nemeses list, as the schedule the
// run takes (nil when none lists any), and reports through bad each step
// whose target is not in the run. When one nemesis lists its steps, every
// one must: a run cannot take some nemeses' steps and draw the others'.
func (f fileScenario) replay(cfg settings.Run, bad func(field, msg string)) *nemesis.Timetable {
	listed := slices.ContainsFunc(f.Faults.Nemeses, func(n fileNemesis) bool { return n.Steps != nil })
	if !listed {
		return nil
	}
	s := &nemesis.Timetable{Nemeses: []nemesis.Executions{}}
	for i, n := range f.Faults.Nemeses {
		name := strings.TrimSpace(n.Name)
		if !slices.Contains(cfg.Nemeses, name) || slices.ContainsFunc(s.Nemeses, func(x nemesis.Executions) bool { return x.Name == name }) {
			continue // a missing or repeated name, reported already
		}
		field := fmt.Sprintf("faults.nemeses[%d]", i)
		if n.Steps == nil {
			bad(field, "steps: missing: another nemesis lists its steps, so every one must (steps: [] for none)")
		}
		ns := nemesis.Executions{Name: name, Plan: "steps of the scenario file", Steps: []nemesis.Executed{}}
		for j, st := range n.Steps {
			at := fmt.Sprintf("%s.steps[%d]", field, j)
			if st.Client < 0 || st.Client >= cfg.Clients {
				bad(at+".client", fmt.Sprintf("%d: the run has clients 0 to %d", st.Client, cfg.Clients-1))
			}
			if st.Node < 0 {
				bad(at+".node", fmt.Sprintf("%d: want a lock node's index, 0 or more", st.Node))
			}
			key := strings.TrimSpace(st.Key)
			if key == "" {
				key = workload.KeyName(0)
			}
			if !isKey(key, cfg.Keys) {
				bad(at+".key", fmt.Sprintf("%q: the run's keys are %s to %s", st.Key, workload.KeyName(0), workload.KeyName(cfg.Keys-1)))
			}
			ns.Steps = append(ns.Steps, nemesis.Executed{Step: nemesis.Step{Nemesis: name, N: j + 1, Gap: st.Gap.resolve(cfg.TTL),
				Client: st.Client, Key: key, Node: st.Node, Seed: st.Seed}})
		}
		s.Nemeses = append(s.Nemeses, ns)
	}
	return s
}

// isKey says whether key names one of the run's keys.
func isKey(key string, keys int) bool {
	for k := 0; k < keys; k++ {
		if workload.KeyName(k) == key {
			return true
		}
	}
	return false
}

// Written is a run to write as a scenario file (Render).
type Written struct {
	// Shows and Source are the file's one-line description and where the
	// run comes from.
	Shows, Source string
	// Expect is the verdict the run must reach.
	Expect checker.Verdict
	// Comment heads the file, one # line per line; "" for none.
	Comment string
	// Config is the run; its Replay, when set, becomes each nemesis's
	// steps.
	Config settings.Run
}

// Render writes w as a scenario file that `lockchaos run --scenario`
// reads back into the same run: the settings that differ from their
// defaults, every lock and nemesis option, and the fault schedule as the
// nemeses' steps. It parses what it wrote before returning it, so a file
// it returns loads.
func Render(w Written) ([]byte, error) {
	cfg := w.Config
	var b bytes.Buffer
	for _, l := range strings.Split(strings.TrimSpace(w.Comment), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			b.WriteString("# " + l + "\n")
		}
	}
	fmt.Fprintf(&b, "shows: %s\nsource: %s\nexpect:\n  verdict: %s\n", yamlString(oneLine(w.Shows)), yamlString(oneLine(w.Source)), w.Expect)
	var topo []string
	if spec, err := locks.Lookup(cfg.Lock); cfg.Nodes != 0 && (err != nil || cfg.Nodes != spec.Nodes) {
		topo = append(topo, fmt.Sprintf("nodes: %d", cfg.Nodes))
	}
	if cfg.Replicas != 0 {
		topo = append(topo, fmt.Sprintf("replicas: %d", cfg.Replicas))
	}
	if cfg.Sentinels != 0 {
		topo = append(topo, fmt.Sprintf("sentinels: %d", cfg.Sentinels))
	}
	if cfg.Persistence != "" && cfg.Persistence != "none" {
		topo = append(topo, "persistence: "+yamlString(cfg.Persistence))
	}
	if cfg.Backend != "" && cfg.Backend != "local" {
		topo = append(topo, "backend: "+yamlString(cfg.Backend))
	}
	if cfg.Image != "" {
		topo = append(topo, "image: "+yamlString(cfg.Image))
	}
	section(&b, "topology", topo)
	fmt.Fprintf(&b, "lock:\n  name: %s\n", yamlString(cfg.Lock))
	options(&b, "  ", cfg.LockOptions)
	work := []string{
		fmt.Sprintf("clients: %d", cfg.Clients), fmt.Sprintf("keys: %d", cfg.Keys),
		"ttl: " + span(cfg.TTL), "hold: " + span(cfg.Hold), "think: " + span(cfg.Think),
	}
	if cfg.Wait != 0 {
		work = append(work, "wait: "+span(cfg.Wait))
	}
	if cfg.Retry != 0 && cfg.Retry != max(cfg.TTL/10, time.Millisecond) {
		work = append(work, "retry: "+span(cfg.Retry))
	}
	if cfg.OpTimeout != 0 && cfg.OpTimeout != cfg.TTL {
		work = append(work, "op-timeout: "+span(cfg.OpTimeout))
	}
	if cfg.Reentry != 0 {
		work = append(work, "reentry: "+strconv.FormatFloat(cfg.Reentry, 'g', -1, 64))
	}
	if cfg.Renew {
		work = append(work, "renew: true")
	}
	section(&b, "workload", work)
	var nems []string
	for _, n := range cfg.Nemeses {
		if n != "" && n != "none" {
			nems = append(nems, n)
		}
	}
	if len(nems) > 0 {
		b.WriteString("faults:\n")
		if cfg.FaultInterval != 0 && cfg.FaultInterval != 2*cfg.TTL {
			b.WriteString("  interval: " + span(cfg.FaultInterval) + "\n")
		}
		b.WriteString("  nemeses:\n")
		for _, n := range nems {
			fmt.Fprintf(&b, "    - name: %s\n", yamlString(n))
			options(&b, "      ", cfg.NemesisOptions[n])
			if cfg.Replay == nil {
				continue
			}
			steps, _ := cfg.Replay.Steps(n)
			if len(steps) == 0 {
				b.WriteString("      steps: []\n")
				continue
			}
			b.WriteString("      steps:\n")
			for _, s := range steps {
				fmt.Fprintf(&b, "        - {gap: %s, client: %d, key: %s, node: %d, seed: %d}\n", span(s.Gap), s.Client, strconv.Quote(s.Key), s.Node, s.Seed)
			}
		}
	}
	fmt.Fprintf(&b, "duration: %s\nquick: %s\nseed: %d\n", span(cfg.Duration), span(cfg.Duration), cfg.Seed)
	if _, err := Parse("(rendered scenario)", b.Bytes()); err != nil {
		return nil, fmt.Errorf("the scenario written does not load: %w", err)
	}
	return b.Bytes(), nil
}

func section(b *bytes.Buffer, name string, lines []string) {
	if len(lines) == 0 {
		return
	}
	b.WriteString(name + ":\n")
	for _, l := range lines {
		b.WriteString("  " + l + "\n")
	}
}

func options(b *bytes.Buffer, indent string, opts map[string]string) {
	if len(opts) == 0 {
		return
	}
	b.WriteString(indent + "options:\n")
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(b, "%s  %s: %s\n", indent, yamlString(k), yamlString(opts[k]))
	}
}

// span writes a duration as option.ParseSpan reads it, to the microsecond.
func span(d time.Duration) string { return d.Round(time.Microsecond).String() }

var plain = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.=,+/-]*$`)

// yamlString is s as a YAML scalar that reads back as the string s: plain
// when it is a simple word that YAML reads as that string (300ms, at=1s;
// not 2, true or 0.05), else double-quoted (Go's escapes are YAML's).
func yamlString(s string) string {
	var v any
	if plain.MatchString(s) && yaml.Unmarshal([]byte(s), &v) == nil && v == s {
		return s
	}
	return strconv.Quote(s)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
