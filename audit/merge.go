package audit

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/lockchaos/lockchaos/checker"
	"github.com/lockchaos/lockchaos/compare"
	"github.com/lockchaos/lockchaos/internal/shellwords"
	"github.com/lockchaos/lockchaos/rundir"
)

// Merge joins the audits of the shards of one audit (audit --shard I/N:
// dirs[i] holds audits[i] and its comparison cmps[i]) into the audit an
// unsharded run would have written to out: the shards' comparisons joined
// (compare.Merge), then summed up and the claims judged by Summarize, as
// for an unsharded audit, with each shard's witnesses and what its budget
// left out. missing lists the shards not given: their faults did not run,
// so a claim among them is not verified. Shards of different audits or
// builds are an error.
func Merge(dirs []string, audits []Audit, cmps []compare.Comparison, out string) (Audit, compare.Comparison, []string, error) {
	for i, a := range audits {
		if a.Shard == nil || cmps[i].Shard == nil || cmps[i].Shard.String() != a.Shard.String() {
			return Audit{}, compare.Comparison{}, nil, fmt.Errorf("%s is not an audit's shard (audit --shard I/N writes one): only shards are merged", dirs[i])
		}
		if !sameAudit(audits[0].Spec, a.Spec) {
			return Audit{}, compare.Comparison{}, nil, fmt.Errorf("%s (shard %s) and %s (shard %s) are shards of different audits: run every shard with the same flags and build",
				dirs[0], audits[0].Shard, dirs[i], a.Shard)
		}
	}
	cmp, missing, err := compare.Merge(dirs, cmps)
	if err != nil {
		return Audit{}, compare.Comparison{}, nil, err
	}
	first := audits[0]
	spec := first.Spec
	// What each fault was expected to do, as the shards recorded it (the
	// lock may be one this process does not know: a --lock-file's).
	var expect map[string]checker.Verdict
	switch first.ExpectFrom {
	case "claims":
		expect = claimsExpected(spec.Claims)
	case "catalogue":
		expect = map[string]checker.Verdict{}
	}
	witnesses := map[string]*Witness{}
	var starts, leftOut []string
	var seconds []float64
	interrupted := false
	for i, a := range audits {
		for _, c := range a.Classes {
			if c.Expected != "" && expect != nil {
				expect[c.Nemesis] = checker.Verdict(c.Expected)
			}
			if w := c.Witness; w != nil {
				w.Command = rebase(w.Command, dirs[i], out)
				witnesses[c.Nemesis] = w
			}
		}
		for _, l := range a.LeftOut {
			leftOut = append(leftOut, "shard "+a.Shard.String()+": "+l)
		}
		starts, seconds = append(starts, a.Started), append(seconds, a.Seconds)
		interrupted = interrupted || a.Interrupted
	}
	if len(missing) > 0 {
		leftOut = append(leftOut, fmt.Sprintf("shard %s missing from the merge: its faults did not run", strings.Join(missing, ", ")))
	}
	a := Summarize(spec, cmp, expect)
	a.Version, a.Description, a.Store, a.ExpectFrom = first.Version, first.Description, first.Store, first.ExpectFrom
	a.Started, a.Seconds = compare.Span(starts, seconds)
	a.Interrupted, a.LeftOut = interrupted, leftOut
	a.Command = rebase(first.Command, dirs[0], out)
	for i := range a.Classes {
		a.Classes[i].Witness = witnesses[a.Classes[i].Nemesis]
	}
	cmp.Interrupted = interrupted
	return a, cmp, missing, nil
}

// sameAudit says whether two shards' specs are of one audit: the same but
// for --parallel, which changes no outcome.
func sameAudit(a, b Spec) bool {
	a.Parallel, b.Parallel = 0, 0
	return reflect.DeepEqual(a, b)
}

// rebase is cmd, written to run from the shard's folder from, made to run
// from the merged folder to: a --lock-file's relative path is made
// relative to it, --shard is dropped (the merge is the whole audit), and
// --out names a folder beside it.
func rebase(cmd, from, to string) string {
	args, err := shellwords.Split(cmd)
	if err != nil {
		return cmd
	}
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--shard" && i+1 < len(args):
			i++
			continue
		case a == "--lock-file" && i+1 < len(args) && !filepath.IsAbs(args[i+1]):
			i++
			out = append(out, a, rundir.RelTo(to, filepath.Join(from, args[i])))
			continue
		case a == "--out" && i+1 < len(args) && strings.HasSuffix(args[i+1], "-again"):
			i++
			out = append(out, a, "../"+filepath.Base(filepath.Clean(to))+"-again")
			continue
		}
		out = append(out, a)
	}
	for i, a := range out {
		out[i] = shellwords.Quote(a)
	}
	return strings.Join(out, " ")
}

// claimsExpected is what a lock outside the catalogue is expected to do:
// survive its claims (scenarios.Grid.ExpectOf, for a lock this process
// knows).
func claimsExpected(claims []string) map[string]checker.Verdict {
	e := map[string]checker.Verdict{}
	for _, c := range claims {
		e[c] = checker.Safe
	}
	return e
}
