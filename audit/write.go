package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"path/filepath"
	"strings"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/compare"
	"github.com/lockchaos/lockchaos/internal/words"
	"github.com/lockchaos/lockchaos/rundir"
	"github.com/lockchaos/lockchaos/scenarios"
)

// Write writes audit.json, audit.md and audit.html to dir.
func (a Audit) Write(dir string) error {
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.AuditJSONFile), a); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.AuditMarkdownFile), []byte(a.Markdown()), 0o644); err != nil {
		return err
	}
	var b bytes.Buffer
	if err := page.Execute(&b, a); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, rundir.AuditHTMLFile), b.Bytes(), 0o644)
}

func pct(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", 100**v)
}

// detection is "100% [57%, 100%]", or "–" without evidence.
func detection(v, lo, hi *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%s [%s, %s]", pct(v), pct(lo), pct(hi))
}

// verdict is a class's status with its seeds: "broken 5/5", "held 0/5".
func (c Class) verdict() string {
	switch c.Status {
	case Broken, Held:
		return fmt.Sprintf("%s %d/%d", c.Status, c.Violations, c.Violations+c.Safe)
	}
	return c.Status
}

// verdict of a reference: a fenced lock's says what its resource showed,
// since fencing keeps the data where the lock alone breaks.
func (r Ref) verdict() string {
	switch r.Status {
	case Broken, Held:
		v := fmt.Sprintf("%s %d/%d", r.Status, r.Violations, r.Violations+r.Safe)
		if r.Fenced && r.Status == Broken && r.Resource != "" {
			v += ", data " + r.Resource
		}
		return v
	}
	return r.Status
}

func ttfv(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.2f", *v)
}

// expected is the verdict expected (the catalogue's, or the claims'),
// flagged where the audit found otherwise.
func (c Class) expected() string {
	switch {
	case c.Expected == "":
		return "–"
	case c.Disagrees():
		return c.Expected + " ≠"
	}
	return c.Expected
}

// Disagrees says the audit found otherwise than the catalogue expects:
// broken where it expects safe, or held in every seed where it expects a
// violation (too few seeds, or a finding either way).
func (c Class) Disagrees() bool {
	return c.Status == Broken && c.Expected == "safe" || c.Status == Held && c.Expected == "violation"
}

