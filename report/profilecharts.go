package report

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/wirebench/wirebench/schemas"
)

// chartW and chartH are the size of a chart in the two-column grid.
const (
	chartW = 6.4 * vg.Inch
	chartH = 4 * vg.Inch
)

// percentiles are the percentiles of the latency profiles: p50 dotted, p90 dashed, p99 solid.
var percentiles = []struct {
	name string
	get  func(schemas.Dist) *int64
	ci   func(schemas.CI) (lo, hi *int64)
}{
	{"p50", func(d schemas.Dist) *int64 { return d.P50 }, func(c schemas.CI) (*int64, *int64) { return c.P50Lo, c.P50Hi }},
	{"p90", func(d schemas.Dist) *int64 { return d.P90 }, func(c schemas.CI) (*int64, *int64) { return c.P90Lo, c.P90Hi }},
	{"p99", func(d schemas.Dist) *int64 { return d.P99 }, func(c schemas.CI) (*int64, *int64) { return c.P99Lo, c.P99Hi }},
}

// latencyChart draws one latency's p50/p90/p99 against achieved requests/s, on a log axis when
// the values span more than a factor of ten (latencyAxis). With one run the percentiles are
// shades of blue; with several, each run has a colour. The dash pattern tells the percentile.
// ci, when not nil, gives the 95% intervals, drawn as error bars.
func latencyChart(id, title string, get func(*schemas.Stage) schemas.Dist, ci func(*schemas.Stage) schemas.CI, runs []*run) *chart {
	hs := &hoverSet{}
	var lines []series
	var bars []errorBars
	var ys []float64
	multi := len(runs) > 1
	for ri, r := range runs {
		for pi, pc := range percentiles {
			var pts []point
			eb := errorBars{color: pctColors[pi]}
			if multi {
				eb.color = runColor(ri)
			}
			for i := range r.Stages {
				s := &r.Stages[i]
				d := get(s)
				if d.Count == 0 {
					continue
				}
				v := *pc.get(d)
				x, label := orNaN(s.AchievedRate), title+" "+pc.name+" "+fmtDur(v)
				if ci != nil {
					if lo, hi := pc.ci(ci(s)); lo != nil && hi != nil {
						eb.add(x, ms(v), ms(*lo), ms(*hi))
						ys = append(ys, ms(*lo), ms(*hi))
						label = title + " " + pc.name + " " + fmtCI(v, *lo, *hi)
					}
				}
				pts = append(pts, point{X: x, Y: ms(v),
					Title: pointTitle(r, multi, s, fmtRate(orNaN(s.AchievedRate))+" req/s", label)})
				ys = append(ys, ms(v))
			}
			sr := series{name: pc.name, pts: pts, color: pctColors[pi], dashes: pctDashes[pi], width: 1.6}
			if multi {
				sr.name, sr.color = r.Label+" "+pc.name, runColor(ri)
			}
			lines = append(lines, sr)
			bars = append(bars, eb)
		}
	}
	p := newPlot(title+" vs achieved load", "achieved requests/s", title)
	sc := latencyAxis(&p.Y, ys)
	for _, l := range lines {
		l.pts = finite(sc.points(l.pts))
		line(p, hs, l)
	}
	drawn := false
	for _, b := range bars {
		drawn = b.draw(p, sc) || drawn
	}
	caption := title + " p50, p90 and p99 per stage against the achieved send rate."
	if drawn {
		caption += " Error bars: 95% intervals, sampling and the client's own error together; a percentile without one had too few values beyond it."
	}
	if sc.log {
		caption += " Log scale: equal steps up the axis are equal factors (20ms to 200ms as far as 200ms to 2s), so the low-load plateau and the saturated tail both read."
	}
	sc.fit(p)
	return &chart{ID: id, Section: "profiles", Title: title, W: chartW, H: chartH, draw: single(p, hs), hover: hs, Caption: caption}
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
			return orNaN(s.AchievedRate)
		}
		return s.TargetRate
	}, "offered load (requests/s)"
}

// runLines adds a line per run with a point per stage: named name in colour c for one run, named
// by the run in the run's colour for several.
func runLines(p *plot.Plot, hs *hoverSet, runs []*run, name string, c color.Color, pt func(*run, *schemas.Stage) point) {
	for ri, r := range runs {
		var pts []point
		for i := range r.Stages {
			pts = append(pts, pt(r, &r.Stages[i]))
		}
		sr := series{name: name, pts: finite(pts), color: c, width: 2}
		if len(runs) > 1 {
			sr.name, sr.color = r.Label, runColor(ri)
		}
		line(p, hs, sr)
	}
}

// refLine is the style of a reference line (completions = offered, every request meets the
// SLOs): thin, light grey, dashed; plotter.Function cuts it at the edges of the data area.
func refLine(p *plot.Plot, name string) {
	f := plotter.NewFunction(func(x float64) float64 { return x })
	f.LineStyle.Color, f.LineStyle.Dashes, f.LineStyle.Width = grey, []vg.Length{vg.Points(4), vg.Points(4)}, vg.Points(1)
	p.Add(f)
	p.Legend.Add(name, f)
}

