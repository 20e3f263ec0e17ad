package report

import (
	"bytes"
	"fmt"
	"html"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Hover values without script: gonum's SVG has no <title>, so the plotters of the data record
// where each point and bar falls (in the canvas's points, origin bottom left) with its title,
// and render appends a transparent target with a <title> over each one, which a browser shows
// as a tooltip. The targets go last in the SVG, above everything gonum drew.

// mark is one hover target: a circle of radius hoverRadius around (X, Y), or, with W > 0, the
// rectangle from (X, Y) of size W × H.
type mark struct {
	X, Y, W, H vg.Length
	Title      string
	Band       bool // a stage's span on a timeline, not a datum
}

// box is the mark's target as a rectangle; false for a band.
func (m mark) box() (vg.Rectangle, bool) {
	if m.Band {
		return vg.Rectangle{}, false
	}
	if m.W > 0 {
		return vg.Rectangle{Min: vg.Point{X: m.X, Y: m.Y}, Max: vg.Point{X: m.X + m.W, Y: m.Y + m.H}}, true
	}
	return vg.Rectangle{Min: vg.Point{X: m.X - hoverRadius, Y: m.Y - hoverRadius}, Max: vg.Point{X: m.X + hoverRadius, Y: m.Y + hoverRadius}}, true
}

// hoverRadius is the radius of a point's target: larger than the drawn dot, for the pointer.
const hoverRadius = 5

// hoverSet collects the marks of one chart while it is drawn, with the vertices of lines
// without marks (avoid) and the data area and legend box of each plot (panels).
type hoverSet struct {
	marks  []mark
	avoid  []vg.Point
	panels []panel
}

// panel is one plot of a chart: its data area and its legend's box (empty: no legend).
type panel struct{ Area, Legend vg.Rectangle }

// avoidPoints is a plotter that draws nothing: it records where the vertices of a line without
// hover marks fall (a timeline's), so that drawPlot keeps the legend off them.
type avoidPoints struct {
	xys plotter.XYs
	set *hoverSet
}

func (a *avoidPoints) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, v := range a.xys {
		a.set.avoid = append(a.set.avoid, vg.Point{X: trX(v.X), Y: trY(v.Y)})
	}
}

func (h *hoverSet) add(m mark) {
	if h != nil {
		h.marks = append(h.marks, m)
	}
}

// hoverPoints is a plotter that draws nothing: it records where its points fall, with a title
// each. It has no data range, so it leaves the axes alone.
type hoverPoints struct {
	xys    plotter.XYs
	titles []string
	set    *hoverSet
}

func (h *hoverPoints) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, v := range h.xys {
		h.set.add(mark{X: trX(v.X), Y: trY(v.Y), Title: h.titles[i]})
	}
}

// withHover returns the SVG with, before its closing tag, a hidden group with each plot's data
// area (rect.plot-area) and legend box (rect.legend-box) for the report's browser test, and a
// group of hover targets (bands of a timeline: class band); height is the canvas height (SVG's
// y axis points down, the canvas's up).
func withHover(svg []byte, height vg.Length, hs *hoverSet) ([]byte, error) {
	if len(hs.marks) == 0 && len(hs.panels) == 0 {
		return svg, nil
	}
	end := bytes.LastIndex(svg, []byte("</svg>"))
	if end < 0 {
		return nil, fmt.Errorf("svg without </svg>")
	}
	var b bytes.Buffer
	b.Write(svg[:end])
	rect := func(class string, r vg.Rectangle) {
		fmt.Fprintf(&b, `<rect class="%s" x="%.2f" y="%.2f" width="%.2f" height="%.2f"/>`+"\n",
			class, r.Min.X.Points(), (height - r.Max.Y).Points(), (r.Max.X - r.Min.X).Points(), (r.Max.Y - r.Min.Y).Points())
	}
	b.WriteString(`<g class="geometry" visibility="hidden" pointer-events="none">` + "\n")
	for _, p := range hs.panels {
		rect("plot-area", p.Area)
		if p.Legend.Size().X > 0 {
			rect("legend-box", p.Legend)
		}
	}
	b.WriteString("</g>\n")
	if len(hs.marks) > 0 {
		b.WriteString(`<g class="hover" fill="#000" fill-opacity="0" pointer-events="all">` + "\n")
		for _, m := range hs.marks {
			t := html.EscapeString(m.Title)
			if m.W > 0 {
				class := ""
				if m.Band {
					class = ` class="band"`
				}
				fmt.Fprintf(&b, `<rect%s x="%.2f" y="%.2f" width="%.2f" height="%.2f"><title>%s</title></rect>`+"\n",
					class, m.X.Points(), (height - m.Y - m.H).Points(), m.W.Points(), m.H.Points(), t)
				continue
			}
			fmt.Fprintf(&b, `<circle cx="%.2f" cy="%.2f" r="%d"><title>%s</title></circle>`+"\n",
				m.X.Points(), (height - m.Y).Points(), hoverRadius, t)
		}
		b.WriteString("</g>\n")
	}
	b.Write(svg[end:])
	return b.Bytes(), nil
}

// hoverBands is a plotter that draws nothing: it records a band over the whole height of the
// data area from x0[i] to x1[i], with a title each (a stage's span on a timeline, whose lines
// have too many points for a target each).
type hoverBands struct {
	x0, x1 []float64
	titles []string
	set    *hoverSet
}

func (h *hoverBands) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for i := range h.x0 {
		a, b := max(trX(h.x0[i]), c.Min.X), min(trX(h.x1[i]), c.Max.X)
		if b > a {
			h.set.add(mark{X: a, Y: c.Min.Y, W: b - a, H: c.Max.Y - c.Min.Y, Title: h.titles[i], Band: true})
		}
	}
}
