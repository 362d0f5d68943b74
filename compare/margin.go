package compare

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockchaos/lockchaos/nemesis"
	"github.com/lockchaos/lockchaos/option"
	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/scenarios"
)

// A margin is how large a fault must be to break a lock: for one lock and
// one fault, the smallest size of the fault (a pause's length, a reply's
// delay, a clock's step) that broke it and the largest it survived, found
// by bisection. Each size probed is a cell of a comparison (the fault with
// its size option set on top of the grid's), run for up to Seeds seeds and
// stopped at its first violation:
//
//   - breaks: a seed violated (a real overlap that a landed fault caused:
//     the checker's verdict, as in compare);
//   - survives: every seed was safe with its fault landed — evidence, not
//     an absence of it;
//   - no evidence: no seed violated, but some stayed no evidence after
//     their attempts — at that size the fault did not land (a pause that
//     ended before the lease did cannot take it) or took a lease no other
//     client came for. Not broken there, and not shown to survive;
//   - unknown: a run failed, or the search was interrupted: the search
//     stops there rather than guess.
//
// The answer is the smallest size that broke the lock and the largest below
// it that did not, with its verdict (survives or no evidence). Bisection
// assumes a larger fault breaks the lock at least as often as a smaller one
// within the range searched; the probes are all kept, so a reader can see
// where that did not hold.

// Probe verdicts.
const (
	Breaks     = "breaks"
	Survives   = "survives"
	NoEvidence = "no evidence"
	Unknown    = "unknown"
)

// MarginSpec is a margin search as asked: saved in margin.json.
type MarginSpec struct {
	// Spec gives the locks, the faults (each a nemesis, with options or
	// not), the seeds per probe and the workload overrides; EarlyStop is
	// on and MinSeeds 1: a probe ends at its first violation.
	Spec
	// Vary is the option the search sets (default: the nemesis's size
	// option, declared with a margin tag); From and To bound it ("" for
	// that tag's range).
	Vary string `json:"vary,omitempty"`
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// Steps is how many bisection steps follow the two ends.
	Steps int `json:"steps"`
}

// Probe is one size of the fault, run as a comparison's cell.
type Probe struct {
	// Value is the option's value as written (1.25ttl, 300ms, 4), X the
	// number it stands for on the search's scale.
	Value   string  `json:"value"`
	X       float64 `json:"x"`
	Verdict string  `json:"verdict"`
	Row     Row     `json:"row"`
}

// Margin is the search's answer for one lock and one fault.
type Margin struct {
	Lock    string `json:"lock"`
	Nemesis string `json:"nemesis"`
	// Options are the fault's other options as its cells ran (the grid's
	// for this lock and fault, and the column's), the size left out.
	Options map[string]string `json:"options,omitempty"`
	Option  string            `json:"option"`
	From    string            `json:"from"`
	To      string            `json:"to"`
	// Breaks is the smallest size that broke the lock, Unbroken the
	// largest below it that did not (its verdict: survives or no
	// evidence); nil when there is none in the range.
	Unbroken *Probe `json:"unbroken"`
	Breaks   *Probe `json:"breaks"`
	// Probes lists every size run, in the order run.
	Probes []Probe `json:"probes"`
	// Skip says why the search did not run (n/a or error, as a cell's),
	// Note what stopped it early.
	Skip string `json:"skip,omitempty"`
	Why  string `json:"why,omitempty"`
	Note string `json:"note,omitempty"`
}

// Margins is what margin.json holds.
type Margins struct {
	Header
	Spec    MarginSpec `json:"spec"`
	Margins []Margin   `json:"margins"`
	// Command is the command line that repeats it.
	Command string `json:"command"`
}

// Files of a margin search's folder.
const (
	MarginJSONFile = "margin.json"
	MarginMDFile   = "margin.md"
)

// scale reads and writes the sizes of one option: multiples of the TTL,
// durations (in milliseconds) or plain numbers.
type scale struct{ unit string } // "ttl", "ms" or ""

