package report

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/wirebench/wirebench/schemas"
)

// runSuffix is " (run-a)" with several runs, else empty.
func runSuffix(r *run, multi bool) string {
	if multi {
		return " (" + r.Label + ")"
	}
	return ""
}

// sameColor returns n copies of c.
func sameColor(c color.Color, n int) []color.Color {
	cs := make([]color.Color, n)
	for i := range cs {
		cs[i] = c
	}
	return cs
}

// fitStages fits the stage axis to the data area of p drawn on c: the first pass guesses the
// width from the whole canvas, the second measures it with the first pass's labels in place.
func fitStages(p *plot.Plot, ax stageAxis, c draw.Canvas) {
	ax.apply(p, c.Size().X)
	ax.apply(p, p.DataCanvas(c).Size().X)
}

// breakdownChart draws the mean queue, prefill and decode time per stage as stacked bars.
func breakdownChart(idx int, r *run, multi bool) *chart {
	title := "Where the time goes: mean queue + prefill + decode" + runSuffix(r, multi)
	p := newPlot(title, "stage", "mean per request")
	hs := &hoverSet{}
	parts := []struct {
		name string
		get  func(*schemas.Stage) schemas.Dist
		c    color.Color
	}{
		{"queue", func(s *schemas.Stage) schemas.Dist { return s.Queue }, rgb(0xb07aa1)},
		{"prefill", func(s *schemas.Stage) schemas.Dist { return s.Prefill }, rgb(0x76b7b2)},
		{"decode", func(s *schemas.Stage) schemas.Dist { return s.Decode }, blue},
	}
	n := len(r.Stages)
	w := vg.Points(math.Max(4, math.Min(40, 300/float64(n+1))))
	base := make([]float64, n)
	for _, part := range parts {
		b := &bars{vals: make([]float64, n), base: append([]float64(nil), base...), colors: sameColor(part.c, n),
			titles: make([]string, n), width: w, set: hs}
		for i := range r.Stages {
			s := &r.Stages[i]
			mean := part.get(s).Mean
			b.vals[i] = orNaN(mean) / 1e6
			b.titles[i] = pointTitle(r, false, s, part.name+" mean "+fmtDurOf(mean))
			if mean != nil {
				base[i] += b.vals[i]
			}
		}
		p.Add(b)
		p.Legend.Add(part.name, b)
	}
	p.Y.Tick.Marker = durTicks{}
	p.X.Min, p.X.Max = -0.5, float64(n)-0.5
	p.Y.Min = 0
	p.Y.Max = math.Max(p.Y.Max, 1e-3) * 1.15
	ax := newStageAxis(stageNames(r))
	src := ""
	if n > 0 && r.Stages[0].DecompositionSource != "" {
		src = " Decomposition source: " + r.Stages[0].DecompositionSource + "."
	}
	return &chart{ID: fmt.Sprintf("breakdown-%d", idx+1), Section: "breakdown", Title: title, W: chartW, H: chartH, hover: hs,
		draw:    func(dc draw.Canvas) { fitStages(p, ax, dc); drawPlot(p, dc, hs) },
		Caption: "Mean T_queue, I·T_prefill and N·T_decode per request, stacked." + src}
}

// maxLegend is the most stages a timeline's legend names; with more, it names evenly spaced
// ones (the first and last among them); hovering a stage's span names any.
const maxLegend = 10

// legendStages returns which of n stages the legend names.
func legendStages(n int) map[int]bool {
	named := map[int]bool{}
	if n <= maxLegend {
		for i := range n {
			named[i] = true
		}
		return named
	}
	for k := range maxLegend {
		named[int(math.Round(float64(k*(n-1))/float64(maxLegend-1)))] = true
	}
	return named
}