// Markdown is audit.md: one table, a sentence per broken class, the
// commands that reproduce each; a page a maintainer can paste.
func (a Audit) Markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("%s\n\n", a.Verdict())
	p("# Audit of `%s`\n\n", a.Spec.Lock)
	p("%s.\n\n", strings.TrimSuffix(a.Description, "."))
	p("Store: %s. Each fault of the lockchaos grid that applies ran up to %s (from seed %d; a fault that broke the lock stops after %d), beside %s under the same fault. lockchaos %s, %s, %s.",
		a.Store, words.Count(a.Spec.Seeds, "seed", "seeds"), a.Spec.FirstSeed, a.Spec.MinSeeds, refList(a.Spec.Refs), a.Version, a.Started, duration(a.Seconds))
	p(" Every figure comes from the recorded histories; the runs are in this folder, and `index.html` draws them.\n\n")
	if a.Shard != nil {
		p("**Shard %s**: this folder holds only its share of the audit's faults and locks, and judges the claims on it; `lockchaos merge` joins the shards' folders into the whole audit.\n\n", a.Shard)
	}
	if a.Interrupted {
		p("**Interrupted**: the audit was stopped before it was done; what ran is below.\n\n")
	}
	for _, l := range a.LeftOut {
		p("**Left out**: %s.\n\n", l)
	}
	p("| fault | %s | %s | detection [95%% CI] | first overlap (TTLs) | lost updates | faults landed | granted during / outside faults | fencing |", a.Spec.Lock, a.ExpectColumn())
	for _, r := range a.Spec.Refs {
		p(" %s |", r)
	}
	p("\n|---|---|---|---|---|---|---|---|---|")
	for range a.Spec.Refs {
		p("---|")
	}
	p("\n")
	for _, c := range a.Classes {
		v := c.verdict()
		if c.Status == Broken {
			v = "**" + v + "**"
		}
		if c.Claimed {
			v += " (claimed)"
		}
		fencing := "–"
		if c.Fencing != "" {
			fencing = c.Fencing + " (" + c.FencedBy + ")"
		}
		p("| %s | %s | %s | %s | %s | %d | %d | %s / %s | %s |", c.Nemesis, v, c.expected(), detection(c.Detection, c.CILow, c.CIHigh), ttfv(c.TTFVMedianTTL),
			c.LostUpdates, c.FaultsLanded, pct(c.GrantedDuring), pct(c.GrantedOutside), fencing)
		for _, name := range a.Spec.Refs {
			cell := "–"
			for _, r := range c.Refs {
				if r.Lock == name {
					cell = r.verdict()
				}
			}
			p(" %s |", cell)
		}
		p("\n")
	}
	switch a.ExpectFrom {
	case "claims":
		p("\nClaimed: the lock is outside the lockchaos catalogue; its manifest claims to survive these faults (safe), and makes no claim of the others; ≠ marks a fault where the audit found otherwise. ")
	default:
		p("\nCatalogue expects: the verdict `make chaos` holds this lock to under the fault (scenarios/grid.yaml); ≠ marks a fault where the audit found otherwise. ")
	}
	p("Detection: seeds that violated of the seeds that were evidence, with its 95 %% Wilson interval. First overlap: the median time from the fault's start to the first moment two clients held the lock, in TTLs. Faults landed: over all seeds (a fault that missed its target says nothing). Granted: the share of acquires answered with the lock, while a fault was active and outside faults; the clients contend for few keys and most try once, so most acquires are refused because another client holds the lock: compare the two, not either with 100 %%. Fencing: whether a fenced lock's resource stayed intact under the same fault (\"saved\": fencing would have kept the data).\n\n")

	p("## What broke it\n\n")
	n := 0
	for _, c := range a.Classes {
		if c.Status != Broken {
			continue
		}
		n++
		p("- **%s** broke it in %d of %s (%s)", c.Nemesis, c.Violations, words.Count(c.Violations+c.Safe, "seed", "seeds"), detection(c.Detection, c.CILow, c.CIHigh))
		if c.TTFVMedianTTL != nil {
			p(", the first overlap a median %.2f TTLs after the fault", *c.TTFVMedianTTL)
		}
		if c.LostUpdates > 0 {
			p(", %s of the protected counter lost", words.Count(c.LostUpdates, "update", "updates"))
		}
		switch c.Fencing {
		case "saved":
			p("; fencing would have saved the data (`%s`'s resource stayed intact under the same fault)", c.FencedBy)
		case "damaged":
			p("; not even fencing kept the data (`%s`'s resource was damaged under the same fault)", c.FencedBy)
		}
		p(".")
		if w := c.Witness; w != nil {
			if w.Shrunk {
				p(" Minimal witness: %s ([what happened](%s), [its report](%s)", w.Minimal, w.Story, w.Report)
				if w.Verified != "" {
					p("; run again, it violated %s times", w.Verified)
				}
				p(").")
			}
			if w.Why != "" {
				p(" %s.", upper(strings.TrimSuffix(w.Why, ".")))
			}
			p(" Reproduce: `%s`", w.Command)
		}
		p("\n")
	}
	if n == 0 {
		p("No fault broke it in these seeds. That is evidence, not a proof: more seeds (`--seeds`) and the faults' other variants may.\n")
	}
	p("\n## What it survived\n\n")
	n = 0
	for _, c := range a.Classes {
		if c.Status != Held {
			continue
		}
		n++
		if c.Nemesis == "none" {
			p("- **no fault**: safe in %d of %s; %s of acquires granted.\n", c.Safe, words.Count(c.Seeds, "seed", "seeds"), pct(c.GrantedOutside))
			continue
		}
		p("- **%s**: safe in %d of %s, %s landed; %s of acquires granted during faults, %s outside them.\n",
			c.Nemesis, c.Safe, words.Count(c.Seeds, "seed", "seeds"), words.Count(c.FaultsLanded, "fault", "faults"), pct(c.GrantedDuring), pct(c.GrantedOutside))
	}
	if n == 0 {
		p("Nothing: every fault that ran broke it, or gave no evidence.\n")
	}
	for _, c := range a.Classes {
		if c.Disagrees() {
			p("\n**Differs from the %s**: under %s the %s %s, and the audit found it %s in %d of %s.", map[bool]string{true: "claims", false: "catalogue"}[a.ExpectFrom == "claims"], c.Nemesis,
				map[bool]string{true: "claims expect", false: "catalogue expects"}[a.ExpectFrom == "claims"], c.Expected, c.Status, map[bool]int{true: c.Violations, false: c.Safe}[c.Status == Broken], words.Count(c.Violations+c.Safe, "seed", "seeds"))
		}
	}
	var other []string
	for _, c := range a.Classes {
		switch c.Status {
		case Broken, Held:
		default:
			other = append(other, fmt.Sprintf("- **%s**: %s%s\n", c.Nemesis, c.Status, colon(firstLine(c.Why))))
		}
	}
	if len(other) > 0 {
		p("\n## Not applicable, or no evidence\n\n%s", strings.Join(other, ""))
	}
	if len(a.Spec.Claims) > 0 {
		p("\n## Claims\n\nThe lock claims to survive %s.", codeList(a.Spec.Claims))
		switch {
		case len(a.ClaimsBroken) > 0:
			p(" **Broken**: %s (the witnesses above).", codeList(a.ClaimsBroken))
		case len(a.ClaimsUnverified) > 0:
		default:
			p(" Every claim held in every seed that was evidence, at least %d of each.", ClaimSeeds)
		}
		if len(a.ClaimsUnverified) > 0 {
			p(" **Not verified** (fewer than %d seeds of evidence): %s.", ClaimSeeds, codeList(a.ClaimsUnverified))
		}
		p("\n")
	}
	p("\nRepeat (from this folder): `%s`\n", a.Command)
	return b.String()
}

