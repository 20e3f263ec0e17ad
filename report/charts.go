package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/wirebench/wirebench/schemas"
)

// chart is one figure of the report, drawn once to SVG (inlined in index.html) and once to PNG
// (linked from summary.md).
type chart struct {
	ID      string // file name stem and HTML id: ttft, throughput, quality-1, ...
	Section string // profiles, throughput, breakdown, timeline, quality
	Title   string
	Caption string
	W, H    vg.Length
	draw    func(dc draw.Canvas)
	SVG     []byte
	PNG     []byte
}

// pngDPI is the PNG resolution: a 6.4 in wide chart is 768 px.
const pngDPI = 120

// render draws the chart to SVG (without the XML prolog, ready to inline) and PNG.
func (c *chart) render() error {
	sc := vgsvg.New(c.W, c.H)
	c.draw(draw.New(sc))
	var sb bytes.Buffer
	if _, err := sc.WriteTo(&sb); err != nil {
		return fmt.Errorf("draw %s as svg: %w", c.ID, err)
	}
	svg := sb.Bytes()
	if i := bytes.Index(svg, []byte("<svg")); i >= 0 {
		svg = svg[i:]
	}
	c.SVG = svg

	ic := vgimg.NewWith(vgimg.UseWH(c.W, c.H), vgimg.UseDPI(pngDPI), vgimg.UseBackgroundColor(color.White))
	c.draw(draw.New(ic))
	var pb bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: ic}).WriteTo(&pb); err != nil {
		return fmt.Errorf("draw %s as png: %w", c.ID, err)
	}
	c.PNG = pb.Bytes()
	return nil
}

// Colours: Tableau 10, readable on white and for the common colour-vision deficiencies.
var palette = []color.Color{
	rgb(0x4e79a7), rgb(0xf28e2b), rgb(0x59a14f), rgb(0xb07aa1), rgb(0x76b7b2),
	rgb(0xedc948), rgb(0xff9da7), rgb(0x9c755f), rgb(0xbab0ac), rgb(0xe15759),
}

var (
	red         = rgb(0xd62728)
	amber       = rgb(0xf28e2b)
	okBlue      = rgb(0x4e79a7)
	grey        = rgb(0x888888)
	levelColors = map[string]color.Color{Green: okBlue, Amber: amber, Red: red}
	pctColors   = []color.Color{rgb(0x4e79a7), rgb(0xf28e2b), rgb(0xe15759)} // p50, p90, p99
	pctDashes   = [][]vg.Length{{vg.Points(2), vg.Points(2)}, {vg.Points(6), vg.Points(3)}, nil}
)

func rgb(v uint32) color.Color {
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff}
}

func colorAt(i int) color.Color { return palette[i%len(palette)] }

// sans is Liberation Sans (embedded in gonum/plot) at the given size in points.
func sans(size float64) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: vg.Points(size)}
}

// ticks are gonum's default ticks labelled with the shortest decimal of ten significant digits
// (5000, not 5000.00; 1.2, not 1.2000000000000002).
type ticks struct{}

func (ticks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'g', 10, 64)
		}
	}
	return ts
}

// newPlot returns a plot with the report's look: title, axis labels, grid, legend top left.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = sans(13)
	p.Title.TextStyle.Font.Weight = xfont.WeightBold
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text, p.Y.Label.Text = x, y
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans(11)
		a.Tick.Label.Font = sans(9.5)
		a.Tick.Marker = ticks{}
		a.Color, a.Tick.Color = grey, grey
	}
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{0xe4}
	g.Horizontal.Color = color.Gray{0xe4}
	p.Add(g)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font = sans(9.5)
	p.Legend.Padding = vg.Points(2.5)
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), -vg.Points(4)
	p.Legend.ThumbnailWidth = vg.Points(22)
	return p
}