func (s scale) parse(v string) (float64, error) {
	if s.unit == "" {
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
			return 0, fmt.Errorf("%q: want a number of at least 0", v)
		}
		return x, nil
	}
	sp, err := option.ParseSpan(v)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", v, err)
	}
	switch {
	case sp.TTL != 0 || (s.unit == "ttl" && sp.D == 0):
		if s.unit != "ttl" {
			return 0, fmt.Errorf("%q: give both ends of the range as durations, or both as multiples of the TTL", v)
		}
		return sp.TTL, nil
	case s.unit != "ms":
		return 0, fmt.Errorf("%q: give both ends of the range as multiples of the TTL, or both as durations", v)
	}
	return float64(sp.D) / float64(time.Millisecond), nil
}

// format writes x with three significant digits, as the option reads it.
func (s scale) format(x float64) string {
	v := strconv.FormatFloat(x, 'g', 3, 64)
	if strings.Contains(v, "e") {
		v = strconv.FormatFloat(math.Round(x), 'f', -1, 64)
	}
	return v + s.unit
}

// sizeOption finds the option a search of nemesis name varies (vary, or
// the one declared as its size, whose margin tag gives the range searched
// by default) and whether it is a span (else a plain number).
func sizeOption(name, vary string) (o option.Spec, span bool, err error) {
	spec, err := nemesis.Lookup(name)
	if err != nil {
		return o, false, err
	}
	var sized []string
	for _, o := range spec.OptionSpecs() {
		if o.Margin != "" {
			sized = append(sized, o.Key)
		}
		if (vary == "" && o.Margin != "") || o.Key == vary {
			if _, err := option.ParseSpan(o.Default); err == nil {
				return o, true, nil
			}
			if _, err := strconv.ParseFloat(o.Default, 64); err != nil {
				return o, false, fmt.Errorf("%s's option %s is not a size (a span or a number): margin cannot vary it", name, o.Key)
			}
			return o, false, nil
		}
	}
	if vary == "" {
		return o, false, fmt.Errorf("%s declares no size to vary: give --vary (its options: %s)", name, option.Keys(spec.OptionSpecs()))
	}
	return o, false, fmt.Errorf("%s has no option %q (its options: %s; its size: %s)", name, vary, option.Keys(spec.OptionSpecs()), strings.Join(sized, ", "))
}

// MarginOptions tune FindMargins.
type MarginOptions struct {
	Options
	// Plan lists the cells of a spec (compare.Plan with the grid); required.
	Plan func(Spec) []Cell
}

// FindMargins searches the margin of every lock against every fault of
// spec, one after the other, each probe's runs Parallel at a time, under
// opts.Out (a probe's runs: LOCK+NEMESIS.KEY=VALUE/seedN).
func FindMargins(ctx context.Context, spec MarginSpec, opts MarginOptions) Margins {
	start := time.Now()
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	spec.EarlyStop, spec.MinSeeds = true, 1
	ms := Margins{Header: header(start), Spec: spec}
	for _, l := range spec.Locks {
		for _, n := range spec.Nemeses {
			if ctx.Err() != nil {
				break
			}
			m := findMargin(ctx, spec, l, n, opts, progress)
			fmt.Fprintf(progress, "margin %s × %s: %s\n", l, n, m.Says())
			ms.Margins = append(ms.Margins, m)
		}
	}
	ms.done(ctx, start)
	return ms
}