// ExpectColumn is the header of the expectations' column.
func (a Audit) ExpectColumn() string {
	if a.ExpectFrom == "claims" {
		return "claimed"
	}
	return "catalogue expects"
}

// Verdict is the audit in one line: whether the lock's claims held, on
// how much evidence, or what broke or went unverified.
func (a Audit) Verdict() string {
	held := func() string {
		var parts []string
		for _, c := range a.Classes {
			if c.Claimed && c.Status == Held {
				parts = append(parts, fmt.Sprintf("%s safe in %d of %s", c.Nemesis, c.Safe, words.Count(c.Violations+c.Safe, "seed", "seeds")))
			}
		}
		return strings.Join(parts, ", ")
	}
	switch {
	case len(a.ClaimsBroken) > 0:
		return fmt.Sprintf("**Verdict: claim broken** — %s broke `%s`.", codeList(a.ClaimsBroken), a.Spec.Lock)
	case len(a.ClaimsUnverified) > 0:
		return fmt.Sprintf("**Verdict: not enough evidence** for %s (a claim needs %d seeds of evidence).", codeList(a.ClaimsUnverified), ClaimSeeds)
	case a.Interrupted:
		return "**Verdict: interrupted** — the audit stopped before it was done."
	case len(a.Spec.Claims) > 0:
		return fmt.Sprintf("**Verdict: claims held** — %s.", held())
	}
	broken := 0
	for _, c := range a.Classes {
		if c.Status == Broken {
			broken++
		}
	}
	return fmt.Sprintf("**Verdict: no claims made**; %d of %s broke `%s`.", broken, words.Count(len(a.Classes), "fault", "faults"), a.Spec.Lock)
}

