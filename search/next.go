package search

import (
	"fmt"
	"math"

	"github.com/wirebench/wirebench/schemas"
)

// Plan is what Next needs of the search section.
type Plan struct {
	MinRate, MaxRate float64 // requests/s
	Precision        float64 // stop once fail ≤ pass × (1 + Precision)
	MaxSteps         int
}

// Step is a finished step as Next sees it.
type Step struct {
	Rate    float64
	Verdict string // schemas.StepPass, StepFail or StepUntrusted
}

// Decision is Next's answer: the next rate and why, or the outcome when the search is done.
type Decision struct {
	Rate    float64 // next step's rate; 0 when Outcome is set
	Outcome string  // empty while the search goes on
	Why     string  // why this rate, or why the search ends
}

// Bracket returns the highest passing rate below the lowest failing one (pass) and that
// failing rate (fail); 0 for none. A pass above a failure is left out: it is luck, not
// capacity (as calibrate's faithful rate).
func Bracket(steps []Step) (pass, fail float64) {
	for _, s := range steps {
		if s.Verdict == schemas.StepFail && (fail == 0 || s.Rate < fail) {
			fail = s.Rate
		}
	}
	for _, s := range steps {
		if s.Verdict == schemas.StepPass && s.Rate > pass && (fail == 0 || s.Rate < fail) {
			pass = s.Rate
		}
	}
	return pass, fail
}

// Next chooses the next step from the steps so far. It bisects the bracket geometrically: the
// next rate is √(lower × upper), where lower is the highest passing rate (min_rate while none
// has passed) and upper the lowest failing one (max_rate while none has failed). Latency
// climbs steeply at the knee, so the signal is a step function of the rate and interpolating
// on it gains little; bisection needs ⌈log₂(ln(max/min) / ln(1 + precision))⌉ steps, plus one
// to test min_rate or max_rate when every step failed or passed. An untrusted step ends the
// search: it is neither a pass nor a fail, and the rates above it would be no better.
func Next(p Plan, steps []Step) Decision {
	for i, s := range steps {
		if s.Verdict == schemas.StepUntrusted {
			return Decision{Outcome: schemas.OutcomeUntrusted, Why: fmt.Sprintf("step %d (%s req/s) could not be judged", i, Rate(s.Rate))}
		}
	}
	pass, fail := Bracket(steps)
	const eps = 1e-9
	switch {
	case fail > 0 && fail <= p.MinRate*(1+eps):
		return Decision{Outcome: schemas.OutcomeBelowMin, Why: fmt.Sprintf("min_rate %s req/s fails: the capacity is below it", Rate(p.MinRate))}
	case pass >= p.MaxRate*(1-eps):
		return Decision{Outcome: schemas.OutcomeAboveMax, Why: fmt.Sprintf("max_rate %s req/s passes: the capacity is at least that", Rate(p.MaxRate))}
	case pass > 0 && fail > 0 && fail <= pass*(1+p.Precision+eps):
		return Decision{Outcome: schemas.OutcomeConverged, Why: fmt.Sprintf("%s req/s passes and %s fails: within the precision %g%%", Rate(pass), Rate(fail), 100*p.Precision)}
	case len(steps) >= p.MaxSteps:
		return Decision{Outcome: schemas.OutcomeMaxSteps, Why: fmt.Sprintf("search.max_steps (%d) steps run", p.MaxSteps)}
	}
	lower, upper := orDefault(pass, p.MinRate), orDefault(fail, p.MaxRate)
	if upper <= lower*(1+p.Precision+eps) {
		// The bracket is narrow, but one end is the untested limit: test it.
		if fail == 0 {
			return Decision{Rate: p.MaxRate, Why: fmt.Sprintf("%s req/s passes, within the precision of max_rate: test max_rate", Rate(pass))}
		}
		return Decision{Rate: p.MinRate, Why: fmt.Sprintf("%s req/s fails, within the precision of min_rate: test min_rate", Rate(fail))}
	}
	r := round4(math.Sqrt(lower * upper))
	return Decision{Rate: r, Why: fmt.Sprintf("geometric midpoint of %s and %s", end(lower, pass > 0, "passed", "min_rate"), end(upper, fail > 0, "failed", "max_rate"))}
}

func orDefault(v, d float64) float64 {
	if v > 0 {
		return v
	}
	return d
}

// end names one end of the bracket: "20 req/s (passed)" or "80 req/s (max_rate, untested)".
func end(r float64, tested bool, verdict, limit string) string {
	if tested {
		return fmt.Sprintf("%s req/s (%s)", Rate(r), verdict)
	}
	return fmt.Sprintf("%s req/s (%s, untested)", Rate(r), limit)
}

// round4 keeps 4 significant digits, so that step names and tables read 22.36, not 22.3607.
func round4(x float64) float64 {
	if x == 0 {
		return 0
	}
	p := math.Pow(10, 3-math.Floor(math.Log10(math.Abs(x))))
	return math.Round(x*p) / p
}

// Rate formats a rate for sentences: thousands separated, 4 significant digits at most
// ("1,840", "23.53").
func Rate(r float64) string {
	r = round4(r)
	if r < 1000 {
		return fmt.Sprintf("%g", r)
	}
	s := fmt.Sprintf("%.0f", r)
	var b []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	return string(b)
}