// ParseRange checks what a search of nemesis column n would vary, between
// which sizes: the user's errors, before anything runs.
func (s MarginSpec) ParseRange(column string) (key string, sc scale, lo, hi float64, err error) {
	f, err := scenarios.ParseFault(column)
	if err != nil {
		return "", sc, 0, 0, err
	}
	o, span, err := sizeOption(f.Nemesis, s.Vary)
	if err != nil {
		return "", sc, 0, 0, err
	}
	if _, set := f.Options[o.Key]; set {
		return "", sc, 0, 0, fmt.Errorf("%s sets %s, the option the search varies: leave it out", column, o.Key)
	}
	from, to, _ := strings.Cut(o.Margin, "..")
	from, to = orString(s.From, from), orString(s.To, to)
	if from == "" || to == "" {
		return "", sc, 0, 0, fmt.Errorf("%s's option %s has no default range: give --from and --to", f.Nemesis, o.Key)
	}
	if span {
		sc.unit = "ms"
		if strings.HasSuffix(strings.TrimSpace(from), "ttl") {
			sc.unit = "ttl"
		}
	}
	if lo, err = sc.parse(from); err == nil {
		hi, err = sc.parse(to)
	}
	if err == nil && lo >= hi {
		err = fmt.Errorf("--from %s is not below --to %s", from, to)
	}
	return o.Key, sc, lo, hi, err
}

func findMargin(ctx context.Context, spec MarginSpec, lock, column string, opts MarginOptions, progress io.Writer) Margin {
	m := Margin{Lock: lock, Nemesis: column}
	key, sc, lo, hi, err := spec.ParseRange(column)
	m.Option = key
	if err != nil {
		m.Skip, m.Why = SkipError, err.Error()
		return m
	}
	m.From, m.To = sc.format(lo), sc.format(hi)
	probe := func(x float64) (Probe, bool) {
		v := sc.format(x)
		x, _ = sc.parse(v) // the size run is the one written
		col := column + ":" + key + "=" + v
		if strings.Contains(column, ":") {
			col = column + "," + key + "=" + v
		}
		one := spec.Spec
		one.Locks, one.Nemeses = []string{lock}, []string{col}
		cells := opts.Plan(one)
		if len(cells) != 1 || cells[0].Skip != "" {
			if len(cells) == 1 {
				m.Skip, m.Why = cells[0].Skip, cells[0].Why
			}
			return Probe{}, false
		}
		if m.Options == nil {
			name, _, _ := strings.Cut(column, ":")
			m.Options = map[string]string{}
			for k, val := range cells[0].Config.NemesisOptions[name] {
				if k != key {
					m.Options[k] = val
				}
			}
		}
		fmt.Fprintf(progress, "margin %s × %s: %s=%s, up to %d seeds\n", lock, column, key, v, one.Seeds)
		cmp := Execute(ctx, one, cells, opts.Options)
		p := Probe{Value: v, X: x, Row: cmp.Rows[0]}
		p.Verdict = verdictOf(p.Row, cmp.Interrupted)
		m.Probes = append(m.Probes, p)
		if cmp.Interrupted {
			m.Note = "interrupted at " + v
		}
		return p, !cmp.Interrupted
	}
	// The far end first: a lock it does not break needs no more runs.
	top, ok := probe(hi)
	switch {
	case !ok:
		return m
	case top.Verdict == Unknown:
		m.Note = "a run at the largest size failed: " + firstWhy(top.Row)
		return m
	case top.Verdict != Breaks:
		m.Unbroken = &m.Probes[0]
		return m
	}
	bottom, ok := probe(lo)
	switch {
	case !ok:
		return m
	case bottom.Verdict == Breaks:
		m.Breaks = &m.Probes[1]
		return m
	case bottom.Verdict == Unknown:
		m.Breaks = &m.Probes[0]
		m.Note = "a run at the smallest size failed: " + firstWhy(bottom.Row)
		return m
	}
	good, bad := 1, 0 // indexes into m.Probes
	for range spec.Steps {
		mid := (m.Probes[good].X + m.Probes[bad].X) / 2
		if v := sc.format(mid); v == m.Probes[good].Value || v == m.Probes[bad].Value {
			break // as fine as the sizes are written
		}
		p, ok := probe(mid)
		if !ok {
			break
		}
		if p.Verdict == Unknown {
			m.Note = "stopped at " + p.Value + ", where a run failed: " + firstWhy(p.Row)
			break
		}
		if p.Verdict == Breaks {
			bad = len(m.Probes) - 1
		} else {
			good = len(m.Probes) - 1
		}
	}
	m.Unbroken, m.Breaks = &m.Probes[good], &m.Probes[bad]
	return m
}

