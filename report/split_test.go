package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

// TestSplitTable: a stage split by model gets one row per model with its figures, errors marked
// only where there are some; a run without a split gets no table.
func TestSplitTable(t *testing.T) {
	r := schemas.ProfileRun{Stages: []schemas.ProfileStage{{Stage: 0, Name: "low", Split: []schemas.Breakdown{
		{By: schemas.ByModel, Key: "base", Requests: 14, Share: 0.7, Completed: 14, TTFT: dist(14, 20e6, 1.2), GoodputShare: ptr(1.0)},
		{By: schemas.ByModel, Key: "slow (LoRA of base)", Requests: 6, Share: 0.3, Completed: 4, Errors: 2, TTFT: dist(4, 35e6, 1.2), GoodputShare: ptr(0.5)},
	}}}}
	ps := splits(r)
	if len(ps) != 1 || ps[0].Title != "By model" || len(ps[0].Table.Rows) != 2 {
		t.Fatalf("splits = %+v; want one By model table of 2 rows", ps)
	}
	tb := ps[0].Table
	for i, want := range [][]string{{"base", "14", "70.0%"}, {"slow (LoRA of base)", "6", "30.0%"}} {
		if got := tb.Rows[i].Cells[1:4]; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("row %d cells %v; want %v", i, got, want)
		}
	}
	if tb.Bad(0, 11) || !tb.Bad(1, 11) {
		t.Errorf("errors column marked bad: row 0 %v, row 1 %v; want only the row with errors", tb.Bad(0, 11), tb.Bad(1, 11))
	}
	md := string(markdown(schemas.Profile{Runs: []schemas.ProfileRun{r}}, nil))
	if !strings.Contains(md, "### By model in") || !strings.Contains(md, "| low | slow (LoRA of base) | 6 | 30.0% |") {
		t.Errorf("summary.md has no by-model table with the adapter's row:\n%s", md)
	}
	r.Stages[0].Split = nil
	if ps := splits(r); len(ps) != 0 {
		t.Errorf("splits of a run without a mix = %+v; want none", ps)
	}
}

// TestSummarySplitLines: the terminal summary lists a stage's models under its line.
func TestSummarySplitLines(t *testing.T) {
	r := &run{Label: "r", Stages: []schemas.Stage{{Stage: 0, Name: "low", Requests: 20}}, Breakdown: []schemas.Breakdown{
		{Stage: 0, By: schemas.ByModel, Key: "base", Requests: 14, Share: 0.7},
		{Stage: 0, By: schemas.ByModel, Key: "slow", Requests: 6, Share: 0.3, Errors: 2},
	}, keyLabels: map[string]string{"slow": "slow (LoRA of base)"}}
	var b strings.Builder
	if err := writeSummary(&b, []*run{r}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "low ") })
	if i < 0 || i+2 >= len(lines) || !strings.HasPrefix(lines[i+1], "  base ") || !strings.Contains(lines[i+1], "70.0%") ||
		!strings.HasPrefix(lines[i+2], "  slow (LoRA of base) ") || !strings.HasSuffix(strings.TrimSpace(lines[i+2]), " 2") {
		t.Errorf("summary:\n%s\nwant the stage line followed by base (70.0%%) and slow (LoRA of base) with its 2 errors", b.String())
	}
}