// line adds a line with points to p and to its legend (when name is not empty).
func line(p *plot.Plot, name string, xys plotter.XYs, c color.Color, dashes []vg.Length, width float64) {
	if len(xys) == 0 {
		return
	}
	l, s, err := plotter.NewLinePoints(xys)
	if err != nil { // only for NaN or Inf, which the callers filter out
		return
	}
	l.LineStyle.Color, l.LineStyle.Width, l.LineStyle.Dashes = c, vg.Points(width), dashes
	s.GlyphStyle.Color, s.GlyphStyle.Radius, s.GlyphStyle.Shape = c, vg.Points(2.6), draw.CircleGlyph{}
	p.Add(l, s)
	if name != "" {
		p.Legend.Add(name, l, s)
	}
}

// finite drops points with a NaN or infinite coordinate and sorts by x.
func finite(xys plotter.XYs) plotter.XYs {
	out := xys[:0]
	for _, v := range xys {
		if !math.IsNaN(v.X) && !math.IsNaN(v.Y) && !math.IsInf(v.X, 0) && !math.IsInf(v.Y, 0) {
			out = append(out, v)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].X < out[j].X })
	return out
}

// zeroBased makes both axes start at 0 and leaves 8% headroom above the data.
func zeroBased(p *plot.Plot) {
	p.X.Min, p.Y.Min = 0, 0
	if p.Y.Max <= 0 {
		p.Y.Max = 1
	}
	if p.X.Max <= 0 {
		p.X.Max = 1
	}
	p.Y.Max *= 1.08
	p.X.Max *= 1.04
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

func single(p *plot.Plot) func(dc draw.Canvas) { return func(dc draw.Canvas) { p.Draw(dc) } }

// latencyChart draws one latency's p50/p90/p99 against achieved requests/s. With one run the
// percentiles have their own colours; with several, each run has a colour and each percentile
// a dash pattern.
func latencyChart(id, title string, get func(*schemas.Stage) schemas.Dist, runs []*run) *chart {
	p := newPlot(title+" vs achieved load", "achieved requests/s", title+" (ms)")
	pcts := []struct {
		name string
		get  func(schemas.Dist) int64
	}{
		{"p50", func(d schemas.Dist) int64 { return d.P50 }},
		{"p90", func(d schemas.Dist) int64 { return d.P90 }},
		{"p99", func(d schemas.Dist) int64 { return d.P99 }},
	}
	for ri, r := range runs {
		for pi, pc := range pcts {
			var xys plotter.XYs
			for i := range r.Stages {
				s := &r.Stages[i]
				if d := get(s); d.Count > 0 {
					xys = append(xys, plotter.XY{X: s.AchievedRate, Y: ms(pc.get(d))})
				}
			}
			name, c, dash, width := pc.name, pctColors[pi], []vg.Length(nil), 1.6
			if len(runs) > 1 {
				name, c, dash = r.Label+" "+pc.name, colorAt(ri), pctDashes[pi]
			}
			line(p, name, finite(xys), c, dash, width)
		}
	}
	zeroBased(p)
	return &chart{ID: id, Section: "profiles", Title: title, W: 6.4 * vg.Inch, H: 4 * vg.Inch, draw: single(p),
		Caption: title + " p50, p90 and p99 per stage against the achieved send rate."}
}

// offeredAxis returns the x value and axis label of offered load: the target rate for open
// loop stages, the number of users when every stage of every run is closed loop.
func offeredAxis(runs []*run) (func(*schemas.Stage) float64, string) {
	allClosed := true
	for _, r := range runs {
		for i := range r.Stages {
			if r.Stages[i].Mode != schemas.ModeClosed {
				allClosed = false
			}
		}
	}
	if allClosed {
		return func(s *schemas.Stage) float64 { return float64(s.Concurrency) }, "offered load (concurrent users)"
	}
	return func(s *schemas.Stage) float64 {
		if s.Mode == schemas.ModeClosed {
			return s.AchievedRate
		}
		return s.TargetRate
	}, "offered load (requests/s)"
}

// throughputChart draws a throughput against offered load with the saturation stage of each
// run marked by a vertical dashed line. ideal adds the line y = x (completions follow load).
func throughputChart(id, title, ylabel string, get func(*schemas.Stage) float64, ideal bool, runs []*run) *chart {
	xOf, xlabel := offeredAxis(runs)
	p := newPlot(title, xlabel, ylabel)
	var ymax float64
	for ri, r := range runs {
		var xys plotter.XYs
		for i := range r.Stages {
			s := &r.Stages[i]
			xys = append(xys, plotter.XY{X: xOf(s), Y: get(s)})
			ymax = math.Max(ymax, get(s))
		}
		name, c := ylabel, okBlue
		if len(runs) > 1 {
			name, c = r.Label, colorAt(ri)
		}
		line(p, name, finite(xys), c, nil, 2)
	}
	if ideal && p.X.Max > 0 {
		f := plotter.NewFunction(func(x float64) float64 { return x })
		f.LineStyle.Color, f.LineStyle.Dashes, f.LineStyle.Width = grey, []vg.Length{vg.Points(4), vg.Points(4)}, vg.Points(1)
		p.Add(f)
		p.Legend.Add("completions = offered", f)
	}
	zeroBased(p)
	for ri, r := range runs {
		si := saturationIndex(r.Stages)
		if si < 0 {
			continue
		}
		s := &r.Stages[si]
		x := xOf(s)
		c := red
		if len(runs) > 1 {
			c = colorAt(ri)
		}
		v, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: p.Y.Max}})
		if err != nil {
			continue
		}
		v.LineStyle.Color, v.LineStyle.Width, v.LineStyle.Dashes = c, vg.Points(1.2), []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(v)
		lbl, err := plotter.NewLabels(plotter.XYLabels{
			XYs:    plotter.XYs{{X: x, Y: p.Y.Max * (0.06 + 0.07*float64(ri))}},
			Labels: []string{fmt.Sprintf("saturation %s (%s)", runSuffix(r, runs), fmtRate(get(s)))},
		})
		if err == nil {
			lbl.TextStyle[0].Color = c
			lbl.TextStyle[0].Font = sans(9.5)
			lbl.Offset = vg.Point{X: vg.Points(4)}
			p.Add(lbl)
		}
	}
	_ = ymax
	return &chart{ID: id, Section: "throughput", Title: title, W: 6.4 * vg.Inch, H: 4 * vg.Inch, draw: single(p)}
}

