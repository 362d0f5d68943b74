package rundir

import "path/filepath"

// ShrinkDir is where a shrink of the run in dir goes unless told
// otherwise: DIR.shrink beside it (`lockchaos chaos --shrink` puts each
// there).
func ShrinkDir(dir string) string { return filepath.Clean(dir) + ".shrink" }

// Files a shrink writes in its folder.
const (
	ShrinkScenarioFile = "minimal.yaml"
	ShrinkWitnessFile  = "witness.md"
	ShrinkReportFile   = "shrink.json"
	ShrinkMinimalDir   = "minimal"
	ShrinkVerifyDir    = "verify"
	ShrinkWorkDir      = "work"
)

// Files an audit writes in its folder (beside the comparison's).
const (
	AuditJSONFile     = "audit.json"
	AuditMarkdownFile = "audit.md"
	AuditHTMLFile     = "audit.html"
	AuditWitnessDir   = "witness"
)
