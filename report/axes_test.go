package report

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// labels returns the labelled ticks' labels.
func labels(ts []plot.Tick) []string {
	var out []string
	for _, t := range ts {
		if t.Label != "" {
			out = append(out, t.Label)
		}
	}
	return out
}

func TestTicks(t *testing.T) {
	log := func(lo, hi float64) [2]float64 { return [2]float64{math.Log10(lo), math.Log10(hi)} }
	tests := []struct {
		name   string
		marker plot.Ticker
		lo, hi float64
		want   string // labels joined by spaces
	}{
		{"fidelity axis", numTicks{}, 0, 1.25, "0.0 0.2 0.4 0.6 0.8 1.0 1.2"},
		{"float-noisy end (80.00000000000001 × 1.04)", numTicks{}, 0, 80.00000000000001 * 1.04, "0 20 40 60 80"},
		{"quarter steps", numTicks{}, 0, 16.6, "0.0 2.5 5.0 7.5 10.0 12.5 15.0"},
		{"thousands", numTicks{}, 0, 3460 * 1.08, "0 500 1000 1500 2000 2500 3000 3500"},
		{"k from 100000 on", numTicks{}, 0, 1.3e6, "0k 200k 400k 600k 800k 1000k 1200k"},
		{"negative zero", numTicks{}, -0.3, 0.7, "-0.2 0.0 0.2 0.4 0.6"},
		{"durations ms", durTicks{}, 0, 27, "0 5ms 10ms 15ms 20ms 25ms"},
		{"durations µs", durTicks{}, 0, 0.05, "0 10µs 20µs 30µs 40µs 50µs"},
		{"durations s", durTicks{}, 0, 3900, "0 1s 2s 3s"},
		{"log, 20ms to 50s: decades and ends", logDurTicks{}, log(20, 50000)[0], log(20, 50000)[1], "20ms 100ms 1s 10s 50s"},
		{"log, 5ms to 200ms: 1-2-5", logDurTicks{}, log(5, 200)[0], log(5, 200)[1], "5ms 10ms 20ms 50ms 100ms 200ms"},
		{"log, sub-ms", logDurTicks{}, log(0.02, 1)[0], log(0.02, 1)[1], "20µs 50µs 100µs 200µs 500µs 1ms"},
	}
	for _, tt := range tests {
		ts := tt.marker.Ticks(tt.lo, tt.hi)
		if got := strings.Join(labels(ts), " "); got != tt.want {
			t.Errorf("%s: %T.Ticks(%g, %g) labels = %q; want %q", tt.name, tt.marker, tt.lo, tt.hi, got, tt.want)
		}
		for i, tk := range ts {
			if tk.Value < tt.lo-1e-9 || tk.Value > tt.hi+1e-9 || (i > 0 && tk.Value <= ts[i-1].Value) {
				t.Errorf("%s: tick %d = %g; want increasing ticks in [%g, %g]", tt.name, i, tk.Value, tt.lo, tt.hi)
			}
			if n := sigDigits(tk.Label); n > 6 {
				t.Errorf("%s: label %q has %d significant digits; want at most 6", tt.name, tk.Label, n)
			}
		}
	}
}

// TestTicksNoNoise sweeps axis ranges: no label has float noise (more than six significant
// digits), each axis has 3 to 9 labels, and no two labels are the same.
func TestTicksNoNoise(t *testing.T) {
	for _, hi := range []float64{0.0013, 0.05, 0.3, 1.2000000000000002, 7, 13.6, 99.9, 166.4, 512, 4521, 80000.00000000001, 3.3e6} {
		for _, m := range []plot.Ticker{numTicks{}, durTicks{}} {
			ls := labels(m.Ticks(0, hi))
			seen := map[string]bool{}
			for _, l := range ls {
				if sigDigits(l) > 6 || seen[l] {
					t.Errorf("%T.Ticks(0, %g) = %v; want distinct labels of at most 6 significant digits", m, hi, ls)
				}
				seen[l] = true
			}
			if len(ls) < 3 || len(ls) > 9 {
				t.Errorf("%T.Ticks(0, %g) = %v; want 3 to 9 labels", m, hi, ls)
			}
		}
	}
}

