package report

import (
	"encoding/json"
	"strconv"

	"github.com/wirebench/wirebench/schemas"
)

// endpointFigures decodes a stage's endpoints column (target.urls); nil with one endpoint or a
// malformed column.
func endpointFigures(js string) []schemas.EndpointFigures {
	var out []schemas.EndpointFigures
	if js != "" && json.Unmarshal([]byte(js), &out) != nil {
		return nil
	}
	return out
}

// endpointTable is the per-stage, per-endpoint table of a run with several endpoints; no rows
// with one.
func endpointTable(r schemas.ProfileRun) table {
	t := table{Head: []string{"stage", "endpoint", "url", "requests", "done", "errors", "cancelled", "TTFT p50", "TTFT p99",
		"TPOT p50", "E2E p50", "E2E p99", "goodput"}, Text: map[int]bool{2: true}}
	t.Bad = func(row, col int) bool { return false }
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, s := range r.Stages {
		for _, e := range s.Endpoints {
			t.Rows = append(t.Rows, tableRow{Level: s.Quality.Trust, Cells: []string{
				stageTitle(s.Stage, s.Name), strconv.Itoa(int(e.Endpoint)), e.URL, i64(e.Requests), i64(e.Completed), i64(e.Errors),
				i64(e.Cancelled), p50(e.TTFT), p99(e.TTFT), p50(e.TPOT), p50(e.E2E), p99(e.E2E), fmtPct(orNaN(e.GoodputShare)),
			}})
		}
	}
	return t
}