func runSuffix(r *run, runs []*run) string {
	if len(runs) > 1 {
		return r.Label
	}
	return "at " + stageTitle(&r.Stages[saturationIndex(r.Stages)])
}

// goodputChart draws goodput (requests/s meeting every SLO) against achieved requests/s.
func goodputChart(runs []*run) *chart {
	p := newPlot("Goodput vs achieved load", "achieved requests/s", "goodput (requests/s meeting every SLO)")
	for ri, r := range runs {
		var xys plotter.XYs
		for i := range r.Stages {
			xys = append(xys, plotter.XY{X: r.Stages[i].AchievedRate, Y: r.Stages[i].GoodputRate})
		}
		name, c := "goodput", rgb(0x59a14f)
		if len(runs) > 1 {
			name, c = r.Label, colorAt(ri)
		}
		line(p, name, finite(xys), c, nil, 2)
	}
	f := plotter.NewFunction(func(x float64) float64 { return x })
	f.LineStyle.Color, f.LineStyle.Dashes, f.LineStyle.Width = grey, []vg.Length{vg.Points(4), vg.Points(4)}, vg.Points(1)
	p.Add(f)
	p.Legend.Add("every request meets the SLOs", f)
	zeroBased(p)
	return &chart{ID: "goodput", Section: "throughput", Title: "Goodput", W: 6.4 * vg.Inch, H: 4 * vg.Inch, draw: single(p),
		Caption: "Requests per second that ended ok and met every SLO of the config; failures count as misses."}
}

// stageNames returns the x tick labels of per-stage bar charts.
func stageNames(r *run) []string {
	names := make([]string, len(r.Stages))
	for i := range r.Stages {
		names[i] = r.Stages[i].Name
		if names[i] == "" {
			names[i] = fmt.Sprint(r.Stages[i].Stage)
		}
	}
	return names
}