func TestLatencyAxis(t *testing.T) {
	tests := []struct {
		ys     []float64
		log    bool
		lo, hi float64 // the log axis range in ms
	}{
		{[]float64{20, 40000}, true, 10, 50000}, // 20 ms to 40 s: log
		{[]float64{8, 25}, false, 0, 0},         // within a factor of ten: linear
		{[]float64{0, 5, 60}, true, 2, 100},     // zero is left out of the span
		{nil, false, 0, 0},
	}
	for _, tt := range tests {
		p := plot.New()
		p.Y.Label.Text = "TTFT"
		sc := latencyAxis(&p.Y, tt.ys)
		if sc.log != tt.log {
			t.Errorf("latencyAxis(%v) log = %v; want %v", tt.ys, sc.log, tt.log)
			continue
		}
		if !tt.log {
			continue
		}
		if lo, hi := math.Pow(10, p.Y.Min), math.Pow(10, p.Y.Max); math.Abs(lo-tt.lo) > 1e-9*tt.lo || math.Abs(hi-tt.hi) > 1e-9*tt.hi {
			t.Errorf("latencyAxis(%v) range = [%g, %g] ms; want [%g, %g]", tt.ys, lo, hi, tt.lo, tt.hi)
		}
		if p.Y.Label.Text != "TTFT (log scale)" {
			t.Errorf("latencyAxis(%v) label = %q; want it to say log scale", tt.ys, p.Y.Label.Text)
		}
		if pts := sc.points([]point{{X: 1, Y: 0}, {X: 2, Y: 100}}); len(pts) != 1 || pts[0].Y != 2 {
			t.Errorf("log scale points(0, 100) = %v; want only 100 at log10 = 2", pts)
		}
	}
}

func TestStageAxis(t *testing.T) {
	sweep := make([]string, 20)
	for i := range sweep {
		sweep[i] = fmt.Sprintf("sweep-%02d", i)
	}
	tests := []struct {
		names []string
		first string
	}{
		{sweep, "sweep-00"}, // the stage's label, as in the tables
		{[]string{"warm", "a-long-stage-name-here"}, "warm"},
		{[]string{"a-long-stage-name-here"}, "a-long-stage-na…"},
	}
	for _, tt := range tests {
		a := newStageAxis(tt.names)
		if a.labels[0] != tt.first {
			t.Errorf("newStageAxis(%q) first label %q; want %q", tt.names, a.labels[0], tt.first)
		}
		for _, l := range a.labels {
			if n := len([]rune(l)); n > maxLabel {
				t.Errorf("newStageAxis(%q) label %q has %d characters; want at most %d", tt.names, l, n, maxLabel)
			}
		}
	}

	// Fitting: labels lie flat when they fit their slot, stand up when they do not, and show one
	// in k when even upright ones would touch.
	long := newStageAxis([]string{"alpha-one", "beta-two", "gamma-three", "delta-four", "epsilon-five", "zeta-six"})
	for _, tt := range []struct {
		ax      stageAxis
		width   vg.Length
		rotated bool
		every   int
	}{
		{newStageAxis(sweep), 1200, false, 1}, // 20 slots of 60pt hold "sweep-00" side by side
		{newStageAxis(sweep), 200, true, 2},   // 10pt slots: one upright label in two
		{newStageAxis(sweep), 100, true, 3},   // 5pt slots: one in three
		{long, 200, true, 1},
		{long, 600, false, 1},
	} {
		p := newPlot("", "", "")
		tt.ax.apply(p, tt.width)
		ts := p.X.Tick.Marker.Ticks(0, 0)
		rotated := p.X.Tick.Label.Rotation != 0
		every := 0 // the index of the second label
		for i := 1; i < len(ts) && every == 0; i++ {
			if ts[i].Label != "" {
				every = i
			}
		}
		if rotated != tt.rotated || every != tt.every || len(ts) != len(tt.ax.labels) {
			t.Errorf("apply(%q, %vpt): rotated %v, every %d, %d ticks; want %v, %d, %d", tt.ax.labels[:2], tt.width.Points(), rotated, every, len(ts), tt.rotated, tt.every, len(tt.ax.labels))
		}
	}
}
