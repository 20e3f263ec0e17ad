package search

import (
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/capture"
	"github.com/wirebench/wirebench/schemas"
)

const (
	P = schemas.StepPass
	F = schemas.StepFail
	U = schemas.StepUntrusted
)

func TestNext(t *testing.T) {
	plan := Plan{MinRate: 5, MaxRate: 80, Precision: 0.05, MaxSteps: 12}
	tests := []struct {
		name    string
		steps   []Step
		rate    float64
		outcome string
	}{
		{"first step: the geometric midpoint of min and max", nil, 20, ""},
		{"a pass moves the lower end", []Step{{20, P}}, 40, ""},
		{"a fail moves the upper end", []Step{{20, F}}, 10, ""},
		{"bisect the bracket", []Step{{20, P}, {40, F}}, 28.28, ""},
		{"converged within 5%", []Step{{20, P}, {40, F}, {21, F}}, 0, schemas.OutcomeConverged},
		{"a pass above a fail is luck: bracket from the fail", []Step{{20, P}, {40, F}, {30, F}, {35, P}}, 24.49, ""},
		{"fails down to min: test min_rate", []Step{{5.2, F}}, 5, ""},
		{"min_rate fails", []Step{{5.2, F}, {5, F}}, 0, schemas.OutcomeBelowMin},
		{"min_rate passes after fails near it: converged", []Step{{5.2, F}, {5, P}}, 0, schemas.OutcomeConverged},
		{"passes up to max: test max_rate", []Step{{78, P}}, 80, ""},
		{"max_rate passes", []Step{{78, P}, {80, P}}, 0, schemas.OutcomeAboveMax},
		{"an untrusted step ends the search", []Step{{20, P}, {40, U}}, 0, schemas.OutcomeUntrusted},
		{"bisect again", []Step{{20, P}, {40, F}, {28.28, F}}, 23.78, ""},
	}
	for _, tc := range tests {
		d := Next(plan, tc.steps)
		if d.Outcome != tc.outcome || (tc.outcome == "" && d.Rate != tc.rate) {
			t.Errorf("%s: Next(%v) = (%g, %q); want (%g, %q)", tc.name, tc.steps, d.Rate, d.Outcome, tc.rate, tc.outcome)
		}
		if d.Why == "" {
			t.Errorf("%s: Next(%v) gives no reason", tc.name, tc.steps)
		}
	}
	if d := Next(Plan{MinRate: 5, MaxRate: 80, Precision: 0.05, MaxSteps: 3}, []Step{{20, P}, {40, F}, {28.28, F}}); d.Outcome != schemas.OutcomeMaxSteps {
		t.Errorf("Next after max_steps = %+v; want outcome %q", d, schemas.OutcomeMaxSteps)
	}
}

// TestNextStepBound runs Next against thresholds across the range and checks that it brackets
// each within the precision in ⌈log₂(ln 16 / ln 1.05)⌉ + 1 = 7 steps.
func TestNextStepBound(t *testing.T) {
	plan := Plan{MinRate: 1, MaxRate: 16, Precision: 0.05, MaxSteps: 20}
	for _, truth := range []float64{0.5, 1, 1.01, 2.7, 4, 7.77, 15.9, 16, 30} {
		var steps []Step
		d := Next(plan, steps)
		for d.Outcome == "" {
			v := F
			if d.Rate <= truth {
				v = P
			}
			steps = append(steps, Step{d.Rate, v})
			d = Next(plan, steps)
		}
		pass, fail := Bracket(steps)
		switch {
		case len(steps) > 7:
			t.Errorf("truth %g: %d steps %v; want at most 7", truth, len(steps), steps)
		case truth < 1 && d.Outcome != schemas.OutcomeBelowMin, truth >= 16 && d.Outcome != schemas.OutcomeAboveMax:
			t.Errorf("truth %g: outcome %q", truth, d.Outcome)
		case truth >= 1 && truth < 16 && (d.Outcome != schemas.OutcomeConverged || pass > truth || fail <= truth || fail > pass*1.05+1e-9):
			t.Errorf("truth %g: %q, bracket [%g, %g]; want converged around it within 5%%", truth, d.Outcome, pass, fail)
		}
	}
}