// breakdownChart draws the mean queue, prefill and decode time per stage as stacked bars.
func breakdownChart(idx int, r *run, multi bool) *chart {
	title := "Where the time goes: mean queue + prefill + decode"
	if multi {
		title += " (" + r.Label + ")"
	}
	p := newPlot(title, "stage", "mean per request (ms)")
	parts := []struct {
		name string
		get  func(*schemas.Stage) schemas.Dist
		c    color.Color
	}{
		{"queue", func(s *schemas.Stage) schemas.Dist { return s.Queue }, rgb(0xe15759)},
		{"prefill", func(s *schemas.Stage) schemas.Dist { return s.Prefill }, rgb(0xf28e2b)},
		{"decode", func(s *schemas.Stage) schemas.Dist { return s.Decode }, rgb(0x4e79a7)},
	}
	w := vg.Points(math.Max(8, math.Min(40, 300/float64(len(r.Stages)+1))))
	var below *plotter.BarChart
	for _, part := range parts {
		vals := make(plotter.Values, len(r.Stages))
		for i := range r.Stages {
			vals[i] = ms(part.get(&r.Stages[i]).Mean)
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			continue
		}
		b.Color, b.LineStyle.Width = part.c, 0
		if below != nil {
			b.StackOn(below)
		}
		below = b
		p.Add(b)
		p.Legend.Add(part.name, b)
	}
	p.NominalX(stageNames(r)...)
	p.X.Min, p.X.Max = -0.6, float64(len(r.Stages))-0.4
	p.Y.Min = 0
	p.Y.Max *= 1.15
	src := ""
	if len(r.Stages) > 0 && r.Stages[0].DecompositionSource != "" {
		src = " Decomposition source: " + r.Stages[0].DecompositionSource + "."
	}
	return &chart{ID: fmt.Sprintf("breakdown-%d", idx+1), Section: "breakdown", Title: title, W: 6.4 * vg.Inch, H: 4 * vg.Inch,
		draw: single(p), Caption: "Mean T_queue, I·T_prefill and N·T_decode per request, stacked." + src}
}

// timelineChart draws, per 100 ms bucket of the run, TTFT p50/p99 (top) and completions/s
// (bottom), one colour per stage.
func timelineChart(idx int, r *run, multi bool) *chart {
	suffix := ""
	if multi {
		suffix = " (" + r.Label + ")"
	}
	top := newPlot("TTFT over time"+suffix+": p99 solid, p50 dashed", "", "TTFT (ms)")
	bot := newPlot("Completions over time"+suffix, "seconds since the first stage started", "completions/s")
	var t0 int64 = math.MaxInt64
	for _, b := range r.Timeseries {
		t0 = min(t0, b.BucketNs)
	}
	for i := range r.Stages {
		s := &r.Stages[i]
		var p50, p99, done plotter.XYs
		for _, b := range r.Timeseries {
			if b.Stage != s.Stage {
				continue
			}
			x := float64(b.BucketNs-t0) / 1e9
			if b.TTFTP99Ns != nil {
				p99 = append(p99, plotter.XY{X: x, Y: ms(*b.TTFTP99Ns)})
			}
			if b.TTFTP50Ns != nil {
				p50 = append(p50, plotter.XY{X: x, Y: ms(*b.TTFTP50Ns)})
			}
			done = append(done, plotter.XY{X: x, Y: float64(b.Completions)})
		}
		done = perSecond(done)
		c := colorAt(i)
		addSeries(top, stageNames(r)[i], finite(p99), c, nil)
		addSeries(top, "", finite(p50), c, []vg.Length{vg.Points(3), vg.Points(2)})
		addSeries(bot, "", finite(done), c, nil)
	}
	top.Legend.Top, top.Legend.Left = true, true
	zeroBased(top)
	zeroBased(bot)
	top.X.Max = max(top.X.Max, bot.X.Max)
	bot.X.Max = top.X.Max
	return &chart{ID: fmt.Sprintf("timeline-%d", idx+1), Section: "timeline", Title: "Latency over time" + suffix,
		W: 9 * vg.Inch, H: 5.6 * vg.Inch,
		Caption: "Per 100 ms bucket: TTFT p50 and p99 of the requests whose first token arrived in it; completions per second over a sliding 1 s window; one colour per stage.",
		draw: func(dc draw.Canvas) {
			t := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(8), PadTop: vg.Points(2), PadBottom: vg.Points(2)}
			cs := plot.Align([][]*plot.Plot{{top}, {bot}}, t, dc)
			top.Draw(cs[0][0])
			bot.Draw(cs[1][0])
		}}
}