// Matrix is the audit as a matrix summary, a cell per fault, for the one
// JUnit writer (scenarios.Summary.JUnit): a claimed fault is a test case
// expecting safe, which fails when it broke the lock and is inconclusive
// (a failure) with fewer than ClaimSeeds seeds of evidence; a fault not
// claimed is only observed (skipped), and one that could not be set up an
// error.
func (a Audit) Matrix() scenarios.Summary {
	s := scenarios.Summary{Started: a.Started, Seconds: a.Seconds, Locks: []string{a.Spec.Lock}, Nemeses: a.Spec.Nemeses}
	for _, c := range a.Classes {
		r := scenarios.CellResult{Name: scenarios.GridName(a.Spec.Lock, scenarios.FaultDir(c.Nemesis)), Kind: scenarios.KindAudit, Lock: a.Spec.Lock, Nemesis: c.Nemesis,
			SeedsRun: c.Seeds, Detail: fmt.Sprintf("%s; %s landed", c.verdict(), words.Count(c.FaultsLanded, "fault", "faults"))}
		switch c.Status {
		case Broken:
			r.Got = string(checker.Violation)
		case Held:
			r.Got = string(checker.Safe)
		}
		if w := c.Witness; w != nil {
			r.Detail += "; witness: " + w.Command
			r.Dir = w.Run
		}
		if c.Claimed {
			r.Expect = string(checker.Safe)
		}
		switch {
		case c.Status == NA:
			r.Status, r.Detail = scenarios.StatusNA, firstLine(c.Why)
		case c.Status == Error:
			r.Status, r.Detail = scenarios.StatusError, firstLine(c.Why)
		case !c.Claimed:
			r.Status = scenarios.StatusMatch
		case c.Status == Broken:
			r.Status = scenarios.StatusMismatch
		case c.Status == Held && c.Safe >= ClaimSeeds:
			r.Status = scenarios.StatusMatch
		default:
			r.Status = scenarios.StatusInconclusive
			r.Detail = fmt.Sprintf("not enough evidence for %s: %d of the %d seeds needed", c.Nemesis, c.Safe, ClaimSeeds)
		}
		s.Cells = append(s.Cells, r)
	}
	return s
}

func colon(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// refList names the reference locks in a sentence.
func refList(refs []string) string {
	if len(refs) == 0 {
		return "no reference lock"
	}
	return "the reference " + words.Plural(len(refs), "lock ", "locks ") + codeList(refs)
}

func codeList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + n + "`"
	}
	return strings.Join(q, ", ")
}

func duration(secs float64) string {
	m := int(secs) / 60
	return fmt.Sprintf("%dm%02ds", m, int(secs)%60)
}

