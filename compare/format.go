package compare

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// Pct formats a change as a signed percentage with a true minus sign: +5.0%, −12.4%.
func Pct(v float64) string {
	return strings.Replace(fmt.Sprintf("%+.1f%%", v*100), "-", "−", 1)
}

// Interval formats a change's interval: [−15.1%, −9.6%]; – without one, and ±∞ for an open end.
func Interval(lo, hi *float64) string {
	if lo == nil && hi == nil {
		return "–"
	}
	end := func(v *float64, inf string) string {
		if v == nil {
			return inf
		}
		return Pct(*v)
	}
	return "[" + end(lo, "−∞") + ", " + end(hi, "+∞") + "]"
}

// Dur formats a nullable duration in ns with three significant digits; – for null.
func Dur(ns *int64) string {
	if ns == nil {
		return "–"
	}
	d := time.Duration(*ns)
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "µs"}} {
		if d >= u.unit || -d >= u.unit {
			return strings.TrimRight(fmt.Sprintf("%.3g", float64(d)/float64(u.unit)), ".") + u.name
		}
	}
	return fmt.Sprintf("%dns", *ns)
}

func ratioText(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("×%.3f", *v)
}

// StageTitle names a stage: 1 (peak).
func StageTitle(s schemas.CompareStage) string {
	if s.Name == "" {
		return fmt.Sprint(s.Stage)
	}
	return fmt.Sprintf("%d (%s)", s.Stage, s.Name)
}

func pairTitle(p schemas.ComparePair) string {
	return fmt.Sprintf("stage %s vs stage %s, paired by %s", StageTitle(p.New), StageTitle(p.Base), p.PairedBy)
}

func marked(c schemas.CompareChange) string {
	switch {
	case c.Significant:
		return "significant"
	case c.Note != "":
		return c.Note
	}
	return ""
}

func changeText(c schemas.CompareChange) string {
	if c.Change == nil {
		return "–"
	}
	return Pct(*c.Change)
}

// shown reports whether a change has a row: either run has a value.
func shown(c schemas.CompareChange) bool { return c.BaseNs != nil || c.NewNs != nil }

func throughputLine(p schemas.ComparePair) string {
	parts := make([]string, 0, len(Throughputs))
	for _, f := range Throughputs {
		parts = append(parts, f.Title+" "+ratioText(p.Ratios[f.Key]))
	}
	return "NEW / BASE: " + strings.Join(parts, ", ")
}

func unmatchedLine(c schemas.Comparison) string {
	var parts []string
	for _, u := range c.Unmatched {
		parts = append(parts, fmt.Sprintf("%s stage %s", strings.ToUpper(u.Run), StageTitle(u)))
	}
	return "not compared (no partner): " + strings.Join(parts, ", ")
}

func header(c schemas.Comparison) string {
	if c.Method == schemas.CompareBetween {
		return fmt.Sprintf("changes are NEW / BASE − 1 of the sets' geometric means with %g%% intervals between runs (Student t over %d and %d runs: sampling, the client's own error and what changes from run to run); significant: %s",
			c.Level*100, len(c.Base.Runs), len(c.New.Runs), c.Family)
	}
	return fmt.Sprintf("changes are NEW / BASE − 1 with %g%% intervals (sampling and the client's own error within each run, not changes between runs as a whole; %d bootstrap replicates a run); significant: %s",
		c.Level*100, c.Replicates, c.Family)
}

// runTitle names a run, or a set with its number of runs.
func runTitle(r schemas.CompareRun) string {
	if len(r.Runs) > 0 {
		return fmt.Sprintf("%s (%d runs)", r.Label, len(r.Runs))
	}
	return r.Label
}

