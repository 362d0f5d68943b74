package bench

import (
	"bufio"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// CheckerRow is one Go benchmark of the checker.
type CheckerRow struct {
	Name       string  `json:"name"`
	Ops        string  `json:"ops"`
	Keys       string  `json:"keys"`
	Holds      string  `json:"holds"`
	NsPerOp    float64 `json:"ns_per_op"`
	BytesPerOp float64 `json:"bytes_per_op"`
}

var benchLine = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// ParseGoBench reads `go test -bench -benchmem` output (the same text
// benchstat reads) into rows.
func ParseGoBench(r io.Reader) []CheckerRow {
	var rows []CheckerRow
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		row := CheckerRow{Name: m[1]}
		for _, part := range strings.Split(m[1], "/")[1:] {
			k, v, _ := strings.Cut(part, "=")
			switch k {
			case "ops":
				row.Ops = v
			case "keys":
				row.Keys = v
			case "waiters":
				row.Keys, row.Ops = "1", v+" concurrent"
			}
		}
		f := strings.Fields(m[2])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "ns/op":
				row.NsPerOp = v
			case "B/op":
				row.BytesPerOp = v
			case "holds":
				// Go prints small metrics with a decimal ("163.0"); a count has none.
				row.Holds = strconv.FormatFloat(v, 'f', 0, 64)
			}
		}
		rows = append(rows, row)
	}
	return rows
}
