package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/wirebench/wirebench/schemas"
)

// chart is one figure of the report, drawn once to SVG (inlined in index.html, with a hover
// title on every point and bar) and once to PNG (linked from summary.md).
type chart struct {
	ID      string // file name stem and HTML id: ttft, throughput, quality-1, ...
	Section string // profiles, throughput, breakdown, timeline, quality
	Title   string
	Caption string
	W, H    vg.Length
	draw    func(dc draw.Canvas)
	hover   *hoverSet // filled by the data's plotters while drawing; nil: no hover marks
	panels  []panel   // each plot's data area and legend box in the SVG, in points from bottom left
	SVG     []byte
	PNG     []byte
}

// pngDPI is the PNG resolution: a 6.4 in wide chart is 768 px.
const pngDPI = 120

// render draws the chart to SVG (without the XML prolog, ready to inline, with its hover
// targets) and PNG.
func (c *chart) render() error {
	if c.hover == nil {
		c.hover = &hoverSet{}
	}
	c.hover.marks, c.hover.avoid, c.hover.panels = nil, nil, nil
	sc := vgsvg.New(c.W, c.H)
	c.draw(draw.New(sc))
	c.panels = c.hover.panels
	var sb bytes.Buffer
	if _, err := sc.WriteTo(&sb); err != nil {
		return fmt.Errorf("draw %s as svg: %w", c.ID, err)
	}
	svg := sb.Bytes()
	if i := bytes.Index(svg, []byte("<svg")); i >= 0 {
		svg = svg[i:]
	}
	svg, err := withHover(svg, c.H, c.hover)
	if err != nil {
		return fmt.Errorf("draw %s as svg: %w", c.ID, err)
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

// Colours that mean something: red only for a real problem (trust red), amber for a warning
// (trust amber), neutral colours for everything else. Runs take distinct neutral hues, and so
// do stages (stagePalette), so that two stages side by side on a timeline never look alike.
var (
	red         = rgb(0xd62728)
	amber       = rgb(0xe69f00)
	blue        = rgb(0x4e79a7)
	green       = rgb(0x59a14f)
	grey        = rgb(0x888888)
	dark        = rgb(0x444444)
	levelColors = map[string]color.Color{schemas.TrustGreen: blue, schemas.TrustAmber: amber, schemas.TrustRed: red}
	runColors   = []color.Color{rgb(0x4e79a7), rgb(0xb07aa1), rgb(0x76b7b2), rgb(0x59a14f), rgb(0x9c755f), rgb(0x79706e)}
	pctColors   = []color.Color{rgb(0x6baed6), rgb(0x2171b5), rgb(0x08306b)} // p50, p90, p99
	pctDashes   = [][]vg.Length{{vg.Points(2), vg.Points(2)}, {vg.Points(6), vg.Points(3)}, nil}
	// stagePalette: ten hues without red or amber, each at least 0.10 apart in OKLab
	// (TestStageColors); darker and lighter rounds of it after the tenth stage.
	stagePalette = []color.RGBA{rgba(0x4e79a7), rgba(0x59a14f), rgba(0xb07aa1), rgba(0x17becf), rgba(0x9c755f), rgba(0x1b3a6b),
		rgba(0xff9da7), rgba(0x8cd17d), rgba(0x6a3d9a), rgba(0xa0cbe8)}
)

func rgb(v uint32) color.Color {
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff}
}

func runColor(i int) color.Color { return runColors[i%len(runColors)] }

func rgba(v uint32) color.RGBA { return rgb(v).(color.RGBA) }

// stageColor is stage i's colour: stagePalette's, mixed a third of the way to black in the
// second round of it, to white in the third, and so on further.
func stageColor(i int) color.Color {
	c := stagePalette[i%len(stagePalette)]
	round := i / len(stagePalette)
	if round == 0 {
		return c
	}
	to, f := 0.0, 1-math.Pow(2.0/3, float64((round+1)/2))
	if round%2 == 0 {
		to = 255
	}
	mix := func(x uint8) uint8 { return uint8(math.Round(float64(x) + f*(to-float64(x)))) }
	return color.RGBA{mix(c.R), mix(c.G), mix(c.B), 0xff}
}

// sans is Liberation Sans (embedded in gonum/plot) at the given size in points.
func sans(size float64) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: vg.Points(size)}
}

// newPlot returns a plot with the report's look: title, axis labels, grid, legend top left,
// round ticks (numTicks).
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
		a.Tick.Marker = numTicks{}
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

// legendCorners are the corners of the data area where drawPlot may put a legend.
var legendCorners = []struct{ top, left bool }{{true, true}, {true, false}, {false, false}, {false, true}}

