package main

import (
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
