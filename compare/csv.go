package compare

import (
	"encoding/csv"
	"io"
	"strconv"
)

// CSVHeader are compare.csv's columns, one row per cell. The first
// seventeen are the issue's; the rest say what a reader needs to weigh
// them (the TTL the cell ran with, how many seeds it planned and why it
// stopped, availability during faults, the runs' folder).
var CSVHeader = []string{
	"lock", "nemesis", "seeds", "violations", "detection_rate", "ci_low", "ci_high", "faults_landed",
	"ttfv_median_ttl", "ttfv_p90_ttl", "acquire_ok_rate", "acquire_p50_ms", "acquire_p99_ms", "holds_per_s",
	"lost_updates_total", "stale_accepted_total", "inconclusive",
	"status", "safe", "seeds_planned", "stopped_early", "fault_acquire_ok_rate", "ttl_ms", "hold_ms", "dir",
}

// WriteCSV writes rows as compare.csv: an empty field is a figure that
// does not exist (no seed was evidence, no violation to time, no fault).
func WriteCSV(w io.Writer, rows []Row) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	for _, r := range rows {
		ran := r.Status == StatusRan
		rec := []string{
			r.Lock, r.Nemesis, intIf(ran, r.Seeds), intIf(ran, r.Violations), opt(r.DetectionRate, 4), opt(r.CILow, 4), opt(r.CIHigh, 4), optInt(r.FaultsLanded),
			opt(r.TTFVMedianTTL, 3), opt(r.TTFVP90TTL, 3), opt(r.AcquireOKRate, 4), numIf(ran, r.AcquireP50ms, 2), numIf(ran, r.AcquireP99ms, 2), numIf(ran, r.HoldsPerS, 2),
			intIf(ran, r.LostUpdatesTotal), intIf(ran, r.StaleAcceptedTotal), intIf(ran, r.Inconclusive),
			r.Status, intIf(ran, r.Safe), strconv.Itoa(r.SeedsPlanned), strconv.FormatBool(r.StoppedEarly), opt(r.FaultAcquireOKRate, 4),
			num(r.TTLms, 0), num(r.HoldMs, 0), r.Dir,
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func num(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }

func opt(v *float64, prec int) string {
	if v == nil {
		return ""
	}
	return num(*v, prec)
}

func optInt(v *int) string {
	if v == nil {
		return ""
	}
	return strconv.Itoa(*v)
}

func intIf(ok bool, v int) string {
	if !ok {
		return ""
	}
	return strconv.Itoa(v)
}

func numIf(ok bool, v float64, prec int) string {
	if !ok {
		return ""
	}
	return num(v, prec)
}
