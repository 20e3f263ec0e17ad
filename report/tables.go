package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"

	"github.com/wirebench/wirebench/schemas"
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
		for _, q := range []string{"p50", "p50_lo", "p50_hi", "p90", "p90_lo", "p90_hi", "p99", "p99_lo", "p99_hi", "mean"} {
			head = append(head, base+"_"+q+"_ns")
		}
	}
	head = append(head, "trust", "planned_rate", "rate_fidelity", "uncertainty_ns", "uncertainty_figure", "client_bound",
		"client_bound_reason", "load_delivered", "load_reason", "late_share_client", "exact_share", "worker_rho_max",
		"workers", "gc_pause_ns", "workers_for_rho_half")
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
				row = append(row, i64(d.P50), i64(d.P50Lo), i64(d.P50Hi), i64(d.P90), i64(d.P90Lo), i64(d.P90Hi),
					i64(d.P99), i64(d.P99Lo), i64(d.P99Hi), i64(d.Mean))
			}
			q := s.Quality
			row = append(row, q.Trust, f(q.PlannedRate), f(q.RateFidelity), i64(q.UncertaintyNs), q.UncertaintyFigure,
				strconv.FormatBool(q.ClientBound), q.ClientBoundReason, strconv.FormatBool(q.LoadDelivered), q.LoadReason,
				f(q.LateShareClient), f(q.ExactShare), f(q.WorkerRhoMax), i64(int64(q.Workers)), i64(q.GCPauseNs),
				i64(int64(q.WorkersForRhoHalf)))
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
	Wrap map[int]bool // columns whose long cells (verdict reasons) wrap in HTML
}

// Wraps reports whether the cells of column i wrap.
func (t table) Wraps(i int) bool { return t.Wrap[i] }

type tableRow struct {
	Cells []string
	Level string // the stage's trust level: red and amber rows are coloured
	Note  bool   // saturation stage: highlighted
}

// Class is the row's HTML class: bad (red), warn (amber), note (saturation) or none.
func (r tableRow) Class() string {
	switch {
	case r.Level == Red:
		return "bad"
	case r.Level == Amber:
		return "warn"
	case r.Note:
		return "note"
	}
	return ""
}

// stageTable is the per-stage headline table of one run: each latency percentile with its
// bound (fmtBound).
func stageTable(r RunProfile) table {
	t := table{Head: []string{"stage", "offered", "sent/s", "done/s", "out tok/s", "in flight", "TTFT p50", "TTFT p99",
		"TPOT p50", "TPOT p99", "ITL p99", "NTPOT p99", "E2E p50", "E2E p99", "goodput", "errors", "note"}}
	for _, s := range r.Stages {
		var notes []string
		if s.Saturated {
			notes = append(notes, "saturation")
		}
		if s.Quality.ClientBound {
			notes = append(notes, "client-bound")
		}
		if !s.Quality.LoadDelivered {
			notes = append(notes, "load not delivered")
		}
		l := s.Latency
		t.Rows = append(t.Rows, tableRow{Level: s.Quality.Trust, Note: s.Saturated, Cells: []string{
			stageLabel(s), offeredP(s), fmtRate(s.AchievedRate), fmtRate(s.CompletionRate), fmtRate(s.OutputTPS),
			fmtRate(s.InflightMean), l["ttft_ns"].p50(), l["ttft_ns"].p99(), l["tpot_ns"].p50(), l["tpot_ns"].p99(),
			l["itl_ns"].p99(), l["ntpot_ns"].p99(), l["e2e_ns"].p50(), l["e2e_ns"].p99(), fmtPct(s.GoodputShare),
			strconv.FormatInt(s.Errors, 10), strings.Join(notes, ", "),
		}})
	}
	return t
}

// qualityTable is the per-stage verdict table of one run: the client's uncertainty (the widest
// bound of a judged percentile) and whether it is client-bound, lateness and rate against the
// planned schedule and whether the load was delivered, then diagnostics.
func qualityTable(r RunProfile) table {
	t := table{Head: []string{"stage", "uncertainty", "client-bound", "lateness p99", "rate fidelity (achieved / planned)",
		"load delivered", "client's share of lateness", "exact timestamps", "worker ρ max", "workers", "GC pause"},
		Wrap: map[int]bool{2: true, 5: true}}
	for _, s := range r.Stages {
		q := s.Quality
		unc := "-"
		if q.UncertaintyFigure != "" {
			unc = fmtDur(q.UncertaintyNs) + " (" + q.UncertaintyFigure + ")"
		}
		rate := fmt.Sprintf("%.3f (%s of %s/s)", q.RateFidelity, fmtRate(s.AchievedRate), fmtRate(q.PlannedRate))
		if q.ClockUncertaintyNs > 0 {
			rate += "; hosts' clocks ±" + fmtDur(q.ClockUncertaintyNs)
		}
		t.Rows = append(t.Rows, tableRow{Level: q.Trust, Cells: []string{
			stageLabel(s), unc, verdict(q.ClientBound, "YES", "no", q.ClientBoundReason), s.Latency["send_lag_ns"].p99(),
			rate, verdict(!q.LoadDelivered, "NO", "yes", q.LoadReason),
			fmtPct(q.LateShareClient), fmtPct(q.ExactShare), strconv.FormatFloat(q.WorkerRhoMax, 'f', 2, 64),
			strconv.Itoa(int(q.Workers)), fmtDur(q.GCPauseNs),
		}})
	}
	return t
}

// verdict is the table cell of a verdict: the word for a failed one with its reason, else ok.
func verdict(failed bool, bad, ok, reason string) string {
	if failed {
		return bad + ": " + orNone(reason)
	}
	return ok
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
	if s.Mode == schemas.ModeClosed || (s.TargetRate == 0 && s.Concurrency > 0) {
		return fmt.Sprintf("%d users", s.Concurrency)
	}
	return fmtRate(s.TargetRate) + "/s"
}