// perSecond turns completions per 100 ms bucket into completions/s over a centred 1 s window
// (shorter at the stage's edges), so a chart of a few completions per bucket does not jump
// between 0 and 10/s.
func perSecond(xys plotter.XYs) plotter.XYs {
	out := make(plotter.XYs, len(xys))
	for i := range xys {
		lo, hi := max(0, i-5), min(len(xys), i+5)
		var sum float64
		for _, v := range xys[lo:hi] {
			sum += v.Y
		}
		out[i] = plotter.XY{X: xys[i].X, Y: sum / (float64(hi-lo) * 0.1)}
	}
	return out
}

// addSeries adds a plain line (no point glyphs: timelines have many points).
func addSeries(p *plot.Plot, name string, xys plotter.XYs, c color.Color, dashes []vg.Length) {
	if len(xys) == 0 {
		return
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return
	}
	l.LineStyle.Color, l.LineStyle.Width, l.LineStyle.Dashes = c, vg.Points(1.3), dashes
	p.Add(l)
	if name != "" {
		p.Legend.Add(name, l)
	}
}

// bars is a bar chart with one colour per bar (the stage's trust level).
type bars struct {
	vals   []float64
	colors []color.Color
	width  vg.Length
}

func (b *bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, v := range b.vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		x, y0, y1 := trX(float64(i)), trY(0), trY(v)
		pts := []vg.Point{{X: x - b.width/2, Y: y0}, {X: x - b.width/2, Y: y1}, {X: x + b.width/2, Y: y1}, {X: x + b.width/2, Y: y0}}
		c.FillPolygon(b.colors[i], c.ClipPolygonY(pts))
	}
}

func (b *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = -0.5, float64(len(b.vals))-0.5
	for _, v := range b.vals {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			ymax = math.Max(ymax, v)
			ymin = math.Min(ymin, v)
		}
	}
	return
}