// timelineChart draws, per 100 ms bucket of the run, TTFT p50/p99 (top) and completions/s
// (bottom), a colour per stage.
func timelineChart(idx int, r *run, multi bool) *chart {
	suffix := runSuffix(r, multi)
	top := newPlot("TTFT over time"+suffix+": p99 solid, p50 dashed", "", "TTFT")
	bot := newPlot("Completions over time"+suffix, "seconds since the first stage started", "completions/s")
	var t0 int64 = math.MaxInt64
	for _, b := range r.Timeseries {
		t0 = min(t0, b.BucketNs)
	}
	n := len(r.Stages)
	var ttft, done []series
	var ys []float64
	named := legendStages(n)
	hs := &hoverSet{}
	topBands, botBands := &hoverBands{set: hs}, &hoverBands{set: hs}
	for i := range r.Stages {
		s := &r.Stages[i]
		x0, x1 := float64(s.StartNs-t0)/1e9, float64(s.EndNs-t0)/1e9
		if i+1 < n {
			x1 = float64(r.Stages[i+1].StartNs-t0) / 1e9
		}
		for _, b := range []*hoverBands{topBands, botBands} {
			b.x0, b.x1 = append(b.x0, x0), append(b.x1, x1)
		}
		topBands.titles = append(topBands.titles, pointTitle(r, false, s, "TTFT p50 "+fmtDurOf(s.TTFT.P50), "p99 "+fmtDurOf(s.TTFT.P99)))
		botBands.titles = append(botBands.titles, pointTitle(r, false, s, fmtRate(orNaN(s.CompletionRate))+" completions/s"))
		p50, p99, cs, sys := timelinePoints(r, s.Stage, t0)
		ys = append(ys, sys...)
		c, name := stageColor(i), ""
		if named[i] {
			name = stageNames(r)[i]
		}
		ttft = append(ttft, series{name: name, pts: p99, color: c, width: 1.3},
			series{pts: p50, color: c, dashes: []vg.Length{vg.Points(3), vg.Points(2)}, width: 1.3})
		done = append(done, series{pts: perSecond(cs), color: c, width: 1.3})
	}
	sc := latencyAxis(&top.Y, ys)
	for _, s := range ttft {
		s.pts = finite(sc.points(s.pts))
		addSeries(top, hs, s)
	}
	for _, s := range done {
		s.pts = finite(s.pts)
		addSeries(bot, hs, s)
	}
	top.Add(topBands)
	bot.Add(botBands)
	sc.fit(top)
	zeroBased(bot)
	return timelineLayout(idx, suffix, top, bot, append([]*plot.Plot{top, bot}, serverPlots(r.Server, t0, suffix, hs)...), hs)
}

// timelinePoints returns a stage's TTFT p50 and p99 and completions per bucket, x in seconds
// since t0, and every TTFT value drawn (for the axis).
func timelinePoints(r *run, stage int32, t0 int64) (p50, p99, cs []point, ys []float64) {
	for _, b := range r.Timeseries {
		if b.Stage != stage {
			continue
		}
		x := float64(b.BucketNs-t0) / 1e9
		if b.TTFTP99Ns != nil {
			p99 = append(p99, point{X: x, Y: ms(*b.TTFTP99Ns)})
			ys = append(ys, ms(*b.TTFTP99Ns))
		}
		if b.TTFTP50Ns != nil {
			p50 = append(p50, point{X: x, Y: ms(*b.TTFTP50Ns)})
			ys = append(ys, ms(*b.TTFTP50Ns))
		}
		cs = append(cs, point{X: x, Y: float64(b.Completions)})
	}
	return p50, p99, cs, ys
}

// timelineLayout stacks the timeline's panels (TTFT, completions, then the server's gauges) on
// one time axis.
func timelineLayout(idx int, suffix string, top, bot *plot.Plot, panels []*plot.Plot, hs *hoverSet) *chart {
	if len(panels) > 2 { // the server's gauges, on the same time axis, below
		bot.X.Label.Text, panels[len(panels)-1].X.Label.Text = "", bot.X.Label.Text
	}
	for _, p := range panels {
		top.X.Max = max(top.X.Max, p.X.Max)
	}
	rows := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		p.X.Min, p.X.Max = top.X.Min, top.X.Max
		rows[i] = []*plot.Plot{p}
	}
	caption := "Per 100 ms bucket: TTFT p50 and p99 of the requests whose first token arrived in it; completions per second over a sliding 1 s window; one colour per stage."
	if len(panels) > 2 {
		caption += " Below, the server's own gauges as capture scraped them from target.metrics_url about once a second (running and waiting requests, KV-cache usage), on the same time axis."
	}
	return &chart{ID: fmt.Sprintf("timeline-%d", idx+1), Section: "timeline", Title: "Latency over time" + suffix,
		W: 9 * vg.Inch, H: vg.Length(2.8*float64(len(panels))) * vg.Inch, hover: hs, Caption: caption,
		draw: func(dc draw.Canvas) {
			t := draw.Tiles{Rows: len(rows), Cols: 1, PadY: vg.Points(8), PadTop: vg.Points(2), PadBottom: vg.Points(2)}
			cs := plot.Align(rows, t, dc)
			for i, p := range panels {
				drawPlot(p, cs[i][0], hs)
			}
		}}
}

