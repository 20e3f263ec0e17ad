package search

import (
	"fmt"
	"strings"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// Markdown is DIR/summary.md: the search's settings, one row per step and, last, the sentence.
func Markdown(rec *schemas.SearchRecord) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Search: %s\n\n", rec.Config)
	fmt.Fprintf(&b, "Highest %s rate between %s and %s req/s with goodput ≥ %g%% under the SLOs (%s), to %g%%; steps of %v.\n\n",
		rec.Arrival, Rate(rec.MinRate), Rate(rec.MaxRate), 100*rec.Goodput, rec.SLO, 100*rec.Precision, fmtDur(rec.StepNs))
	b.WriteString("| step | rate (req/s) | verdict | goodput | TTFT p50 (ms) | TTFT p99 (ms) | E2E p99 (ms) | why this rate | verdict reason |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range rec.Steps {
		fmt.Fprintf(&b, "| [%d](%s/) | %s | %s | %s | %s | %s | %s | %s | %s |\n", s.Index, s.Dir, Rate(s.Rate), s.Verdict,
			pct(s.GoodputShare), ms(s.TTFTP50Ns), ms(s.TTFTP99Ns), ms(s.E2EP99Ns), s.Why, s.Reason)
	}
	b.WriteString("\n")
	for _, n := range rec.Notes {
		fmt.Fprintf(&b, "- Note: %s\n", n)
	}
	if len(rec.Notes) > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Each step is a run directory: `wirebench report DIR/step-NN` draws it.\n\n%s.\n", rec.Capacity)
	return b.String()
}

func fmtDur(ns int64) string { return fmt.Sprint(time.Duration(ns)) }