var page = template.Must(template.New("audit").Funcs(template.FuncMap{
	"pct":       pct,
	"detection": func(c Class) string { return detection(c.Detection, c.CILow, c.CIHigh) },
	"verdict":   func(c Class) string { return c.verdict() },
	"expected":  func(c Class) string { return c.expected() },
	"refv": func(c Class, name string) string {
		for _, r := range c.Refs {
			if r.Lock == name {
				return r.verdict()
			}
		}
		return "–"
	},
	"ttfv":      ttfv,
	"duration":  duration,
	"indexFile": func() string { return compare.IndexFile },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Audit of {{.Spec.Lock}}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px;max-width:1400px;color:#222}td code{word-break:break-all;font-size:12px}
table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}.broken{background:#fde2e1}.held{background:#e3f4e1}.na{color:#888}code{background:#f4f4f4;padding:1px 3px}
</style></head><body>
<h1>Audit of <code>{{.Spec.Lock}}</code></h1>
<p>{{.Description}}</p>
<p>Store: {{.Store}}. Up to {{.Spec.Seeds}} seeds per fault, beside {{range $i, $r := .Spec.Refs}}{{if $i}}, {{end}}<code>{{$r}}</code>{{end}}. lockchaos {{.Version}}, {{.Started}}, {{duration .Seconds}}.
The plots of every cell: <a href="{{indexFile}}">{{indexFile}}</a> (the comparison these figures come from). The same audit as a page to paste: <a href="audit.md">audit.md</a>.</p>
{{if .Interrupted}}<p><b>Interrupted</b>: what ran is below.</p>{{end}}
{{range .LeftOut}}<p><b>Left out</b>: {{.}}.</p>{{end}}
{{if .ClaimsBroken}}<p><b>Claims broken</b>: {{range .ClaimsBroken}}<code>{{.}}</code> {{end}}</p>{{end}}
{{if .ClaimsUnverified}}<p><b>Claims not verified</b> (too few seeds of evidence): {{range .ClaimsUnverified}}<code>{{.}}</code> {{end}}</p>{{end}}
<table>
<tr><th>fault</th><th>{{.Spec.Lock}}</th><th>{{.ExpectColumn}}</th><th>detection [95% CI]</th><th>first overlap (TTLs)</th><th>lost updates</th><th>faults landed</th><th>granted during / outside faults</th><th>fencing</th>{{range .Spec.Refs}}<th>{{.}}</th>{{end}}<th>witness</th></tr>
{{$refs := .Spec.Refs}}
{{range .Classes}}<tr class="{{if eq .Status "broken"}}broken{{else if eq .Status "held"}}held{{else}}na{{end}}">
<td><a href="{{.Cell}}/">{{.Nemesis}}</a></td><td>{{verdict .}}{{if .Claimed}} (claimed){{end}}</td><td>{{expected .}}</td><td>{{detection .}}</td><td>{{ttfv .TTFVMedianTTL}}</td><td>{{.LostUpdates}}</td><td>{{.FaultsLanded}}</td><td>{{pct .GrantedDuring}} / {{pct .GrantedOutside}}</td><td>{{if .Fencing}}{{.Fencing}} ({{.FencedBy}}){{else}}–{{end}}</td>
{{$c := .}}{{range $refs}}<td>{{refv $c .}}</td>{{end}}
<td>{{with .Witness}}{{if .Shrunk}}<a href="{{.Report}}">minimal run</a> · <a href="{{.Story}}">story</a> · <a href="{{.Scenario}}">scenario</a><br>{{.Minimal}}{{else}}<a href="{{.Run}}/report.html">the violating run</a>{{end}}<br><code>{{.Command}}</code>{{end}}</td></tr>
{{end}}</table>
<p>Repeat: <code>{{.Command}}</code></p>
</body></html>
`))

// Read reads the audit in dir (its audit.json).
func Read(dir string) (Audit, error) {
	var a Audit
	b, err := os.ReadFile(filepath.Join(dir, rundir.AuditJSONFile))
	if err != nil {
		return a, err
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return a, fmt.Errorf("%s: %w", filepath.Join(dir, rundir.AuditJSONFile), err)
	}
	if a.Schema != Schema {
		return a, fmt.Errorf("%s: schema %d, this lockchaos reads %d", filepath.Join(dir, rundir.AuditJSONFile), a.Schema, Schema)
	}
	return a, nil
}

// Rerender sums the audit in dir up again from its stored comparison (a
// newer lockchaos may say more of the same runs), keeps its witnesses and
// what it recorded of itself, and writes its files again; expect is as in
// Summarize.
func Rerender(dir string, expect map[string]checker.Verdict) (Audit, error) {
	old, err := Read(dir)
	if err != nil {
		return old, err
	}
	cmp, err := compare.Read(dir)
	if err != nil {
		return old, err
	}
	if expect == nil && old.ExpectFrom == "claims" {
		expect = claimsExpected(old.Spec.Claims) // a lock outside the catalogue
	}
	a := Summarize(old.Spec, cmp, expect)
	if a.Description == "" { // a lock this process does not know (a --lock-file's)
		a.Description, a.Store = old.Description, old.Store
	}
	a.Version, a.Started, a.Seconds, a.Interrupted, a.LeftOut, a.Command, a.ExpectFrom = old.Version, old.Started, old.Seconds, old.Interrupted, old.LeftOut, old.Command, old.ExpectFrom
	a.Shard = old.Shard
	witnesses := map[string]*Witness{}
	for _, c := range old.Classes {
		witnesses[c.Nemesis] = c.Witness
	}
	for i := range a.Classes {
		a.Classes[i].Witness = witnesses[a.Classes[i].Nemesis]
	}
	return a, a.Write(dir)
}