// Text writes the comparison for a terminal.
func Text(w io.Writer, c schemas.Comparison) error {
	var b strings.Builder
	fmt.Fprintf(&b, "wirebench compare: NEW %s vs BASE %s\n", runTitle(c.New), runTitle(c.Base))
	fmt.Fprintf(&b, "BASE %s: trust %s\nNEW  %s: trust %s\n", runTitle(c.Base), c.Base.Trust, runTitle(c.New), c.New.Trust)
	fmt.Fprintln(&b, header(c))
	for _, p := range c.Pairs {
		fmt.Fprintf(&b, "\n%s\n  %s\n", pairTitle(p), throughputLine(p))
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, ch := range p.Changes {
			if shown(ch) {
				fmt.Fprintf(tw, "  %s %s\t%s\t%s\t%s → %s\t%s\n", title(ch.Metric), ch.Percentile, changeText(ch),
					Interval(ch.Lo, ch.Hi), Dur(ch.BaseNs), Dur(ch.NewNs), marked(ch))
			}
		}
		tw.Flush()
	}
	if len(c.Unmatched) > 0 {
		fmt.Fprintf(&b, "\n%s\n", unmatchedLine(c))
	}
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "\nnote: %s\n", n)
	}
	if c.Gate != nil {
		b.WriteString("\n" + gateText(c.Gate, c.Level) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func title(metric string) string {
	if i := metricIndex(metric); i >= 0 {
		return Metrics[i].Title
	}
	return metric
}

// gateText is the gate's verdict and every failure, one a line.
func gateText(g *schemas.CompareGate, level float64) string {
	s := fmt.Sprintf("gate %s: %s (%d checks, each at level %s)", g.Verdict, strings.Join(g.Rules, " "), g.Tests, gateLevel(g, level))
	for _, f := range g.Failures {
		s += "\n  " + f.Verdict + ": " + f.Reason
	}
	return s
}

// gateLevel is the level of each of the gate's checks: 1 − level over the number of checks.
func gateLevel(g *schemas.CompareGate, level float64) string {
	return fmt.Sprintf("%.2g", (1-level)/math.Max(float64(g.Tests), 1))
}

// Markdown writes the comparison for a pull-request comment.
func Markdown(w io.Writer, c schemas.Comparison) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### wirebench compare: %s vs %s\n\n", md(runTitle(c.New)), md(runTitle(c.Base)))
	fmt.Fprintf(&b, "| | run | trust |\n|---|---|---|\n| BASE | %s | %s |\n| NEW | %s | %s |\n\n",
		md(runTitle(c.Base)), c.Base.Trust, md(runTitle(c.New)), c.New.Trust)
	if c.Gate != nil {
		fmt.Fprintf(&b, "**Gate: %s** (%s; %d checks, each at level %s)\n\n", c.Gate.Verdict, md(strings.Join(c.Gate.Rules, " ")), c.Gate.Tests, gateLevel(c.Gate, c.Level))
		for _, f := range c.Gate.Failures {
			fmt.Fprintf(&b, "- %s: %s\n", f.Verdict, md(f.Reason))
		}
		if len(c.Gate.Failures) > 0 {
			b.WriteString("\n")
		}
	}
	fmt.Fprintf(&b, "%s.\n", strings.ToUpper(header(c)[:1])+header(c)[1:])
	for _, p := range c.Pairs {
		fmt.Fprintf(&b, "\n#### %s\n\n%s\n\n", md(pairTitle(p)), md(throughputLine(p)))
		b.WriteString("| percentile | BASE | NEW | change | 95% interval | |\n|---|---:|---:|---:|---|---|\n")
		for _, ch := range p.Changes {
			if !shown(ch) {
				continue
			}
			m := marked(ch)
			if ch.Significant {
				m = "**significant**"
			}
			fmt.Fprintf(&b, "| %s %s | %s | %s | %s | %s | %s |\n", title(ch.Metric), ch.Percentile, Dur(ch.BaseNs), Dur(ch.NewNs),
				changeText(ch), Interval(ch.Lo, ch.Hi), m)
		}
	}
	if len(c.Unmatched) > 0 {
		fmt.Fprintf(&b, "\n%s\n", md(unmatchedLine(c)))
	}
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "\n> %s\n", md(n))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// md escapes the characters that would break a Markdown table cell or start markup.
func md(s string) string {
	return strings.NewReplacer("|", `\|`, "*", `\*`, "_", `\_`, "<", "&lt;", ">", "&gt;", "\n", " ").Replace(s)
}