// qualityChart draws the measurement-quality panel of one run, per stage: the client's
// uncertainty (the widest bound of a judged percentile), lateness p99 against the planned
// schedule, achieved / planned rate and the client's share of the lateness (the load verdict),
// then the exact-timestamp share and worker utilisation as diagnostics, limits dashed; bars
// take the stage's trust level: red, amber, else blue.
func qualityChart(idx int, r *run, multi bool) *chart {
	suffix := ""
	if multi {
		suffix = " (" + r.Label + ")"
	}
	panels := []struct {
		title string
		get   func(*schemas.Stage) float64
		limit float64 // NaN: none
	}{
		{"client uncertainty: widest p50/p90/p99 bound (ms)", func(s *schemas.Stage) float64 { return ms(s.UncertaintyNs) }, math.NaN()},
		{"lateness: send lag p99 (ms)", func(s *schemas.Stage) float64 { return ms(s.SendLag.P99) }, math.NaN()},
		{"rate fidelity (achieved / planned)", func(s *schemas.Stage) float64 { return s.RateFidelity }, 0.98},
		{"client's share of the lateness (%)", func(s *schemas.Stage) float64 { return s.LateShareClient * 100 }, 50},
		{"exact kernel timestamps (%)", func(s *schemas.Stage) float64 { return s.ExactShare * 100 }, math.NaN()},
		{"worker utilisation ρ (max)", func(s *schemas.Stage) float64 { return s.WorkerRhoMax }, 0.7},
	}
	names := stageNames(r)
	colors := make([]color.Color, len(r.Stages))
	for i := range r.Stages {
		colors[i] = levelColors[stageLevel(&r.Stages[i])]
	}
	w := vg.Points(math.Max(5, math.Min(26, 160/float64(len(r.Stages)+1))))
	var plots [][]*plot.Plot
	for i, pn := range panels {
		p := newPlot(pn.title, "", "")
		p.Title.TextStyle.Font.Size = vg.Points(11)
		p.Legend.TextStyle.Font = sans(8.5)
		vals := make([]float64, len(r.Stages))
		for j := range r.Stages {
			vals[j] = pn.get(&r.Stages[j])
		}
		p.Add(&bars{vals: vals, colors: colors, width: w})
		if !math.IsNaN(pn.limit) {
			lim := pn.limit
			f := plotter.NewFunction(func(float64) float64 { return lim })
			f.LineStyle.Color, f.LineStyle.Width, f.LineStyle.Dashes = red, vg.Points(1), []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(f)
			p.Legend.Add(fmt.Sprintf("limit %g", lim), f)
			p.Y.Max = math.Max(p.Y.Max, lim)
		}
		p.NominalX(names...)
		p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
		p.Y.Min = math.Min(0, p.Y.Min)
		if p.Y.Max <= 0 {
			p.Y.Max = 1
		}
		p.Y.Max *= 1.25
		p.Legend.Left, p.Legend.XOffs = false, -vg.Points(4)
		if i%2 == 0 {
			plots = append(plots, []*plot.Plot{p})
		} else {
			plots[len(plots)-1] = append(plots[len(plots)-1], p)
		}
	}
	return &chart{ID: fmt.Sprintf("quality-%d", idx+1), Section: "quality", Title: "Measurement quality" + suffix,
		W: 9 * vg.Inch, H: 8 * vg.Inch,
		Caption: "The two verdicts per stage: the client's measurement uncertainty, and lateness and rate against the planned schedule (with the client's share of the lateness); exact timestamps and worker utilisation are diagnostics. Red bars: client-bound, or the client kept the load from being sent as planned; orange: the load was not sent as planned for a server or connection reason. Dashed red lines: rate fidelity 0.98, the client blamed from 50% of the lateness, advice from ρ 0.7.",
		draw: func(dc draw.Canvas) {
			t := draw.Tiles{Rows: 3, Cols: 2, PadX: vg.Points(14), PadY: vg.Points(10), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
			cs := plot.Align(plots, t, dc)
			for i := range plots {
				for j := range plots[i] {
					plots[i][j].Draw(cs[i][j])
				}
			}
		}}
}

// buildCharts returns every chart of the report in page order, rendered.
func buildCharts(runs []*run) ([]*chart, error) {
	var cs []*chart
	for _, l := range profileLatencies {
		cs = append(cs, latencyChart(chartID(l.Key), l.Title, l.Get, runs))
	}
	cs = append(cs,
		throughputChart("throughput", "Throughput vs offered load", "completions/s", func(s *schemas.Stage) float64 { return s.CompletionRate }, true, runs),
		throughputChart("tokens", "Output tokens/s vs offered load", "output tokens/s", func(s *schemas.Stage) float64 { return s.OutputTPS }, false, runs),
		goodputChart(runs),
	)
	cs[len(cs)-3].Caption = "Completions per second against the offered load; the dashed vertical line marks the saturation stage, where completions stop following offered load."
	cs[len(cs)-2].Caption = "Output tokens per second over each stage window, with the saturation stage marked."
	multi := len(runs) > 1
	for i, r := range runs {
		cs = append(cs, breakdownChart(i, r, multi))
	}
	for i, r := range runs {
		if len(r.Timeseries) > 0 {
			cs = append(cs, timelineChart(i, r, multi))
		}
	}
	for i, r := range runs {
		cs = append(cs, qualityChart(i, r, multi))
	}
	for _, c := range cs {
		if err := c.render(); err != nil {
			return nil, err
		}
	}
	return cs, nil
}

// chartID turns a column name into a chart id: ttft_ns -> ttft.
func chartID(key string) string {
	if n := len(key); n > 3 && key[n-3:] == "_ns" {
		return key[:n-3]
	}
	return key
}
