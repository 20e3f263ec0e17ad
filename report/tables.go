package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"

	"github.com/wirebench/wirebench/schemas"
)

// stagesCSV renders stages.csv: one row per run and stage, durations in nanoseconds; a figure
// over nothing (null in the files) is an empty cell, and so are machine_cpus and machine_busy
// when the capture did not record the machine's CPUs (0 in the files).
func stagesCSV(p schemas.Profile) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	head := []string{"run", "stage", "name", "mode", "target_rate", "concurrency", "requests", "completed", "errors",
		"achieved_rate", "completion_rate", "input_tps", "output_tps", "total_tps", "inflight_mean",
		"goodput_share", "goodput_rate", "saturated", "overloaded"}
	for _, l := range latencyColumns {
		base := strings.TrimSuffix(l.Key, "_ns")
		for _, q := range []string{"p50", "p50_lo", "p50_hi", "p90", "p90_lo", "p90_hi", "p99", "p99_lo", "p99_hi", "mean"} {
			head = append(head, base+"_"+q+"_ns")
		}
	}
	head = append(head, "trust", "planned_rate", "rate_fidelity", "uncertainty_ns", "uncertainty_figure", "client_bound",
		"client_bound_reason", "load_delivered", "load_reason", "late_share_client", "exact_share", "worker_rho_max",
		"workers", "gc_pause_ns", "workers_for_rho_half", "target_local", "client_cpus", "machine_cpus", "machine_busy",
		"server_disturbed", "inflight_peak", "connections_opened", "connections_peak", "connection_spiral")
	for _, l := range latencyColumns {
		if _, ok := intervalColumns[l.Key]; ok {
			base := strings.TrimSuffix(l.Key, "_ns")
			for _, q := range []string{"p50", "p90", "p99", "p999"} {
				head = append(head, base+"_ci_"+q+"_lo_ns", base+"_ci_"+q+"_hi_ns")
			}
		}
	}
	if err := w.Write(head); err != nil {
		return nil, fmt.Errorf("write stages.csv: %w", err)
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	nf := func(p *float64) string { return cell(p, f) }
	ni := func(p *int64) string { return cell(p, i64) }
	for _, r := range p.Runs {
		for _, s := range r.Stages {
			row := []string{r.Label, i64(int64(s.Stage)), s.Name, s.Mode, f(s.TargetRate), i64(int64(s.Concurrency)),
				i64(s.Requests), i64(s.Completed), i64(s.Errors), nf(s.AchievedRate), nf(s.CompletionRate),
				nf(s.InputTPS), nf(s.OutputTPS), nf(s.TotalTPS), nf(s.InflightMean), nf(s.GoodputShare), nf(s.GoodputRate),
				strconv.FormatBool(s.Saturated), strconv.FormatBool(s.Overloaded)}
			for _, l := range latencyColumns {
				d := s.Latency[l.Key]
				row = append(row, ni(d.P50), ni(d.P50Lo), ni(d.P50Hi), ni(d.P90), ni(d.P90Lo), ni(d.P90Hi),
					ni(d.P99), ni(d.P99Lo), ni(d.P99Hi), ni(d.Mean))
			}
			q := s.Quality
			row = append(row, q.Trust, nf(q.PlannedRate), nf(q.RateFidelity), ni(q.UncertaintyNs), q.UncertaintyFigure,
				strconv.FormatBool(q.ClientBound), q.ClientBoundReason, strconv.FormatBool(q.LoadDelivered), q.LoadReason,
				nf(q.LateShareClient), nf(q.ExactShare), nf(q.WorkerRhoMax), i64(int64(q.Workers)), i64(q.GCPauseNs),
				i64(int64(q.WorkersForRhoHalf)))
			fp := q.Footprint
			cpus, busy := "", "" // unknown: a capture that did not record the machine's CPUs
			if fp.MachineCPUs > 0 {
				cpus, busy = i64(int64(fp.MachineCPUs)), f(fp.MachineBusy)
			}
			row = append(row, strconv.FormatBool(fp.TargetLocal), f(fp.ClientCPUs), cpus, busy,
				strconv.FormatBool(fp.ServerDisturbed), i64(fp.InflightPeak), i64(fp.ConnectionsOpened), i64(fp.ConnectionsPeak),
				strconv.FormatBool(fp.ConnectionSpiral))
			for _, l := range latencyColumns {
				if _, ok := intervalColumns[l.Key]; ok {
					c := s.Intervals[l.Key]
					row = append(row, ni(c.P50Lo), ni(c.P50Hi), ni(c.P90Lo), ni(c.P90Hi), ni(c.P99Lo), ni(c.P99Hi), ni(c.P999Lo), ni(c.P999Hi))
				}
			}
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

// cell formats a nullable CSV figure: empty for null.
func cell[T any](p *T, format func(T) string) string {
	if p == nil {
		return ""
	}
	return format(*p)
}

// table is a simple text table shared by the Markdown and HTML renderers.
type table struct {
	Head []string
	Rows []tableRow
	Wrap map[int]bool            // columns of long text (verdict reasons): left-aligned, wrapping in HTML
	Text map[int]bool            // columns of short words (notes): left-aligned
	Bad  func(row, col int) bool // cells whose figure is a problem by itself (errors): red in HTML
}

// HeadClass is the HTML class of column col's cells and header: wrap, text or none (numbers,
// right-aligned).
func (t table) HeadClass(col int) string {
	switch {
	case t.Wrap[col]:
		return "wrap"
	case t.Text[col]:
		return "text"
	}
	return ""
}

// CellClass is the HTML class of cell col of row: its column's class, or bad.
func (t table) CellClass(row, col int) string {
	if t.Bad != nil && t.Bad(row, col) {
		return "bad"
	}
	return t.HeadClass(col)
}

type tableRow struct {
	Cells []string
	Level string // the stage's trust level: red and amber rows are coloured
	Note  bool   // saturation stage: highlighted
}

// Class is the row's HTML class: bad (red), warn (amber), note (saturation) or none.
func (r tableRow) Class() string {
	switch {
	case r.Level == schemas.TrustRed:
		return "bad"
	case r.Level == schemas.TrustAmber:
		return "warn"
	case r.Note:
		return "note"
	}
	return ""
}

// stageTable is the per-stage headline table of one run: each latency percentile with its
// bound where the bound shows at the printed digits (fmtBound). Stages with errors have their
// error count marked.
func stageTable(r schemas.ProfileRun) table {
	t := table{Head: []string{"stage", "offered", "sent/s", "done/s", "out tok/s", "in flight", "TTFT p50", "TTFT p99",
		"TPOT p50", "TPOT p99", "ITL p99", "NTPOT p99", "E2E p50", "E2E p99", "goodput", "errors", "note"},
		Text: map[int]bool{16: true}}
	const errorsCol = 15
	t.Bad = func(row, col int) bool { return col == errorsCol && r.Stages[row].Errors > 0 }
	names := profileNames(r.Stages)
	for _, s := range r.Stages {
		var notes []string
		if s.Saturated {
			notes = append(notes, "saturation")
		}
		if s.Overloaded {
			notes = append(notes, "overloaded: no intervals")
		}
		if s.Quality.ClientBound {
			notes = append(notes, "client-bound")
		}
		if !s.Quality.LoadDelivered {
			notes = append(notes, "load not delivered")
		}
		if s.Cancelled > 0 {
			notes = append(notes, fmt.Sprintf("%d cancelled by the client", s.Cancelled))
		}
		if s.DocumentsPerS != nil {
			notes = append(notes, documentsNote(*s.DocumentsPerS))
		}
		l, ci := s.Latency, s.Intervals
		t.Rows = append(t.Rows, tableRow{Level: s.Quality.Trust, Note: s.Saturated, Cells: []string{
			stageTitle(s.Stage, s.Name, names), offered(s.Mode, s.TargetRate, s.Concurrency), fmtRate(orNaN(s.AchievedRate)),
			fmtRate(orNaN(s.CompletionRate)), fmtRate(orNaN(s.OutputTPS)), fmtRate(orNaN(s.InflightMean)), p50(l["ttft_ns"], ci["ttft_ns"]), p99(l["ttft_ns"], ci["ttft_ns"]),
			p50(l["tpot_ns"], ci["tpot_ns"]), p99(l["tpot_ns"], ci["tpot_ns"]), p99(l["itl_ns"], ci["itl_ns"]), p99(l["ntpot_ns"], ci["ntpot_ns"]),
			p50(l["e2e_ns"], ci["e2e_ns"]), p99(l["e2e_ns"], ci["e2e_ns"]),
			fmtPct(orNaN(s.GoodputShare)), strconv.FormatInt(s.Errors, 10), strings.Join(notes, ", "),
		}})
	}
	return t
}

// qualityTable is the per-stage verdict table of one run, the verdicts first: client-bound and
// the client's uncertainty (the widest bound of a judged percentile), load sent as planned with
// lateness and rate against the planned schedule, then diagnostics, and last the reasons of the
// failed verdicts (the rate, footprint and reasons wrap, so the table fits the page).
func qualityTable(r schemas.ProfileRun) table {
	t := table{Head: []string{"stage", "client-bound", "uncertainty", "load sent as planned", "lateness p99",
		"rate: offered; planned; sent (fidelity)", "client's share of lateness", "exact timestamps", "workers (ρ max)", "GC pause", "footprint", "why"},
		Wrap: map[int]bool{5: true, 10: true, 11: true}}
	names := profileNames(r.Stages)
	for _, s := range r.Stages {
		q := s.Quality
		unc := none
		if q.UncertaintyNs != nil {
			unc = fmtDur(*q.UncertaintyNs) + " (" + q.UncertaintyFigure + ")"
		}
		rate := rateSentence(s)
		if q.ClockUncertaintyNs > 0 {
			rate += "; hosts' clocks ±" + fmtDur(q.ClockUncertaintyNs)
		}
		var why []string
		if r := noOK(s.Requests, s.Completed, s.ErrorsByKind); r != "" {
			why = append(why, r)
		}
		if q.ClientBound {
			why = append(why, "client-bound: "+orNone(q.ClientBoundReason))
		}
		if !q.LoadDelivered {
			why = append(why, "load: "+orNone(q.LoadReason))
		}
		fp := q.Footprint
		if fp.ServerDisturbed {
			why = append(why, "server disturbed: "+orNone(fp.ServerDisturbedReason))
		}
		if fp.ConnectionSpiral {
			why = append(why, "connection spiral")
		}
		t.Rows = append(t.Rows, tableRow{Level: q.Trust, Cells: []string{
			stageTitle(s.Stage, s.Name, names), yesNo(q.ClientBound, "YES", "no"), unc, yesNo(!q.LoadDelivered, "NO", "yes"),
			p99(s.Latency["send_lag_ns"], schemas.CI{}), rate,
			fmtPct(orNaN(q.LateShareClient)), fmtPct(orNaN(q.ExactShare)), fmt.Sprintf("%d (%s)", q.Workers, shown(orNaN(q.WorkerRhoMax), show2)),
			fmtDur(q.GCPauseNs), footprintCell(fp), strings.Join(why, "; "),
		}})
	}
	return t
}

// footprintCell says what the client took: its CPUs of the machine's and how busy the machine
// was (co-located marked), and the connections it opened and had open at most.
func footprintCell(fp schemas.ProfileFootprint) string {
	cpu := fmt.Sprintf("%.2f CPUs", fp.ClientCPUs)
	if fp.MachineCPUs > 0 {
		cpu = fmt.Sprintf("%.2f of %d CPUs, machine %s busy", fp.ClientCPUs, fp.MachineCPUs, fmtPct(fp.MachineBusy))
	}
	if fp.TargetLocal {
		cpu += " (server co-located)"
	}
	return fmt.Sprintf("%s; %d connections opened, %d open at most", cpu, fp.ConnectionsOpened, fp.ConnectionsPeak)
}

// rateSentence names the offered, planned and sent rates of a stage together, with the rate
// fidelity (sent / planned): a Poisson or gamma stage's plan is this seed's sample of the
// offered rate, so a stage sent exactly as planned can still differ from what was offered.
func rateSentence(s schemas.ProfileStage) string {
	plan := "plan "
	offered := ""
	if s.Mode == schemas.ModeOpen && s.TargetRate > 0 {
		plan, offered = "this seed's plan ", "offered "+fmtRate(s.TargetRate)+"/s; "
	}
	return fmt.Sprintf("%s%s%s/s; sent %s/s (%s)", offered, plan, fmtRate(orNaN(s.Quality.PlannedRate)),
		fmtRate(orNaN(s.AchievedRate)), shown(orNaN(s.Quality.RateFidelity), show3))
}

// yesNo is the cell of a verdict: the word for a failed one, else the word for a passed one.
func yesNo(failed bool, bad, ok string) string {
	if failed {
		return bad
	}
	return ok
}

// comparisonTable is the side-by-side table of run B against run A: B/A ratios per stage pair,
// a latency ratio marked * when its change is significant (compare).
func comparisonTable(c schemas.ProfileComparison) table {
	t := table{Head: []string{"stage"}}
	for _, f := range comparedFigures {
		t.Head = append(t.Head, f.Title)
	}
	names := make([]string, len(c.Stages))
	for i, s := range c.Stages {
		names[i] = s.Name
	}
	for _, s := range c.Stages {
		title := stageTitle(s.Stage, s.Name, names)
		if s.BaseStage != s.Stage {
			title += fmt.Sprintf(" (A: %d)", s.BaseStage)
		}
		row := []string{title}
		for _, f := range comparedFigures {
			cell := fmtRatio(s.Ratios[f.Key])
			if f.Metric != "" && significantFigure(s, f.Metric, f.Percentile) {
				cell += "*"
			}
			row = append(row, cell)
		}
		t.Rows = append(t.Rows, tableRow{Cells: row})
	}
	return t
}
