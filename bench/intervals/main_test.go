package main

import (
	"math"
	"slices"
	"testing"
	"time"
)

// TestParseLoads: -loads is RATE:DURATION pairs; anything else is refused, naming the pair.
func TestParseLoads(t *testing.T) {
	got, err := parseLoads("540:60s, 720:2m20s")
	if want := []load{{540, time.Minute}, {720, 140 * time.Second}}; err != nil || !slices.Equal(got, want) {
		t.Errorf("parseLoads = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"540", "540:", ":60s", "0:60s", "540:0s", "540:-1s", "x:60s", "540:60s,,720:1s"} {
		if _, err := parseLoads(bad); err == nil {
			t.Errorf("parseLoads(%q) accepted", bad)
		}
	}
}

// TestSpread: the runs' standard deviation over the intervals' mean width / 3.92.
func TestSpread(t *testing.T) {
	for _, c := range []struct {
		points []float64
		widths []int64
		want   string
	}{
		{[]float64{1, 2, 3}, []int64{392, 392, 392}, "0.01"}, // sd 1, width / 3.92 = 100
		{[]float64{10, 20, 30}, []int64{392, 392, 392}, "0.10"},
		{[]float64{100, 300, 200}, []int64{196, 392, 588}, "1.00"},
		{[]float64{1, 2}, []int64{392, 392}, "—"},
	} {
		if got := spread(c.points, c.widths); got != c.want {
			t.Errorf("spread(%v, %v) = %s; want %s", c.points, c.widths, got, c.want)
		}
	}
}

// TestMachineDrift: runs whose points follow the machine's busy share exactly, each interval
// tight around its own point, miss the pooled percentile but all hold it moved along the fit;
// the spread about the fit is 0 and the correlation 1. Noise in the points lowers both.
func TestMachineDrift(t *testing.T) {
	busy := []float64{0.10, 0.15, 0.20, 0.25, 0.30}
	var points []float64
	var los, his []int64
	for _, b := range busy {
		p := 1000 + 2000*(b-0.20) // the truth, 1000, at the mean busy share
		points = append(points, p)
		los, his = append(los, int64(p)-10), append(his, int64(p)+10)
	}
	d, ok := machineDrift(points, busy, los, his, 20/3.92, 1000)
	if !ok || d.hold != 5 || d.n != 5 || math.Abs(d.r-1) > 1e-9 || d.spread > 1e-9 {
		t.Errorf("exact drift: %+v, %v; want r 1, 5 of 5 held, spread 0", d, ok)
	}
	points[2] += 60 // the run at the mean busy share (the slope stays) off the line by 6 half-widths
	los[2], his[2] = los[2]+60, his[2]+60
	d, _ = machineDrift(points, busy, los, his, 20/3.92, 1000)
	if d.hold != 4 || d.r >= 1 || d.spread <= 0 {
		t.Errorf("one run off the fit: %+v; want 4 of 5 held, r < 1, spread > 0", d)
	}
	if _, ok := machineDrift(points, []float64{0.2, 0.2, 0.2, 0.2, 0.2}, los, his, 20/3.92, 1000); ok {
		t.Error("a busy share that does not vary gave a fit")
	}
}

// TestCoverageCI: the exact interval of a coverage count. n of n and 0 of n have closed forms
// (0.025^(1/n) and 1 − that); k of n mirrors n−k of n; 17 of 20 is the textbook 62.1–96.8%.
func TestCoverageCI(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-4 }
	if lo, hi := coverageCI(20, 20); !near(lo, math.Pow(0.025, 1.0/20)) || hi != 1 {
		t.Errorf("20 of 20: %.4f–%.4f; want %.4f–1", lo, hi, math.Pow(0.025, 1.0/20))
	}
	if lo, hi := coverageCI(0, 19); lo != 0 || !near(hi, 1-math.Pow(0.025, 1.0/19)) {
		t.Errorf("0 of 19: %.4f–%.4f; want 0–%.4f", lo, hi, 1-math.Pow(0.025, 1.0/19))
	}
	for _, c := range [][2]int{{17, 19}, {3, 20}, {26, 28}} {
		lo, hi := coverageCI(c[0], c[1])
		mlo, mhi := coverageCI(c[1]-c[0], c[1])
		if !near(lo, 1-mhi) || !near(hi, 1-mlo) || lo >= float64(c[0])/float64(c[1]) || hi <= float64(c[0])/float64(c[1]) {
			t.Errorf("%d of %d: %.4f–%.4f, mirror %.4f–%.4f", c[0], c[1], lo, hi, mlo, mhi)
		}
	}
	if lo, hi := coverageCI(17, 20); math.Abs(lo-0.621) > 5e-4 || math.Abs(hi-0.968) > 5e-4 {
		t.Errorf("17 of 20: %.4f–%.4f; want 0.621–0.968", lo, hi)
	}
}
