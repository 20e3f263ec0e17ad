package report

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"

	"github.com/wirebench/wirebench/schemas"
)

// Summary writes the terminal summary of the runs in the given directories: per run a header,
// the trust line (Trust), one line per stage with the headline figures (offered load, send and
// completion rates, output tokens/s, TTFT and TPOT p50/p99 and E2E p99 with their bounds,
// goodput, errors), the saturation stage and the failed verdicts marked, and a warning line
// for every stage whose figures need care. `wirebench run` and `wirebench report` print it to
// stdout.
func Summary(w io.Writer, runs ...string) error {
	rs, err := loadRuns(runs, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	return writeSummary(w, rs)
}

func writeSummary(w io.Writer, runs []*run) error {
	var b strings.Builder
	for i, r := range runs {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString("run " + r.Label)
		if m := r.Manifest; m != nil {
			fmt.Fprintf(&b, " (host %s, %d CPUs, %s)", m.Host, m.CPUs, m.Status)
			if len(m.Missing) > 0 {
				fmt.Fprintf(&b, "; missing: %s", strings.Join(m.Missing, "; "))
			}
		}
		b.WriteString("\n")
		if m := r.Manifest; m != nil {
			for _, o := range m.Outages {
				b.WriteString(o.String() + "\n")
			}
		}
		level, sentence := Trust(r.Stages)
		fmt.Fprintf(&b, "trust %s: %s\n", level, sentence)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "stage\toffered\tsent/s\tdone/s\tout tok/s\tTTFT p50\tTTFT p99\tTPOT p50\tTPOT p99\tE2E p99\tgoodput\terrors\t")
		names := namesOf(r.Stages)
		for j := range r.Stages {
			s := &r.Stages[j]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n",
				stageTitle(s.Stage, s.Name, names), offered(s.Mode, s.TargetRate, s.Concurrency), fmtRate(orNaN(s.AchievedRate)),
				fmtRate(orNaN(s.CompletionRate)), fmtRate(orNaN(s.OutputTPS)), p50(s.TTFT, s.TTFTCI), p99(s.TTFT, s.TTFTCI), p50(s.TPOT, s.TPOTCI), p99(s.TPOT, s.TPOTCI), p99(s.E2E, s.E2ECI),
				fmtPct(orNaN(s.GoodputShare)), s.Errors, stageNotes(s))
			writeSplitLines(tw, r.splitOf(s.Stage))
		}
		tw.Flush()
		if hasLatency(r.Stages) {
			b.WriteString(intervalNote + "\n")
		}
		cpus := 0
		if r.Manifest != nil {
			cpus = r.Manifest.CPUs
		}
		for j := range r.Stages {
			s := &r.Stages[j]
			if a := advice(s, stageTitle(s.Stage, s.Name, names), cpus); a != "" {
				b.WriteString("warning: " + a + "\n")
			}
		}
	}
	if len(runs) > 1 {
		p := buildProfile(runs, ".")
		b.WriteString("\n")
		for _, c := range p.Comparisons {
			fmt.Fprintf(&b, "%s: max done/s %s, max out tok/s %s, max goodput/s %s, saturation done/s %s\n", c.Label,
				fmtRatio(c.Headline["max_completion_rate"]), fmtRatio(c.Headline["max_output_tps"]),
				fmtRatio(c.Headline["max_goodput_rate"]), fmtRatio(c.Headline["saturation_rate"]))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// stageNotes marks the saturation stage and the failed verdicts on a stage line.
func stageNotes(s *schemas.Stage) string {
	var notes []string
	if s.Saturated {
		notes = append(notes, "<- saturation")
	}
	if s.Overloaded {
		notes = append(notes, "OVERLOADED")
	}
	if s.ClientBound {
		notes = append(notes, "CLIENT-BOUND")
	}
	if !s.LoadDelivered {
		notes = append(notes, "LOAD NOT DELIVERED")
	}
	if s.ServerDisturbed {
		notes = append(notes, "SERVER DISTURBED")
	}
	if s.ConnectionSpiral {
		notes = append(notes, "CONNECTION SPIRAL")
	}
	if s.Cancelled > 0 {
		notes = append(notes, fmt.Sprintf("%d cancelled by the client", s.Cancelled))
	}
	if s.DocumentsPerS != nil {
		notes = append(notes, documentsNote(*s.DocumentsPerS))
	}
	return strings.Join(notes, " ")
}

// intervalNote reads the brackets of the terminal summary.
const intervalNote = "[lo, hi]: the percentile's 95% interval, sampling and client error together; " +
	"[-a, +b]: the client's bound alone, where too few values lie beyond the percentile for an interval (n too small) " +
	"or the stage is OVERLOADED (its queue grew: its percentiles grow with its length and have no interval)"

// hasLatency reports whether some stage has a latency to show.
func hasLatency(stages []schemas.Stage) bool {
	for i := range stages {
		if stages[i].TTFT.Count > 0 {
			return true
		}
	}
	return false
}

// documentsNote is a stage note of the ranking and embedding APIs, which generate no tokens: the
// documents they scored or embedded per second.
func documentsNote(perS float64) string { return fmtRate(perS) + " documents/s" }