// Settle sets Breaks and Unbroken from the probes as they are judged: the
// smallest size that broke the lock, and the largest below it that was
// survived or no evidence. What findMargin's bisection ends with; Settle
// gives the same from a margin whose probes were judged again.
func (m *Margin) Settle() {
	m.Breaks, m.Unbroken = nil, nil
	for i := range m.Probes {
		if p := &m.Probes[i]; p.Verdict == Breaks && (m.Breaks == nil || p.X < m.Breaks.X) {
			m.Breaks = p
		}
	}
	for i := range m.Probes {
		p := &m.Probes[i]
		if (p.Verdict == Survives || p.Verdict == NoEvidence) && (m.Breaks == nil || p.X < m.Breaks.X) && (m.Unbroken == nil || p.X > m.Unbroken.X) {
			m.Unbroken = p
		}
	}
}

// verdictOf reads a probe's cell. Only a violation that a landed fault
// caused breaks the lock at that size: an overlap the fault made without
// landing by its own measure (a pause its nemesis saw end before the
// lease) is no evidence of the size, as in the matrix.
func verdictOf(r Row, interrupted bool) string {
	for _, x := range r.Runs {
		if x.Outcome == OutcomeError {
			return Unknown
		}
	}
	switch {
	case faultViolations(r) > 0:
		return Breaks
	case interrupted:
		return Unknown
	case r.Safe == r.SeedsPlanned:
		return Survives
	}
	return NoEvidence
}

// faultViolations counts a cell's seeds that violated by a landed fault's
// doing.
func faultViolations(r Row) int {
	n := 0
	for _, x := range r.Runs {
		if x.Outcome == OutcomeViolation && x.FaultOverlaps > 0 {
			n++
		}
	}
	return n
}

// firstWhy is why the first of a cell's runs that was not evidence was not.
func firstWhy(r Row) string {
	for _, x := range r.Runs {
		if x.Why != "" {
			return x.Why
		}
	}
	return r.Why
}

// Fault is the nemesis with the other options its cells ran with:
// "pause-client (phase=wait)".
func (m Margin) Fault() string {
	name, _, _ := strings.Cut(m.Nemesis, ":")
	if len(m.Options) == 0 {
		return name
	}
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(m.Options)) {
		kv = append(kv, k+"="+m.Options[k])
	}
	return name + " (" + strings.Join(kv, ", ") + ")"
}

// Says is the margin in one line.
func (m Margin) Says() string {
	var parts []string
	switch {
	case m.Skip != "":
		return m.Skip + ": " + m.Why
	case m.Breaks == nil && m.Unbroken == nil:
		return "no answer: " + m.Note
	case m.Breaks == nil:
		parts = append(parts, fmt.Sprintf("not broken up to %s=%s, the largest size searched (%s: %s)", m.Option, m.Unbroken.Value, m.Unbroken.Verdict, m.Unbroken.Seeds()))
	case m.Unbroken == nil:
		parts = append(parts, fmt.Sprintf("breaks at %s=%s, the smallest size searched (%s)", m.Option, m.Breaks.Value, m.Breaks.Seeds()))
	default:
		parts = append(parts, fmt.Sprintf("breaks at %s=%s (%s); not at %s (%s: %s)", m.Option, m.Breaks.Value, m.Breaks.Seeds(), m.Unbroken.Value, m.Unbroken.Verdict, m.Unbroken.Seeds()))
	}
	if m.Note != "" {
		parts = append(parts, m.Note)
	}
	return strings.Join(parts, "; ")
}

