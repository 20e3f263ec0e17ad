package report

import (
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

// TestRateSentence: offered, planned and sent in one cell, so that a Poisson stage sent as
// planned is not read as sent as offered.
func TestRateSentence(t *testing.T) {
	open := schemas.ProfileStage{Mode: "open", TargetRate: 5, AchievedRate: ptr(5.74),
		Quality: schemas.ProfileQuality{PlannedRate: ptr(5.74), RateFidelity: ptr(1.0)}}
	closed := schemas.ProfileStage{Mode: "closed", Concurrency: 8, AchievedRate: ptr(31.2),
		Quality: schemas.ProfileQuality{PlannedRate: ptr(32.0), RateFidelity: ptr(0.975)}}
	for _, tc := range []struct {
		name string
		s    schemas.ProfileStage
		want string
	}{
		// the demo's first stage: offered 5/s, this seed's Poisson sample 5.74/s, sent all of it
		{"poisson", open, "offered 5.00/s; this seed's plan 5.74/s; sent 5.74/s (1.000)"},
		// closed loop: no offered rate
		{"closed", closed, "plan 32.0/s; sent 31.2/s (0.975)"},
	} {
		if got := rateSentence(tc.s); got != tc.want {
			t.Errorf("%s: rateSentence = %q; want %q", tc.name, got, tc.want)
		}
	}
}
