package report

import (
	"image/color"
	"math"
	"unicode/utf8"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// bars is a bar per stage (x = 0, 1, ...), each with its own colour, optionally stacked on
// base; every drawn bar is a hover mark with its title.
type bars struct {
	vals   []float64
	base   []float64 // nil: from 0
	colors []color.Color
	titles []string
	width  vg.Length
	set    *hoverSet
}

func (b *bars) bottom(i int) float64 {
	if b.base == nil {
		return 0
	}
	return b.base[i]
}

func (b *bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, v := range b.vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		x, y0, y1 := trX(float64(i)), trY(b.bottom(i)), trY(b.bottom(i)+v)
		lo, hi := min(y0, y1), max(y0, y1)
		pts := []vg.Point{{X: x - b.width/2, Y: lo}, {X: x - b.width/2, Y: hi}, {X: x + b.width/2, Y: hi}, {X: x + b.width/2, Y: lo}}
		c.FillPolygon(b.colors[i], c.ClipPolygonY(pts))
		b.set.add(mark{X: x - b.width/2, Y: lo, W: b.width, H: max(hi-lo, 1), Title: b.titles[i]})
	}
}

func (b *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = -0.5, float64(len(b.vals))-0.5
	for i, v := range b.vals {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			ymax = math.Max(ymax, b.bottom(i)+v)
			ymin = math.Min(ymin, b.bottom(i)+v)
		}
	}
	return
}

// Thumbnail draws the legend swatch in the first bar's colour.
func (b *bars) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(b.colors[0], c.ClipPolygonY([]vg.Point{
		{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y}}))
}

// stageAxis is the x axis of a per-stage bar chart: one label per stage that never runs into
// its neighbours, whatever the number of stages (1 to a few dozen) and the names' length.
type stageAxis struct {
	labels []string
}

// maxLabel is the longest stage label, in characters; longer names are cut with "…" (the
// hover title has the whole name).
const maxLabel = 16

// newStageAxis labels the stages with their stageTitle (the same label as the tables and
// sentences), each cut to maxLabel characters.
func newStageAxis(names []string) stageAxis {
	var a stageAxis
	for _, l := range names {
		if utf8.RuneCountInString(l) > maxLabel {
			l = string([]rune(l)[:maxLabel-1]) + "…"
		}
		a.labels = append(a.labels, l)
	}
	return a
}

// labelGap is the least room between two neighbouring stage labels.
const labelGap = vg.Length(3)

// apply sets p's x axis to the labels for a data area width wide: side by side when the widest
// fits its slot, else turned upright; when even upright ones would touch, every k-th only.
func (a stageAxis) apply(p *plot.Plot, width vg.Length) {
	p.NominalX(a.labels...)
	sty := &p.X.Tick.Label
	sty.Rotation, sty.XAlign, sty.YAlign = 0, draw.XCenter, draw.YTop
	slot := width / vg.Length(max(1, len(a.labels)))
	var widest vg.Length
	for _, l := range a.labels {
		widest = max(widest, sty.Width(l))
	}
	every := 1
	if widest+labelGap > slot {
		sty.Rotation, sty.XAlign, sty.YAlign = math.Pi/2, draw.XRight, draw.YCenter
		every = int(math.Ceil(float64((sty.Height("0") + labelGap) / slot)))
	}
	ticks := make([]plot.Tick, len(a.labels))
	for i, l := range a.labels {
		ticks[i] = plot.Tick{Value: float64(i)}
		if i%every == 0 {
			ticks[i].Label = l
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Padding = 0
}