// Seeds says what the probe's seeds showed: "0 of 3 seeds violated, rate
// ≤ 56 % at 95 %", "1 of 1 seeds violated", "3 seeds, each no evidence".
func (p Probe) Seeds() string {
	r := p.Row
	n := r.Violations + r.Safe
	if n == 0 {
		return fmt.Sprintf("%d seeds, each no evidence", r.Inconclusive)
	}
	s := fmt.Sprintf("%d of %d seeds violated", r.Violations, n)
	if other := r.Violations - faultViolations(r); other > 0 {
		s += fmt.Sprintf(" (%d not by a fault that landed)", other)
	}
	if r.Inconclusive > 0 {
		s += fmt.Sprintf(", %d no evidence", r.Inconclusive)
	}
	if r.CIHigh != nil && r.Violations == 0 {
		s += fmt.Sprintf(", rate ≤ %.0f %% at 95 %%", *r.CIHigh*100)
	}
	return s
}

// WriteMargins writes margin.json and margin.md to dir.
func WriteMargins(dir string, ms Margins) error {
	if err := rundir.WriteJSON(filepath.Join(dir, MarginJSONFile), ms); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, MarginMDFile), []byte(ms.Markdown()), 0o644)
}

// Markdown is margin.md: a row per lock and fault, then every probe.
func (ms Margins) Markdown() string {
	var b strings.Builder
	title := strings.Join(ms.Spec.Locks, ", ")
	fmt.Fprintf(&b, "# Breaking margin: %s\n\n", title)
	fmt.Fprintf(&b, "How large each fault must be to break the lock: the smallest size that broke it and the largest below it that did not, by bisection over %d steps; each size runs up to %d seeds from seed %d, stopped at its first violation. A size *survives* when every seed was safe with its fault landed; *no evidence* when no seed violated but some stayed no evidence (the fault did not land at that size: a pause that ends before the lease does cannot take it). A larger fault is assumed to break at least as often as a smaller one within the range; every size run is listed below.\n\n",
		ms.Spec.Steps, ms.Spec.Seeds, ms.Spec.FirstSeed)
	fmt.Fprintf(&b, "lockchaos %s on %s, %s, %s", ms.Version, ms.Host, ms.Started, (time.Duration(ms.Seconds) * time.Second).String())
	if ms.Interrupted {
		b.WriteString(" — INTERRUPTED: the rows are what ran")
	}
	fmt.Fprintf(&b, ".\nRepeat: `%s`\n\n", ms.Command)
	b.WriteString("| lock | fault | size searched | largest not broken | smallest broken | breaking size |\n|---|---|---|---|---|---|\n")
	for _, m := range ms.Margins {
		unbroken, brk, margin := "—", "—", m.Says()
		if m.Unbroken != nil {
			unbroken = fmt.Sprintf("%s — %s (%s)", m.Unbroken.Value, m.Unbroken.Verdict, m.Unbroken.Seeds())
		}
		if m.Breaks != nil {
			brk = fmt.Sprintf("%s (%s)", m.Breaks.Value, m.Breaks.Seeds())
		}
		switch {
		case m.Skip != "":
		case m.Unbroken != nil && m.Breaks != nil:
			margin = fmt.Sprintf("in (%s, %s]", m.Unbroken.Value, m.Breaks.Value)
		case m.Breaks != nil:
			margin = "≤ " + m.Breaks.Value
		case m.Unbroken != nil:
			margin = "> " + m.Unbroken.Value
		}
		if m.Note != "" {
			margin += "; " + m.Note
		}
		fmt.Fprintf(&b, "| %s | %s | %s %s…%s | %s | %s | %s |\n", m.Lock, m.Fault(), m.Option, m.From, m.To, mdCell(unbroken), mdCell(brk), mdCell(margin))
	}
	b.WriteString("\n## Probes\n\n| lock | fault | size | verdict | seeds | TTL | runs |\n|---|---|---|---|---|---|---|\n")
	for _, m := range ms.Margins {
		for _, p := range m.Probes {
			fmt.Fprintf(&b, "| %s | %s | %s=%s | %s | %s | %.0fms | %s |\n", m.Lock, m.Fault(), m.Option, p.Value, p.Verdict, p.Seeds(), p.Row.TTLms, p.Row.Dir)
		}
	}
	return b.String()
}

func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