func TestClearlyFailing(t *testing.T) {
	slo := 100 * time.Millisecond
	base := capture.Live{Stage: 1, Elapsed: 2 * time.Second, Planned: 100, Sent: 20}
	tests := []struct {
		name string
		edit func(*capture.Live)
		stop bool
	}{
		{"nothing missed", func(l *capture.Live) {}, false},
		{"one failure is within 1% of 100", func(l *capture.Live) { l.Errors = 1 }, false},
		{"two failures exceed it", func(l *capture.Live) { l.Errors = 2 }, true},
		{"median TTFT over the SLO", func(l *capture.Live) { l.TTFTCount, l.TTFTP50 = 12, 150*time.Millisecond }, true},
		{"median over, but too few to judge", func(l *capture.Live) { l.TTFTCount, l.TTFTP50 = 3, 150*time.Millisecond }, false},
		{"median within the SLO", func(l *capture.Live) { l.TTFTCount, l.TTFTP50 = 50, 90*time.Millisecond }, false},
		{"another stage (the warmup)", func(l *capture.Live) { l.Stage, l.Errors = 0, 50 }, false},
		{"sends behind schedule: the load verdict decides", func(l *capture.Live) { l.Elapsed, l.Errors = 10*time.Second, 50 }, false},
	}
	for _, tc := range tests {
		l := base
		tc.edit(&l)
		why := ClearlyFailing(l, 1, 10, 0.99, slo)
		if (why != "") != tc.stop {
			t.Errorf("%s: ClearlyFailing(%+v) = %q; want stop %v", tc.name, l, why, tc.stop)
		}
	}
}

func TestJudge(t *testing.T) {
	share := func(v float64) *float64 { return &v }
	green := schemas.Stage{LoadDelivered: true, GoodputShare: share(0.995)}
	tests := []struct {
		name  string
		edit  func(*schemas.Stage)
		early string
		want  string
	}{
		{"goodput above", func(s *schemas.Stage) {}, "", P},
		{"goodput below", func(s *schemas.Stage) { s.GoodputShare = share(0.98) }, "", F},
		{"no request", func(s *schemas.Stage) { s.GoodputShare = nil }, "", U},
		{"load not delivered", func(s *schemas.Stage) { s.LoadDelivered, s.LoadBlame = false, schemas.BlameClient }, "", U},
		{"client-bound", func(s *schemas.Stage) { s.ClientBound, s.ClientBoundReason = true, "ttft p99 wide" }, "", U},
		{"unbounded events", func(s *schemas.Stage) { s.ClientBoundReason = "no lower bound" }, "", U},
		{"stopped early: fail whatever the cut stage's load", func(s *schemas.Stage) { s.LoadDelivered = false }, "clearly failing", F},
	}
	for _, tc := range tests {
		st := green
		tc.edit(&st)
		if got, why := Judge(&st, 0.99, tc.early); got != tc.want || why == "" {
			t.Errorf("%s: Judge = (%q, %q); want %q with a reason", tc.name, got, why, tc.want)
		}
	}
}

func TestLimitedByAndSentence(t *testing.T) {
	if got := LimitedBy(schemas.Misses{TTFT: 5, E2E: 2, Failed: 1}, 0.99); got != "TTFT p99" {
		t.Errorf("LimitedBy = %q; want TTFT p99", got)
	}
	if got := LimitedBy(schemas.Misses{Failed: 3, NTPOT: 2}, 0.95); got != "failed requests" {
		t.Errorf("LimitedBy = %q; want failed requests", got)
	}
	rec := &schemas.SearchRecord{Outcome: schemas.OutcomeConverged, PassRate: 1790, FailRate: 1840, LimitedBy: "TTFT p99"}
	if got, want := Sentence(rec, ""), "capacity under SLO: 1,790 req/s (between 1,790 and 1,840), limited by TTFT p99"; got != want {
		t.Errorf("Sentence = %q; want %q", got, want)
	}
	rec = &schemas.SearchRecord{Outcome: schemas.OutcomeUntrusted, PassRate: 20}
	if got := Sentence(rec, "step 1 could not be judged"); !strings.Contains(got, "not found") || !strings.Contains(got, "at least 20 req/s") {
		t.Errorf("Sentence(untrusted) = %q", got)
	}
}