// maxHeadroom is how many times drawPlot raises the top of the y axis (by a quarter of its
// range each time) to make room for the legend above the data when no corner is free.
const maxHeadroom = 6

// drawPlot draws p with its legend on a white box in a corner of the data area where it covers
// no data point, bar or line vertex (the plot's own corner first), raising the top of the y
// axis when no corner is free; it records the data area and the legend's box in hs (the
// report's tests check them).
func drawPlot(p *plot.Plot, c draw.Canvas, hs *hoverSet) {
	lg := p.Legend
	p.Legend = plot.NewLegend() // no entries: drawn below, over its box
	defer func() { p.Legend = lg }()
	var box vg.Rectangle
	if lg.Rectangle(p.DataCanvas(c)).Size().X > 0 {
		for try := 0; ; try++ {
			var free bool
			box, free = placeLegend(&lg, p.DataCanvas(c), obstacles(p, c, hs))
			if free || try == maxHeadroom {
				break
			}
			p.Y.Max += (p.Y.Max - p.Y.Min) / 4
		}
	}
	p.Draw(c)
	dc := p.DataCanvas(c)
	hs.panels = append(hs.panels, panel{Area: dc.Rectangle, Legend: box})
	if box.Size().X == 0 {
		return
	}
	dc.SetColor(color.NRGBA{0xff, 0xff, 0xff, 0xe0})
	dc.Fill(box.Path())
	lg.Draw(dc)
}

// obstacles draws p to a recorder and returns what a legend must not cover: every point's
// hover target, bar and line vertex of the plot (not the timeline's stage bands).
func obstacles(p *plot.Plot, c draw.Canvas, hs *hoverSet) []vg.Rectangle {
	n, a := len(hs.marks), len(hs.avoid)
	p.Draw(draw.Canvas{Canvas: &recorder.Canvas{}, Rectangle: c.Rectangle})
	var out []vg.Rectangle
	for _, m := range hs.marks[n:] {
		if r, ok := m.box(); ok {
			out = append(out, r)
		}
	}
	for _, v := range hs.avoid[a:] {
		out = append(out, vg.Rectangle{Min: v, Max: v})
	}
	hs.marks, hs.avoid = hs.marks[:n], hs.avoid[:a]
	return out
}

// placeLegend puts lg in the first corner of dc (its own first) where its box, padded, meets
// none of the obstacles, and returns the box; free is false when every corner meets one (lg is
// then in its own corner).
func placeLegend(lg *plot.Legend, dc draw.Canvas, obs []vg.Rectangle) (box vg.Rectangle, free bool) {
	own := struct{ top, left bool }{lg.Top, lg.Left}
	xo, yo := vg.Length(math.Abs(float64(lg.XOffs))), vg.Length(math.Abs(float64(lg.YOffs)))
	for _, k := range append([]struct{ top, left bool }{own}, legendCorners...) {
		toCorner(lg, k.top, k.left, xo, yo)
		if box = legendBox(lg, dc); !meetsAny(box, obs) {
			return box, true
		}
	}
	toCorner(lg, own.top, own.left, xo, yo)
	return legendBox(lg, dc), false
}

// toCorner puts lg in a corner, xo and yo in from its sides.
func toCorner(lg *plot.Legend, top, left bool, xo, yo vg.Length) {
	lg.Top, lg.Left, lg.XOffs, lg.YOffs = top, left, xo, yo
	if !left {
		lg.XOffs = -xo
	}
	if top {
		lg.YOffs = -yo
	}
}

// legendBox is the box drawPlot paints under lg drawn in dc: its entries and 3 points around.
func legendBox(lg *plot.Legend, dc draw.Canvas) vg.Rectangle {
	const pad = vg.Length(3)
	size := lg.Rectangle(dc).Size()
	x0, y1 := dc.Min.X+lg.XOffs, dc.Max.Y+lg.YOffs
	if !lg.Left {
		x0 = dc.Max.X + lg.XOffs - size.X
	}
	if !lg.Top {
		y1 = dc.Min.Y + lg.YOffs + size.Y
	}
	return vg.Rectangle{Min: vg.Point{X: x0 - pad, Y: y1 - size.Y - pad}, Max: vg.Point{X: x0 + size.X + pad, Y: y1 + pad}}
}

// meetsAny reports whether r meets (overlaps or touches) any of obs.
func meetsAny(r vg.Rectangle, obs []vg.Rectangle) bool {
	for _, o := range obs {
		if o.Min.X <= r.Max.X && r.Min.X <= o.Max.X && o.Min.Y <= r.Max.Y && r.Min.Y <= o.Max.Y {
			return true
		}
	}
	return false
}

