package main

import (
	"math"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	var h hist
	// 10 observations in (0, 1 ms], 80 in (1 ms, 2 ms], 10 in (2 ms, 4 ms]; given out of order.
	for _, b := range []struct {
		le  string
		cum float64
	}{{"0.002", 90}, {"0.001", 10}, {"+Inf", 100}, {"0.004", 100}} {
		h.add(`{model_name="sim",le="`+b.le+`"}`, b.cum)
	}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{
		{0.05, 500 * time.Microsecond},  // halfway into the first bucket, from 0
		{0.5, 1500 * time.Microsecond},  // rank 50: 40 of the second bucket's 80
		{0.95, 3000 * time.Microsecond}, // rank 95: half of the third
		{1, 4 * time.Millisecond},
	} {
		if got := h.quantile(tt.q); math.Abs(float64(got-tt.want)) > 1 {
			t.Errorf("quantile(%g) = %v; want %v", tt.q, got, tt.want)
		}
	}
	if got := (hist{}).quantile(0.5); got != 0 {
		t.Errorf("quantile of an empty histogram = %v; want 0", got)
	}
	before := hist{le: h.le, cum: []float64{5, 45, 50, 50}}
	if got := h.minus(before).quantile(0.5); math.Abs(float64(got-1500*time.Microsecond)) > 1 {
		t.Errorf("quantile of the difference = %v; want 1.5ms", got)
	}
}

func TestParseSample(t *testing.T) {
	name, labels, v, ok := parseSample(`wirebench_sim:served_e2e_seconds_bucket{model_name="sim",le="0.001"} 42`)
	if !ok || name != "wirebench_sim:served_e2e_seconds_bucket" || labels != `{model_name="sim",le="0.001"}` || v != 42 {
		t.Errorf("parseSample = %q %q %g %v", name, labels, v, ok)
	}
	if _, _, _, ok := parseSample("garbage"); ok {
		t.Error("parseSample(garbage) ok")
	}
}

func TestSNMPField(t *testing.T) {
	text := "Ip: Forwarding DefaultTTL\nIp: 1 64\n" +
		"Tcp: RtoAlgorithm RtoMin InSegs OutSegs RetransSegs\nTcp: 1 200 367842948 367813465 20868\n" +
		"Udp: InDatagrams OutSegs\nUdp: 5 6\n"
	if n, err := snmpField(text, "Tcp:", "OutSegs"); err != nil || n != 367813465 {
		t.Errorf("Tcp OutSegs = %d, %v; want 367813465", n, err)
	}
	if _, err := snmpField(text, "Tcp:", "Nope"); err == nil {
		t.Error("a missing field gave no error")
	}
	if _, err := snmpField("Tcp: OutSegs\n", "Tcp:", "OutSegs"); err == nil {
		t.Error("a header without values gave no error")
	}
}