// perSecond turns completions per 100 ms bucket into completions/s over a centred 1 s window
// (shorter at the stage's edges), so a chart of a few completions per bucket does not jump
// between 0 and 10/s.
func perSecond(pts []point) []point {
	out := make([]point, len(pts))
	for i := range pts {
		lo, hi := max(0, i-5), min(len(pts), i+5)
		var sum float64
		for _, v := range pts[lo:hi] {
			sum += v.Y
		}
		out[i] = point{X: pts[i].X, Y: sum / (float64(hi-lo) * 0.1)}
	}
	return out
}

// qualityPanel is one panel of the measurement-quality chart.
type qualityPanel struct {
	title  string
	get    func(*schemas.Stage) float64
	show   func(float64) string // the value in a hover title
	limit  float64              // NaN: none
	line   string               // the limit's legend: "limit" (a verdict's) or "advice"
	fails  func(v float64) bool // whether a judged value fails the limit
	judged func(*schemas.Stage) bool
	ticks  plot.Ticker
}

// notJudged is the colour of a bar the verdict does not judge (the client's share of the
// lateness of a stage whose load was sent as planned).
var notJudged = rgb(0xcccccc)

// barColor is a stage's bar colour in panel pn: its trust level's, or notJudged.
func (pn qualityPanel) barColor(s *schemas.Stage) color.Color {
	if pn.judged != nil && !pn.judged(s) {
		return notJudged
	}
	return levelColors[stageLevel(s)]
}

// always judges every stage.
func always(*schemas.Stage) bool { return true }

func showMs(v float64) string  { return fmtDur(int64(math.Round(v * 1e6))) }
func showPct(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + "%" }
func show3(v float64) string   { return strconv.FormatFloat(v, 'f', 3, 64) }
func show2(v float64) string   { return strconv.FormatFloat(v, 'f', 2, 64) }

// shown is show(v), or none for a figure a stage does not have (NaN: null in the files).
func shown(v float64, show func(float64) string) string {
	if math.IsNaN(v) {
		return none
	}
	return show(v)
}

var qualityPanels = []qualityPanel{
	{title: "client uncertainty: widest p50/p90/p99 bound", get: func(s *schemas.Stage) float64 { return orNaN(s.UncertaintyNs) / 1e6 }, show: showMs, limit: math.NaN(), ticks: durTicks{}},
	{title: "lateness: send lag p99", get: func(s *schemas.Stage) float64 { return orNaN(s.SendLag.P99) / 1e6 }, show: showMs, limit: math.NaN(), ticks: durTicks{}},
	{title: "rate fidelity (achieved / planned)", get: func(s *schemas.Stage) float64 { return orNaN(s.RateFidelity) }, show: show3,
		limit: 1 - schemas.MaxRateError, line: "limit", fails: func(v float64) bool { return v < 1-schemas.MaxRateError }, judged: always, ticks: numTicks{}},
	// The share blames someone only for a stage whose load was late.
	{title: "client's share of the lateness (%)", get: func(s *schemas.Stage) float64 { return orNaN(s.LateShareClient) * 100 }, show: showPct,
		limit: schemas.ClientLateShare * 100, line: "limit", fails: func(v float64) bool { return v >= schemas.ClientLateShare*100 },
		judged: func(s *schemas.Stage) bool { return !s.LoadDelivered }, ticks: numTicks{}},
	{title: "exact kernel timestamps (%)", get: func(s *schemas.Stage) float64 { return orNaN(s.ExactShare) * 100 }, show: showPct, limit: math.NaN(), ticks: numTicks{}},
	{title: "worker utilisation ρ (max)", get: func(s *schemas.Stage) float64 { return orNaN(s.WorkerRhoMax) }, show: show2, limit: schemas.AdviceRho, line: "advice", ticks: numTicks{}},
}