func single(p *plot.Plot, hs *hoverSet) func(dc draw.Canvas) {
	return func(dc draw.Canvas) { drawPlot(p, dc, hs) }
}

// point is a plotted value with its hover title.
type point struct {
	X, Y  float64
	Title string
}

// finite drops points with a NaN or infinite coordinate and sorts them by x.
func finite(pts []point) []point {
	out := make([]point, 0, len(pts))
	for _, v := range pts {
		if math.IsNaN(v.X) || math.IsNaN(v.Y) || math.IsInf(v.X, 0) || math.IsInf(v.Y, 0) {
			continue
		}
		out = append(out, v)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].X < out[j].X })
	return out
}

func xys(pts []point) plotter.XYs {
	out := make(plotter.XYs, len(pts))
	for i, v := range pts {
		out[i] = plotter.XY{X: v.X, Y: v.Y}
	}
	return out
}

// series is one line of a chart.
type series struct {
	name   string // legend entry; empty: none
	pts    []point
	color  color.Color
	dashes []vg.Length
	width  float64
}

// line adds a line with a dot and a hover mark on every point to p and its legend.
func line(p *plot.Plot, hs *hoverSet, s series) {
	if len(s.pts) == 0 {
		return
	}
	l, dots, err := plotter.NewLinePoints(xys(s.pts))
	if err != nil { // only for NaN or Inf, which finite filters out
		return
	}
	l.LineStyle.Color, l.LineStyle.Width, l.LineStyle.Dashes = s.color, vg.Points(s.width), s.dashes
	dots.GlyphStyle.Color, dots.GlyphStyle.Radius, dots.GlyphStyle.Shape = s.color, vg.Points(2.6), draw.CircleGlyph{}
	titles := make([]string, len(s.pts))
	for i, v := range s.pts {
		titles[i] = v.Title
	}
	p.Add(l, dots, &hoverPoints{xys: xys(s.pts), titles: titles, set: hs})
	if s.name != "" {
		p.Legend.Add(s.name, l, dots)
	}
}

// addSeries adds a plain line (no dots, no hover: timelines have many points); the legend
// avoids its vertices.
func addSeries(p *plot.Plot, hs *hoverSet, s series) {
	if len(s.pts) == 0 {
		return
	}
	l, err := plotter.NewLine(xys(s.pts))
	if err != nil {
		return
	}
	l.LineStyle.Color, l.LineStyle.Width, l.LineStyle.Dashes = s.color, vg.Points(s.width), s.dashes
	p.Add(l, &avoidPoints{xys: xys(s.pts), set: hs})
	if s.name != "" {
		p.Legend.Add(s.name, l)
	}
}

// zeroBased makes both axes start at 0 and leaves 8% headroom above the data.
func zeroBased(p *plot.Plot) {
	zeroX(p)
	p.Y.Min = 0
	if p.Y.Max <= 0 {
		p.Y.Max = 1
	}
	p.Y.Max *= 1.08
}

// zeroX makes the x axis start at 0 with 4% room on the right.
func zeroX(p *plot.Plot) {
	p.X.Min = 0
	if p.X.Max <= 0 {
		p.X.Max = 1
	}
	p.X.Max *= 1.04
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// pointTitle is a hover title: the run (with several), the stage, then the figures, joined by
// " · ": `run-b · stage r8 · 8.00 req/s · TTFT p99 21.4ms`.
func pointTitle(r *run, multi bool, s *schemas.Stage, figures ...string) string {
	parts := []string{"stage " + stageTitle(s.Stage, s.Name, namesOf(r.Stages))}
	if multi {
		parts = append([]string{r.Label}, parts...)
	}
	return strings.Join(append(parts, figures...), " · ")
}

// stageNames returns the labels of a run's stages (stageTitle), for axes and legends.
func stageNames(r *run) []string { return StageLabels(r.Stages) }

// buildCharts returns every chart of the report in page order, rendered.
func buildCharts(runs []*run) ([]*chart, error) {
	var cs []*chart
	for _, l := range profileLatencies {
		cs = append(cs, latencyChart(chartID(l.Key), l.Title, l.Get, intervalColumns[l.Key], runs))
	}
	cs = append(cs,
		throughputChart("throughput", "Throughput vs offered load", "completions/s", func(s *schemas.Stage) float64 { return orNaN(s.CompletionRate) }, true, runs),
		throughputChart("tokens", "Output tokens/s vs offered load", "output tokens/s", func(s *schemas.Stage) float64 { return orNaN(s.OutputTPS) }, false, runs),
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
