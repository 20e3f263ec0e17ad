package report

import (
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
)

// Axis ticks. gonum's default ticks label values with strconv 'g' and leave three labelled
// ticks on an axis (0, 80, 160); these place five to eight on round steps (1, 2, 2.5 or 5 times
// a power of ten) and print every label with the decimals of the step, so an axis reads 0.2,
// 0.4, 0.6 and never 0.6000000000000001.

// numTicks labels a linear axis of plain numbers; from 100,000 on in thousands (250k) and from
// 100 million on in millions (250M).
type numTicks struct{}

func (numTicks) Ticks(lo, hi float64) []plot.Tick {
	step := niceStep(lo, hi)
	scale, suffix := 1.0, ""
	switch a := math.Max(math.Abs(lo), math.Abs(hi)); {
	case a >= 1e8:
		scale, suffix = 1e6, "M"
	case a >= 1e5:
		scale, suffix = 1e3, "k"
	}
	return linearTicks(lo, hi, step, func(v float64) string {
		return fixed(v/scale, step/scale) + suffix
	})
}

// durTicks labels a linear axis of milliseconds as durations (0, 250ms, 500ms; 0, 10s, 20s),
// one unit for the whole axis: the unit of its largest tick.
type durTicks struct{}

func (durTicks) Ticks(lo, hi float64) []plot.Tick {
	step := niceStep(lo, hi)
	unit, name := durUnit(math.Max(math.Abs(lo), math.Abs(hi)))
	return linearTicks(lo, hi, step, func(v float64) string {
		if v == 0 {
			return "0"
		}
		return fixed(v/unit, step/unit) + name
	})
}

// logDurTicks labels a log axis of milliseconds, whose values are log10(ms) (see
// latencyScale), at 1, 2 and 5 times a power of ten (20ms, 50ms, 100ms, 200ms, 500ms, 1s,
// 2s), each in its own unit; over more than three decades, at the powers of ten and the axis'
// ends only (20ms, 100ms, 1s, 10s, 50s), so that labels do not crowd. The other integer
// multiples are unlabelled minor ticks.
type logDurTicks struct{}

func (logDurTicks) Ticks(lo, hi float64) []plot.Tick {
	few := hi-lo > 3
	var ts []plot.Tick
	for p := math.Floor(lo); p <= hi; p++ {
		for m := 1; m < 10; m++ {
			v := float64(m) * math.Pow(10, p)
			y := math.Log10(v)
			if y < lo-1e-9 || y > hi+1e-9 {
				continue
			}
			t := plot.Tick{Value: y}
			end := math.Abs(y-lo) < 1e-9 || math.Abs(y-hi) < 1e-9
			if m == 1 || end || (!few && (m == 2 || m == 5)) {
				unit, name := durUnit(v)
				t.Label = strconv.FormatFloat(roundSig(v/unit, 3), 'f', -1, 64) + name
			}
			ts = append(ts, t)
		}
	}
	return ts
}

// logRange returns a log axis range holding lo and hi (both > 0) with a little room, its ends
// on the 1-2-5 ticks of logDurTicks so that both ends are labelled.
func logRange(lo, hi float64) (float64, float64) {
	return step125(lo/1.05, false), step125(hi*1.05, true)
}

// step125 rounds v > 0 down, or up, to 1, 2 or 5 times a power of ten.
func step125(v float64, up bool) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	m, out := v/p, 1.0
	for _, c := range []float64{1, 2, 5, 10} {
		if up && c >= m*(1-1e-9) {
			return c * p
		}
		if !up && c <= m*(1+1e-9) {
			out = c
		}
	}
	return out * p
}

// durUnit returns the duration unit, in milliseconds, that prints ms with one to three digits
// before the point.
func durUnit(ms float64) (float64, string) {
	switch {
	case ms >= 1000:
		return 1000, "s"
	case ms >= 1 || ms == 0:
		return 1, "ms"
	case ms >= 1e-3:
		return 1e-3, "µs"
	}
	return 1e-6, "ns"
}