// throughputChart draws a throughput against offered load with the saturation stage of each
// run marked by a vertical dashed line. ideal adds the line y = x (completions follow load).
func throughputChart(id, title, ylabel string, get func(*schemas.Stage) float64, ideal bool, runs []*run) *chart {
	xOf, xlabel := offeredAxis(runs)
	p := newPlot(title, xlabel, ylabel)
	hs := &hoverSet{}
	multi := len(runs) > 1
	runLines(p, hs, runs, ylabel, blue, func(r *run, s *schemas.Stage) point {
		return point{X: xOf(s), Y: get(s),
			Title: pointTitle(r, multi, s, "offered "+offered(s.Mode, s.TargetRate, s.Concurrency), fmtRate(get(s))+" "+ylabel)}
	})
	if ideal && p.X.Max > 0 {
		refLine(p, "completions = offered")
	}
	zeroBased(p)
	for ri, r := range runs {
		c := dark
		if multi {
			c = runColor(ri)
		}
		saturationMark(p, r, runs, ri, xOf, get, c)
	}
	return &chart{ID: id, Section: "throughput", Title: title, W: chartW, H: chartH, draw: single(p, hs), hover: hs}
}

// saturationMark draws the vertical dashed line at run ri's saturation stage with its label.
func saturationMark(p *plot.Plot, r *run, runs []*run, ri int, xOf, get func(*schemas.Stage) float64, c color.Color) {
	si := saturationIndex(r.Stages)
	if si < 0 {
		return
	}
	s := &r.Stages[si]
	x := xOf(s)
	v, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: p.Y.Max}})
	if err != nil {
		return
	}
	v.LineStyle.Color, v.LineStyle.Width, v.LineStyle.Dashes = c, vg.Points(1.2), []vg.Length{vg.Points(5), vg.Points(3)}
	p.Add(v)
	where := "at stage " + stageTitle(s.Stage, s.Name, namesOf(r.Stages))
	if len(runs) > 1 {
		where = r.Label
	}
	lbl, err := plotter.NewLabels(plotter.XYLabels{
		XYs:    plotter.XYs{{X: x, Y: p.Y.Max * (0.06 + 0.07*float64(ri))}},
		Labels: []string{fmt.Sprintf("saturation %s (%s)", where, fmtRate(get(s)))},
	})
	if err == nil {
		lbl.TextStyle[0].Color = c
		lbl.TextStyle[0].Font = sans(9.5)
		lbl.Offset = vg.Point{X: vg.Points(4)}
		p.Add(lbl)
	}
}

// goodputChart draws goodput (requests/s meeting every SLO) against achieved requests/s.
func goodputChart(runs []*run) *chart {
	p := newPlot("Goodput vs achieved load", "achieved requests/s", "goodput/s (requests meeting every SLO)")
	hs := &hoverSet{}
	multi := len(runs) > 1
	runLines(p, hs, runs, "goodput", green, func(r *run, s *schemas.Stage) point {
		return point{X: orNaN(s.AchievedRate), Y: orNaN(s.GoodputRate),
			Title: pointTitle(r, multi, s, fmtRate(orNaN(s.AchievedRate))+" req/s", fmtRate(orNaN(s.GoodputRate))+" goodput/s ("+fmtPct(orNaN(s.GoodputShare))+")")}
	})
	refLine(p, "every request meets the SLOs")
	zeroBased(p)
	return &chart{ID: "goodput", Section: "throughput", Title: "Goodput", W: chartW, H: chartH, draw: single(p, hs), hover: hs,
		Caption: "Requests per second that ended ok and met every SLO of the config; failures count as misses."}
}

// errorBars are the 95% intervals of one percentile line, in milliseconds.
type errorBars struct {
	x, y, lo, hi []float64
	color        color.Color
}

func (e *errorBars) add(x, y, lo, hi float64) {
	e.x, e.y, e.lo, e.hi = append(e.x, x), append(e.y, y), append(e.lo, lo), append(e.hi, hi)
}

// draw adds the bars to p on scale sc (a log axis leaves out a bar reaching 0 or below) and
// reports whether it drew any.
func (e *errorBars) draw(p *plot.Plot, sc latencyScale) bool {
	var pts yErrors
	for i := range e.x {
		if math.IsNaN(e.x[i]) || sc.log && !(e.lo[i] > 0) {
			continue
		}
		y := sc.y(e.y[i])
		pts.xys = append(pts.xys, plotter.XY{X: e.x[i], Y: y})
		pts.errs = append(pts.errs, [2]float64{y - sc.y(e.lo[i]), sc.y(e.hi[i]) - y})
	}
	if len(pts.xys) == 0 {
		return false
	}
	b, err := plotter.NewYErrorBars(pts)
	if err != nil {
		return false
	}
	b.LineStyle.Color, b.LineStyle.Width, b.CapWidth = e.color, vg.Points(1), vg.Points(5)
	p.Add(b)
	return true
}

// yErrors are points with their error offsets below and above, for plotter.NewYErrorBars.
type yErrors struct {
	xys  plotter.XYs
	errs [][2]float64
}

func (e yErrors) Len() int                        { return len(e.xys) }
func (e yErrors) XY(i int) (float64, float64)     { return e.xys[i].X, e.xys[i].Y }
func (e yErrors) YError(i int) (float64, float64) { return e.errs[i][0], e.errs[i][1] }
