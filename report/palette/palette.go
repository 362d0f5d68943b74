// Package palette is the colours of verdicts and statuses, shared by the
// report's pages (a run's, a matrix's) and compare's, and their legends.
// It imports nothing, so that compare need not import the report for them.
// The browser tests read them back from the rendered DOM.
package palette

const (
	Safe         = "#c3e6cb"
	Violation    = "#f5b7b1"
	Inconclusive = "#ffe08a"
	Error        = "#d0bfff"
	NA           = "#e9ecef"
	Skipped      = "#ffffff"
	Mismatch     = "#c92a2a" // the border of a cell that did not match
)
