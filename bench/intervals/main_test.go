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
