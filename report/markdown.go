package report

import (
	"fmt"
	"strings"

	"github.com/wirebench/wirebench/schemas"
)

// markdown renders summary.md: GitHub-flavoured Markdown for pull requests and wikis, with the
// PNG charts (relative links, so the report directory can be copied as a whole).
func markdown(p schemas.Profile, charts []*chart) []byte {
	var b strings.Builder
	labels := make([]string, len(p.Runs))
	for i, r := range p.Runs {
		labels[i] = "`" + r.Label + "`"
	}
	fmt.Fprintf(&b, "# wirebench report: %s\n\n", strings.Join(labels, " vs "))
	for _, r := range p.Runs {
		name := ""
		if len(p.Runs) > 1 {
			name = "`" + r.Label + "` "
		}
		fmt.Fprintf(&b, "%s **%strust %s:** %s\n\n", levelMark(r.Trust.Level), name, r.Trust.Level, mdCell(r.Trust.Sentence))
	}
	mdRuns(&b, p.Runs)
	mdAdvice(&b, p.Runs)
	for i, c := range p.Comparisons {
		fmt.Fprintf(&b, "\n## %s (ratios B / A)\n\n", c.Label)
		fmt.Fprintf(&b, "Headline: max done/s %s, max out tok/s %s, max goodput/s %s, saturation done/s %s.\n\n",
			fmtRatio(c.Headline["max_completion_rate"]), fmtRatio(c.Headline["max_output_tps"]),
			fmtRatio(c.Headline["max_goodput_rate"]), fmtRatio(c.Headline["saturation_rate"]))
		mdTable(&b, comparisonTable(p.Comparisons[i]))
	}
	mdCharts(&b, charts)
	mdStages(&b, p.Runs)
	b.WriteString("\nDurations are exact nearest-rank percentiles over each stage's requests. A bracket of two durations after one is its 95% interval, sampling and the client's own error together: in 40.3ms [37.9ms, 42.8ms], the interval is built so that 95 times in 100 it holds the stage's true percentile (what many runs of the same load would give). Where too few values lie beyond a percentile for an interval, a bracket of offsets is the client's measurement bound alone: 40.3ms [-2.60ms, +1.80ms] means the true percentile lies between 37.7ms and 42.1ms; a bound too small to change the digits shown is left out (the measurement-quality table gives every stage's widest). Full figures: `profile.json`, `stages.csv`; interactive page: `index.html`.\n")
	return []byte(b.String())
}

// mdRuns writes the table of the runs, then a warning for each incomplete run and outage.
func mdRuns(b *strings.Builder, runs []schemas.ProfileRun) {
	b.WriteString("| run | host | CPUs | status | max done/s | max out tok/s | max goodput/s | saturation | client-bound stages |\n")
	b.WriteString("|---|---|---:|---|---:|---:|---:|---|---|\n")
	for _, r := range runs {
		sat := "not reached"
		if h := r.Headline; h.SaturationStage != nil {
			sat = fmt.Sprintf("stage %s at %s done/s", saturationLabel(r), fmtRate(orNaN(h.SaturationRate)))
		}
		cb := "none"
		if n := len(r.Headline.ClientBoundStages); n > 0 {
			var ls []string
			for _, i := range r.Headline.ClientBoundStages {
				ls = append(ls, profileTitle(r, i))
			}
			cb = fmt.Sprintf("**%d** (%s)", n, strings.Join(ls, ", "))
		}
		fmt.Fprintf(b, "| `%s` | %s | %d | %s | %s | %s | %s | %s | %s |\n", r.Label, mdCell(r.Host), r.CPUs, mdCell(r.Status),
			fmtRate(orNaN(r.Headline.MaxCompletionRate)), fmtRate(orNaN(r.Headline.MaxOutputTPS)), fmtRate(orNaN(r.Headline.MaxGoodputRate)), sat, cb)
	}
	for _, r := range runs {
		if len(r.Missing) > 0 {
			fmt.Fprintf(b, "\n> [!WARNING]\n> Run `%s` is incomplete: %s\n", r.Label, mdCell(strings.Join(r.Missing, "; ")))
		}
		for _, o := range r.Outages {
			fmt.Fprintf(b, "\n> [!WARNING]\n> Run `%s`: %s\n", r.Label, mdCell(o.String()))
		}
	}
}

// mdAdvice writes the stages to read with care, when there are any.
func mdAdvice(b *strings.Builder, runs []schemas.ProfileRun) {
	var advice []string
	for _, r := range runs {
		for _, s := range r.Stages {
			if s.Quality.Advice != "" {
				prefix := ""
				if len(runs) > 1 {
					prefix = "`" + r.Label + "`: "
				}
				advice = append(advice, prefix+s.Quality.Advice)
			}
		}
	}
	if len(advice) > 0 {
		b.WriteString("\n> [!CAUTION]\n> **Stages to read with care**: a stage that measured nothing, or figures the client's measurement error or the load it sent may have shaped.\n>\n")
		for _, a := range advice {
			b.WriteString("> - " + a + "\n")
		}
	}
}

// mdCharts writes the charts, each section under its heading.
func mdCharts(b *strings.Builder, charts []*chart) {
	section := ""
	for _, c := range charts {
		if c.Section != section {
			section = c.Section
			fmt.Fprintf(b, "\n## %s\n\n", sectionTitles[section])
		}
		fmt.Fprintf(b, "![%s](%s.png)\n", c.Title, c.ID)
	}
}

// mdStages writes each run's stage table, its split tables and its measurement quality.
func mdStages(b *strings.Builder, runs []schemas.ProfileRun) {
	for _, r := range runs {
		fmt.Fprintf(b, "\n## Stages of `%s`\n\n", r.Label)
		mdTable(b, stageTable(r))
		for _, sp := range splits(r) {
			fmt.Fprintf(b, "\n### %s in `%s`\n\n", sp.Title, r.Label)
			mdTable(b, sp.Table)
		}
		fmt.Fprintf(b, "\n### Measurement quality of `%s`\n\n", r.Label)
		mdTable(b, qualityTable(r))
	}
}

var sectionTitles = map[string]string{
	"profiles":   "Latency profiles",
	"throughput": "Throughput and goodput",
	"breakdown":  "Queue, prefill and decode",
	"timeline":   "Latency over time",
	"quality":    "Measurement quality",
}

func mdTable(b *strings.Builder, t table) {
	b.WriteString("|")
	for _, h := range t.Head {
		b.WriteString(" " + mdCell(h) + " |")
	}
	b.WriteString("\n|")
	for i := range t.Head {
		if i == 0 || t.HeadClass(i) != "" { // names and text left, figures right
			b.WriteString("---|")
		} else {
			b.WriteString("---:|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		b.WriteString("|")
		for i, c := range r.Cells {
			c = mdCell(c)
			if r.Level != "" && r.Level != schemas.TrustGreen && i == 0 {
				c = levelMark(r.Level) + " **" + c + "**"
			}
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n")
	}
}

// mdCell escapes a table cell: pipes and newlines would break the table.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
