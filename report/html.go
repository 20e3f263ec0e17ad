package report

import (
	"bytes"
	"fmt"
	"html/template"
	"strings"

	"github.com/wirebench/wirebench/schemas"
)

// page is the data of index.html.
type page struct {
	Title    string
	Profile  schemas.Profile
	Trust    []pageTrust
	Sections []pageSection
	Advice   []string
	// AdviceLevel is the worst trust level of the stages with advice: the advice box is red
	// only when a stage's trust is.
	AdviceLevel string
	Compare     []pageComparison
	Runs        []pageRun
}

// pageTrust is one run's trust banner.
type pageTrust struct {
	Name string // the run label with several runs, else empty
	schemas.ProfileTrust
}

type pageSection struct {
	ID, Title string
	Charts    []pageChart
}

type pageChart struct {
	ID, Title, Caption string
	SVG                template.HTML
	Wide               bool
}

type pageComparison struct {
	Label    string
	Headline string
	Table    table
}

type pageRun struct {
	schemas.ProfileRun
	Stages  table
	Splits  []pageSplit // by model, by endpoint
	Quality table
}

// indexHTML renders index.html: one self-contained page (inline CSS and SVG, no script, no
// external resource), so it opens from disk or from an artifact store without network.
func indexHTML(p schemas.Profile, charts []*chart) ([]byte, error) {
	pg := page{Profile: p}
	labels := make([]string, len(p.Runs))
	for i, r := range p.Runs {
		labels[i] = r.Label
		t := pageTrust{ProfileTrust: r.Trust}
		if len(p.Runs) > 1 {
			t.Name = r.Label + " "
		}
		pg.Trust = append(pg.Trust, t)
		pg.Runs = append(pg.Runs, pageRun{ProfileRun: r, Stages: stageTable(r), Splits: splits(r), Quality: qualityTable(r)})
		for _, s := range r.Stages {
			if s.Quality.Advice != "" {
				a := s.Quality.Advice
				if len(p.Runs) > 1 {
					a = r.Label + ": " + a
				}
				pg.Advice = append(pg.Advice, a)
				if pg.AdviceLevel == "" || levelRank[s.Quality.Trust] > levelRank[pg.AdviceLevel] {
					pg.AdviceLevel = s.Quality.Trust
				}
			}
		}
	}
	pg.Title = "wirebench report: " + strings.Join(labels, " vs ")
	for _, c := range p.Comparisons {
		pg.Compare = append(pg.Compare, pageComparison{Label: c.Label + " (ratios B / A)",
			Headline: fmt.Sprintf("max done/s %s, max out tok/s %s, max goodput/s %s, saturation done/s %s",
				fmtRatio(c.Headline["max_completion_rate"]), fmtRatio(c.Headline["max_output_tps"]),
				fmtRatio(c.Headline["max_goodput_rate"]), fmtRatio(c.Headline["saturation_rate"])),
			Table: comparisonTable(c)})
	}
	for _, c := range charts {
		if n := len(pg.Sections); n == 0 || pg.Sections[n-1].ID != c.Section {
			pg.Sections = append(pg.Sections, pageSection{ID: c.Section, Title: sectionTitles[c.Section]})
		}
		s := &pg.Sections[len(pg.Sections)-1]
		// The SVG is produced by gonum/plot from our own numbers and labels; labels come from
		// the run's config (stage names), which html/template cannot escape inside trusted
		// HTML, and the SVG writer (gonum vgsvg) escapes every text with html.EscapeString.
		s.Charts = append(s.Charts, pageChart{ID: c.ID, Title: c.Title, Caption: c.Caption,
			SVG: template.HTML(c.SVG), Wide: c.Section == "timeline" || c.Section == "quality"})
	}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, pg); err != nil {
		return nil, fmt.Errorf("render index.html: %w", err)
	}
	return buf.Bytes(), nil
}

