package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"
)

// stagesCSV renders stages.csv: one row per run and stage, durations in nanoseconds.
func stagesCSV(p Profile) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	head := []string{"run", "stage", "name", "mode", "target_rate", "concurrency", "requests", "completed", "errors",
		"achieved_rate", "completion_rate", "input_tps", "output_tps", "total_tps", "inflight_mean",
		"goodput_share", "goodput_rate", "saturated"}
	for _, l := range latencyColumns {
		base := strings.TrimSuffix(l.Key, "_ns")
		for _, q := range []string{"p50", "p90", "p99", "mean"} {
			head = append(head, base+"_"+q+"_ns")
		}
	}
	head = append(head, "rate_fidelity", "exact_share", "worker_rho_max", "workers", "gc_pause_ns",
		"client_bound", "client_bound_reason", "workers_for_rho_half")
	if err := w.Write(head); err != nil {
		return nil, fmt.Errorf("write stages.csv: %w", err)
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, r := range p.Runs {
		for _, s := range r.Stages {
			row := []string{r.Label, i64(int64(s.Stage)), s.Name, s.Mode, f(s.TargetRate), i64(int64(s.Concurrency)),
				i64(s.Requests), i64(s.Completed), i64(s.Errors), f(s.AchievedRate), f(s.CompletionRate),
				f(s.InputTPS), f(s.OutputTPS), f(s.TotalTPS), f(s.InflightMean), f(s.GoodputShare), f(s.GoodputRate),
				strconv.FormatBool(s.Saturated)}
			for _, l := range latencyColumns {
				d := s.Latency[l.Key]
				row = append(row, i64(d.P50), i64(d.P90), i64(d.P99), i64(d.Mean))
			}
			q := s.Quality
			row = append(row, f(q.RateFidelity), f(q.ExactShare), f(q.WorkerRhoMax), i64(int64(q.Workers)),
				i64(q.GCPauseNs), strconv.FormatBool(q.ClientBound), q.ClientBoundReason, i64(int64(q.WorkersForRhoHalf)))
			if err := w.Write(row); err != nil {
				return nil, fmt.Errorf("write stages.csv: %w", err)
			}
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return nil, fmt.Errorf("write stages.csv: %w", err)
	}
	return buf.Bytes(), nil
}

// table is a simple text table shared by the Markdown and HTML renderers.
type table struct {
	Head []string
	Rows []tableRow
}

type tableRow struct {
	Cells []string
	Bad   bool // client-bound: shown in red
	Note  bool // saturation stage: highlighted
}

// stageTable is the per-stage headline table of one run.
func stageTable(r RunProfile) table {
	t := table{Head: []string{"stage", "offered", "sent/s", "done/s", "out tok/s", "in flight", "TTFT p50", "TTFT p99",
		"TPOT p50", "TPOT p99", "ITL p99", "NTPOT p99", "E2E p50", "E2E p99", "goodput", "errors", "note"}}
	for _, s := range r.Stages {
		note := ""
		if s.Saturated {
			note = "saturation"
		}
		if s.Quality.ClientBound {
			note = strings.TrimPrefix(note+", client-bound", ", ")
		}
		l := s.Latency
		t.Rows = append(t.Rows, tableRow{Bad: s.Quality.ClientBound, Note: s.Saturated, Cells: []string{
			stageLabel(s), offeredP(s), fmtRate(s.AchievedRate), fmtRate(s.CompletionRate), fmtRate(s.OutputTPS),
			fmtRate(s.InflightMean), fmtDur(l["ttft_ns"].P50), fmtDur(l["ttft_ns"].P99), fmtDur(l["tpot_ns"].P50),
			fmtDur(l["tpot_ns"].P99), fmtDur(l["itl_ns"].P99), fmtDur(l["ntpot_ns"].P99), fmtDur(l["e2e_ns"].P50),
			fmtDur(l["e2e_ns"].P99), fmtPct(s.GoodputShare), strconv.FormatInt(s.Errors, 10), note,
		}})
	}
	return t
}

// qualityTable is the per-stage bias-check table of one run.
func qualityTable(r RunProfile) table {
	t := table{Head: []string{"stage", "rate fidelity", "send lag p99", "read lag p99", "exact timestamps", "worker ρ max",
		"workers", "GC pause", "client-bound", "workers for ρ < 0.5"}}
	for _, s := range r.Stages {
		q := s.Quality
		cb := "no"
		if q.ClientBound {
			cb = "YES: " + q.ClientBoundReason
		}
		t.Rows = append(t.Rows, tableRow{Bad: q.ClientBound, Cells: []string{
			stageLabel(s), strconv.FormatFloat(q.RateFidelity, 'f', 3, 64), fmtDur(q.SendLagP99Ns), fmtDur(q.ReadLagP99Ns),
			fmtPct(q.ExactShare), strconv.FormatFloat(q.WorkerRhoMax, 'f', 2, 64), strconv.Itoa(int(q.Workers)),
			fmtDur(q.GCPauseNs), cb, strconv.Itoa(int(q.WorkersForRhoHalf)),
		}})
	}
	return t
}

// comparisonTable is the side-by-side table of run B against run A: B/A ratios per stage.
func comparisonTable(c Comparison) table {
	t := table{Head: []string{"stage"}}
	for _, f := range comparedFigures {
		t.Head = append(t.Head, f.Title)
	}
	for _, s := range c.Stages {
		row := []string{strconv.Itoa(int(s.Stage)) + " " + s.Name}
		for _, f := range comparedFigures {
			row = append(row, fmtRatio(s.Ratios[f.Key]))
		}
		t.Rows = append(t.Rows, tableRow{Cells: row})
	}
	return t
}

func stageLabel(s StageProfile) string {
	if s.Name == "" {
		return strconv.Itoa(int(s.Stage))
	}
	return strconv.Itoa(int(s.Stage)) + " " + s.Name
}

func offeredP(s StageProfile) string {
	if s.Mode == "closed" || (s.TargetRate == 0 && s.Concurrency > 0) {
		return fmt.Sprintf("%d users", s.Concurrency)
	}
	return fmtRate(s.TargetRate) + "/s"
}
