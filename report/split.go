package report

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"

	"github.com/wirebench/wirebench/schemas"
)

// loadBreakdown reads RUN/metrics/breakdown.parquet when there is one (a run of one model has
// no rows) and the labels of its keys from the manifest's target.models.
func (r *run) loadBreakdown() error {
	path := metricsPath(r.Dir, schemas.KindOf[schemas.Breakdown]())
	rows, err := schemas.ReadFile[schemas.Breakdown](path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read breakdown: %w", err)
	}
	r.Breakdown, r.keyLabels = rows, map[string]string{}
	if r.Manifest == nil {
		return nil
	}
	if cfg, err := r.Manifest.RunConfig(); err == nil {
		for _, m := range cfg.Target.Models {
			if m.LoRA != "" {
				r.keyLabels[m.LoRA] = m.LoRA + " (LoRA of " + m.Name + ")"
			}
		}
	}
	return nil
}

// splitOf returns the breakdown rows of stage, keys labelled for people.
func (r *run) splitOf(stage int32) []schemas.Breakdown {
	var out []schemas.Breakdown
	for _, b := range r.Breakdown {
		if b.Stage == stage {
			if l, ok := r.keyLabels[b.Key]; ok && b.By == schemas.ByModel {
				b.Key = l
			}
			out = append(out, b)
		}
	}
	return out
}

// splitTitles name the breakdown dimensions in the report, in display order.
var splitTitles = []struct{ By, Title, Column string }{
	{schemas.ByModel, "By model", "model"},
	{schemas.ByEndpoint, "By endpoint", "endpoint"},
}

// splitTable is one run's figures by one request column (a model or endpoint mix): a row per
// stage and value; ok is false when no stage is split by it.
func splitTable(r schemas.ProfileRun, by, column string) (t table, ok bool) {
	t = table{Head: []string{"stage", column, "requests", "share", "done/s", "TTFT p50", "TTFT p99", "ITL p99",
		"E2E p50", "E2E p99", "goodput", "errors"}, Text: map[int]bool{1: true}}
	var errs []int64
	names := profileNames(r.Stages)
	for _, s := range r.Stages {
		for _, b := range s.Split {
			if b.By != by {
				continue
			}
			errs = append(errs, b.Errors)
			t.Rows = append(t.Rows, tableRow{Cells: []string{
				stageTitle(s.Stage, s.Name, names), b.Key, strconv.FormatInt(b.Requests, 10), fmtPct(b.Share),
				fmtRate(orNaN(b.CompletionRate)), p50(b.TTFT, schemas.CI{}), p99(b.TTFT, schemas.CI{}), p99(b.ITL, schemas.CI{}), p50(b.E2E, schemas.CI{}), p99(b.E2E, schemas.CI{}),
				fmtPct(orNaN(b.GoodputShare)), strconv.FormatInt(b.Errors, 10),
			}})
		}
	}
	const errorsCol = 11
	t.Bad = func(row, col int) bool { return col == errorsCol && errs[row] > 0 }
	return t, len(t.Rows) > 0
}

// pageSplit is a titled split table of a run.
type pageSplit struct {
	Title string
	Table table
}

// splits returns the run's split tables, one per dimension its stages are split by.
func splits(r schemas.ProfileRun) []pageSplit {
	var out []pageSplit
	for _, d := range splitTitles {
		if t, ok := splitTable(r, d.By, d.Column); ok {
			out = append(out, pageSplit{Title: d.Title, Table: t})
		}
	}
	return out
}

// writeSplitLines writes a stage's split rows under its line of the terminal summary, in its
// columns: the model (or endpoint) indented, its share of the stage's requests as the offered
// load.
func writeSplitLines(w io.Writer, rows []schemas.Breakdown) {
	for _, b := range rows {
		fmt.Fprintf(w, "  %s\t%s\t\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", b.Key, fmtPct(b.Share),
			fmtRate(orNaN(b.CompletionRate)), fmtRate(orNaN(b.OutputTPS)), p50(b.TTFT, schemas.CI{}), p99(b.TTFT, schemas.CI{}), p50(b.TPOT, schemas.CI{}), p99(b.TPOT, schemas.CI{}),
			p99(b.E2E, schemas.CI{}), fmtPct(orNaN(b.GoodputShare)), b.Errors)
	}
}