var pageTemplate = template.Must(template.New("index").Funcs(template.FuncMap{"rate": func(p *float64) string { return fmtRate(orNaN(p)) }, "saturation": saturationLabel}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bad: #c9190b; --badbg: #fdecea; --warn: #8a5a00; --warnbg: #fff1d6; --note: #eaf2fb; }
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; color: var(--fg); margin: 0 auto; max-width: 1500px; padding: 16px 24px 48px; line-height: 1.4; }
h1 { font-size: 1.6em; margin: 0.2em 0 0.4em; }
h2 { font-size: 1.25em; border-bottom: 1px solid var(--line); padding-bottom: 4px; margin-top: 1.6em; }
h3 { font-size: 1.05em; margin-bottom: 0.4em; }
.muted { color: var(--muted); }
nav a { margin-right: 14px; color: #0969da; text-decoration: none; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(min(560px, 100%), 1fr)); gap: 18px; }
figure.chart { margin: 0; border: 1px solid var(--line); border-radius: 6px; padding: 8px; background: #fff; min-width: 0; }
figure.chart.wide { grid-column: 1 / -1; max-width: 1100px; }
figure.chart svg { width: 100%; height: auto; display: block; }
figure.chart svg text { font-family: "Liberation Sans", Arial, Helvetica, sans-serif !important; }
figure.chart svg .hover > :hover { fill-opacity: 0.18; }
figcaption { font-size: 0.85em; color: var(--muted); margin-top: 4px; }
table { border-collapse: collapse; font-size: 0.82em; margin: 6px 0 14px; }
th, td { border: 1px solid var(--line); padding: 3px 6px; text-align: right; }
td { white-space: nowrap; }
th { background: #f6f8fa; vertical-align: bottom; }
td.wrap { white-space: normal; min-width: 10em; }
td.text { white-space: normal; }
.wrap, .text, td:first-child, th:first-child { text-align: left; }
td.bad { color: var(--bad); font-weight: bold; }
tr.bad td { color: var(--bad); background: var(--badbg); }
tr.bad td:first-child { font-weight: bold; }
tr.warn td { color: var(--warn); background: var(--warnbg); }
tr.note td { background: var(--note); }
.advice { border-left: 4px solid; padding: 8px 14px; margin: 12px 0; }
.advice.red { border-color: var(--bad); background: var(--badbg); }
.advice.amber { border-color: #bf8700; background: var(--warnbg); }
.advice li { margin: 4px 0; }
.trust { border-left: 8px solid; padding: 10px 14px; margin: 10px 0; font-size: 1.05em; }
.trust.green { border-color: #2da44e; background: #dafbe1; }
.trust.amber { border-color: #bf8700; background: var(--warnbg); }
.trust.red { border-color: var(--bad); background: var(--badbg); }
.scroll { overflow-x: auto; max-width: 100%; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{range .Trust}}<div class="trust {{.Level}}"><strong>{{.Name}}trust {{.Level}}:</strong> {{.Sentence}}</div>
{{end}}<nav>{{range .Sections}}<a href="#{{.ID}}">{{.Title}}</a>{{end}}<a href="#tables">Tables</a></nav>
<div class="scroll"><table id="runs">
<tr><th>run</th><th>host</th><th>CPUs</th><th>status</th><th>max done/s</th><th>max out tok/s</th><th>max goodput/s</th><th>saturation</th><th>client-bound stages</th></tr>
{{range .Profile.Runs}}<tr{{if eq .Trust.Level "red"}} class="bad"{{else if eq .Trust.Level "amber"}} class="warn"{{end}}><td>{{.Label}}</td><td>{{.Host}}</td><td>{{.CPUs}}</td><td{{if eq .Status "failed"}} class="bad"{{end}}>{{.Status}}{{range .Missing}}<br>missing: {{.}}{{end}}{{range .Outages}}<br>{{.}}{{end}}</td><td>{{rate .Headline.MaxCompletionRate}}</td><td>{{rate .Headline.MaxOutputTPS}}</td><td>{{rate .Headline.MaxGoodputRate}}</td><td>{{if .Headline.SaturationStage}}stage {{saturation .}} at {{rate .Headline.SaturationRate}} done/s{{else}}not reached{{end}}</td><td>{{len .Headline.ClientBoundStages}}</td></tr>
{{end}}</table></div>
{{if .Advice}}<div class="advice {{.AdviceLevel}}" id="advice"><strong>Stages to read with care: a stage that measured nothing, or figures the client's measurement error or the load it sent may have shaped.</strong><ul>{{range .Advice}}<li>{{.}}</li>{{end}}</ul></div>
{{end}}
{{range .Compare}}<h2>{{.Label}}</h2><p>Headline: {{.Headline}}.</p>{{template "table" .Table}}{{end}}
{{range .Sections}}<h2 id="{{.ID}}">{{.Title}}</h2>
<div class="charts">{{range .Charts}}<figure class="chart{{if .Wide}} wide{{end}}" id="chart-{{.ID}}" data-chart="{{.ID}}">{{.SVG}}<figcaption><strong>{{.Title}}.</strong> {{.Caption}}</figcaption></figure>
{{end}}</div>
{{end}}
<h2 id="tables">Tables</h2>
{{range .Runs}}<h3>Stages of {{.Label}}</h3>{{template "table" .Stages}}{{$l := .Label}}{{range .Splits}}<h3>{{.Title}} in {{$l}}</h3>{{template "table" .Table}}{{end}}<h3>Measurement quality of {{.Label}}</h3>{{template "table" .Quality}}{{end}}
<p class="muted">Durations are exact nearest-rank percentiles over each stage's requests. A bracket of two durations after one is its 95% interval, sampling and the client's own error together: in 40.3ms [37.9ms, 42.8ms], the interval is built so that 95 times in 100 it holds the stage's true percentile (what many runs of the same load would give). Where too few values lie beyond a percentile for an interval, a bracket of offsets is the client's measurement bound alone: 40.3ms [-2.60ms, +1.80ms] means the true percentile lies between 37.7ms and 42.1ms. A bound too small to change the digits shown is left out (the quality table gives every stage's widest). Point at a dot or bar of a chart for its values. Rates are per second over each stage's window. Machine-readable: profile.json, stages.csv. Generated by wirebench report.</p>
</body>
</html>
{{define "table"}}<div class="scroll"><table><tr>{{range $j, $h := .Head}}<th{{with $.HeadClass $j}} class="{{.}}"{{end}}>{{$h}}</th>{{end}}</tr>
{{range $i, $r := .Rows}}<tr{{with $r.Class}} class="{{.}}"{{end}}>{{range $j, $c := $r.Cells}}<td{{with $.CellClass $i $j}} class="{{.}}"{{end}}>{{$c}}</td>{{end}}</tr>
{{end}}</table></div>{{end}}`))