// niceStep returns the step of five to eight ticks over [lo, hi]: 1, 2, 2.5 or 5 times a power
// of ten.
func niceStep(lo, hi float64) float64 {
	span := hi - lo
	if !(span > 0) || math.IsInf(span, 0) {
		return 1
	}
	raw := span / 6
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*p >= raw*0.8 {
			return m * p
		}
	}
	return 10 * p
}

// linearTicks returns labelled ticks at the multiples of step in [lo, hi] and unlabelled minor
// ticks between them (five per step, four for a step of 2).
func linearTicks(lo, hi, step float64, label func(float64) string) []plot.Tick {
	minor := step / 5
	if m := step / math.Pow(10, math.Floor(math.Log10(step))); math.Abs(m-2) < 1e-9 {
		minor = step / 4
	}
	var ts []plot.Tick
	for i := math.Ceil(lo/minor - 1e-9); i*minor <= hi+minor*1e-9; i++ {
		v := i * minor
		t := plot.Tick{Value: v}
		if k := v / step; math.Abs(k-math.Round(k)) < 1e-6 {
			t.Value = math.Round(k) * step
			t.Label = label(t.Value)
		}
		ts = append(ts, t)
	}
	return ts
}

// fixed formats v with the decimals that step needs (step 0.25: two; step 50: none), without a
// minus sign on zero.
func fixed(v, step float64) string {
	d := 0
	for d < 9 && math.Abs(step*math.Pow10(d)-math.Round(step*math.Pow10(d))) > 1e-6*step*math.Pow10(d) {
		d++
	}
	s := strconv.FormatFloat(v, 'f', d, 64)
	if strings.Trim(s, "-0.") == "" {
		return strings.TrimPrefix(s, "-")
	}
	return s
}

// roundSig rounds v to n significant digits (float noise off a computed tick value).
func roundSig(v float64, n int) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow(10, float64(n)-math.Ceil(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

// latencyScale maps latencies in milliseconds to a y axis: as they are, or as log10(ms) on a
// log axis. gonum's plot.LogScale is not used: its axis label's glyph box is placed by the
// arithmetic midpoint of the range, which on a log axis pushes the plot down from its title.
type latencyScale struct{ log bool }

// y is the axis value of ms.
func (s latencyScale) y(ms float64) float64 {
	if s.log {
		return math.Log10(ms)
	}
	return ms
}

// points maps pts to the axis, dropping values a log axis cannot show (<= 0).
func (s latencyScale) points(pts []point) []point {
	out := make([]point, 0, len(pts))
	for _, v := range pts {
		if s.log && !(v.Y > 0) {
			continue
		}
		out = append(out, point{X: v.X, Y: s.y(v.Y), Title: v.Title})
	}
	return out
}

// latencyAxis sets the y axis of latencies in milliseconds: linear from 0 with duration ticks,
// or logarithmic when the values span more than a factor of ten, so that a 20 ms plateau at
// low load stays readable next to a 40 s p99 at saturation. ys are the values to plot; the
// caller maps them with the returned scale and, on a linear axis, starts it at 0.
func latencyAxis(a *plot.Axis, ys []float64) latencyScale {
	lo, hi := math.Inf(1), 0.0
	for _, y := range ys {
		if y > 0 && !math.IsInf(y, 0) {
			lo, hi = math.Min(lo, y), math.Max(hi, y)
		}
	}
	if hi == 0 || hi/lo <= 10 {
		a.Tick.Marker = durTicks{}
		return latencyScale{}
	}
	a.Tick.Marker = logDurTicks{}
	lo, hi = logRange(lo, hi)
	a.Min, a.Max = math.Log10(lo), math.Log10(hi)
	a.Label.Text += " (log scale)"
	return latencyScale{log: true}
}

// fit sets p's ranges once the data is in: x from 0; y from 0 on a linear axis (a log axis
// keeps the range latencyAxis gave it).
func (s latencyScale) fit(p *plot.Plot) {
	if s.log {
		zeroX(p)
		return
	}
	zeroBased(p)
}