// qualityChart draws the measurement-quality panel of one run, per stage: the client's
// uncertainty (the widest bound of a judged percentile), lateness p99 against the planned
// schedule, achieved / planned rate and the client's share of the lateness (the load verdict),
// then the exact-timestamp share and worker utilisation as diagnostics, limits dashed; bars
// take the stage's trust level: red, amber, else neutral blue.
func qualityChart(idx int, r *run, multi bool) *chart {
	hs := &hoverSet{}
	n := len(r.Stages)
	ax := newStageAxis(stageNames(r))
	w := vg.Points(math.Max(3, math.Min(26, 160/float64(n+1))))
	var plots [][]*plot.Plot
	for i, pn := range qualityPanels {
		p := qualityPlot(r, pn, w, hs)
		if i%2 == 0 {
			plots = append(plots, []*plot.Plot{p})
		} else {
			plots[len(plots)-1] = append(plots[len(plots)-1], p)
		}
	}
	return &chart{ID: fmt.Sprintf("quality-%d", idx+1), Section: "quality", Title: "Measurement quality" + runSuffix(r, multi),
		W: 9 * vg.Inch, H: 8 * vg.Inch, hover: hs,
		Caption: "The two verdicts per stage: the client's measurement uncertainty, and lateness and rate against the planned schedule (with the client's share of the lateness); exact timestamps and worker utilisation are diagnostics. Red bars: client-bound, the client kept the load from being sent as planned, or planned requests are missing from the run's files; amber: the load was not sent as planned for a server, connection or busy-machine reason; blue: both verdicts passed. " +
			fmt.Sprintf("Dashed lines: the limit of rate fidelity, %g; the client's share of the lateness, from which a stage sent late blames the client (%g%%: red), or the machine when other processes kept it busy (amber), while a stage sent as planned blames no one (grey bar); advice from ρ %g.", 1-schemas.MaxRateError, schemas.ClientLateShare*100, schemas.AdviceRho),
		draw: func(dc draw.Canvas) {
			t := draw.Tiles{Rows: 3, Cols: 2, PadX: vg.Points(14), PadY: vg.Points(10), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
			cs := plot.Align(plots, t, dc)
			for i := range plots {
				for j := range plots[i] {
					fitStages(plots[i][j], ax, cs[i][j])
				}
			}
			cs = plot.Align(plots, t, dc) // the labels' height may have changed
			for i := range plots {
				for j := range plots[i] {
					drawPlot(plots[i][j], cs[i][j], hs)
				}
			}
		}}
}

// qualityPlot is one panel: a bar per stage in its trust colour, with its limit dashed.
func qualityPlot(r *run, pn qualityPanel, w vg.Length, hs *hoverSet) *plot.Plot {
	p := newPlot(pn.title, "", "")
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.Legend.TextStyle.Font = sans(8.5)
	p.Y.Tick.Marker = pn.ticks
	b := &bars{vals: make([]float64, len(r.Stages)), colors: make([]color.Color, len(r.Stages)), titles: make([]string, len(r.Stages)), width: w, set: hs}
	for j := range r.Stages {
		s := &r.Stages[j]
		b.vals[j], b.colors[j] = pn.get(s), pn.barColor(s)
		b.titles[j] = pointTitle(r, false, s, pn.title+": "+shown(b.vals[j], pn.show))
	}
	p.Add(b)
	if !math.IsNaN(pn.limit) {
		lim := pn.limit
		f := plotter.NewFunction(func(float64) float64 { return lim })
		f.LineStyle.Color, f.LineStyle.Width, f.LineStyle.Dashes = dark, vg.Points(1), []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(f)
		p.Legend.Add(pn.line+" "+strconv.FormatFloat(lim, 'g', -1, 64), f)
		p.Y.Max = math.Max(p.Y.Max, lim)
	}
	p.X.Min, p.X.Max = -0.5, float64(len(r.Stages))-0.5
	p.Y.Min = math.Min(0, p.Y.Min)
	if p.Y.Max <= 0 {
		p.Y.Max = 1
	}
	p.Y.Max *= 1.25
	p.Legend.Left, p.Legend.XOffs = false, -vg.Points(4)
	return p
}
