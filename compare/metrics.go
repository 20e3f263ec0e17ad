package compare

import (
	"math"

	"github.com/wirebench/wirebench/schemas"
)

// Metric is a latency compared percentile by percentile.
type Metric struct {
	Key, Title string
	Dist       func(*schemas.Stage) *schemas.Dist
	// Value gives a request's value and its interval; nil for a metric requests.parquet does
	// not hold per value (ITL: one value per gap).
	Value      func(*schemas.MetricRequest) (v, lo, hi *int64)
	NoInterval string // why the metric has no interval, when Value is nil
}

// metricCount is len(Metrics).
const metricCount = 6

// Metrics are the compared latencies, in display order; their keys are the --fail-on grammar's.
var Metrics = [metricCount]Metric{
	{"ttft", "TTFT", func(s *schemas.Stage) *schemas.Dist { return &s.TTFT },
		func(m *schemas.MetricRequest) (v, lo, hi *int64) { return m.TTFTNs, m.TTFTLoNs, m.TTFTHiNs }, ""},
	{"ttfc", "TTFC", func(s *schemas.Stage) *schemas.Dist { return &s.TTFC },
		func(m *schemas.MetricRequest) (v, lo, hi *int64) { return m.TTFCNs, m.TTFCLoNs, m.TTFCHiNs }, ""},
	{"tpot", "TPOT", func(s *schemas.Stage) *schemas.Dist { return &s.TPOT },
		func(m *schemas.MetricRequest) (v, lo, hi *int64) { return m.TPOTNs, m.TPOTLoNs, m.TPOTHiNs }, ""},
	{"itl", "ITL", func(s *schemas.Stage) *schemas.Dist { return &s.ITL }, nil,
		"no interval: ITL's values are per gap, not in requests.parquet"},
	{"e2e", "E2E", func(s *schemas.Stage) *schemas.Dist { return &s.E2E },
		func(m *schemas.MetricRequest) (v, lo, hi *int64) { return m.E2ENs, m.E2ELoNs, m.E2EHiNs }, ""},
	{"ntpot", "NTPOT", func(s *schemas.Stage) *schemas.Dist { return &s.NTPOT },
		func(m *schemas.MetricRequest) (v, lo, hi *int64) { return m.NTPOTNs, m.NTPOTLoNs, m.NTPOTHiNs }, ""},
}

// Percentile is a compared percentile of every metric.
type Percentile struct {
	Name string
	Q    float64
	Ptr  func(*schemas.Dist) **int64
}

// Get is the percentile of d; nil without a value.
func (p Percentile) Get(d *schemas.Dist) *int64 { return *p.Ptr(d) }

// Percentiles are the compared percentiles; each has an interval only where the sample allows
// (interval.TooSmall: p99 needs 2,000 requests, p99.9 20,000).
var Percentiles = []Percentile{
	{"p50", 0.50, func(d *schemas.Dist) **int64 { return &d.P50 }},
	{"p90", 0.90, func(d *schemas.Dist) **int64 { return &d.P90 }},
	{"p99", 0.99, func(d *schemas.Dist) **int64 { return &d.P99 }},
	{"p99.9", 0.999, func(d *schemas.Dist) **int64 { return &d.P999 }},
}

// Throughput is a per-stage figure compared by its ratio NEW / BASE only (no interval).
type Throughput struct {
	Key, Title string
	Ptr        func(*schemas.Stage) **float64
}

// Get is the figure of s; NaN without a value.
func (t Throughput) Get(s *schemas.Stage) float64 { return orNaN(*t.Ptr(s)) }

// Throughputs are the stage figures whose ratios a pair carries.
var Throughputs = []Throughput{
	{"achieved_rate", "sent/s", func(s *schemas.Stage) **float64 { return &s.AchievedRate }},
	{"completion_rate", "done/s", func(s *schemas.Stage) **float64 { return &s.CompletionRate }},
	{"output_tps", "out tok/s", func(s *schemas.Stage) **float64 { return &s.OutputTPS }},
	{"goodput_rate", "goodput/s", func(s *schemas.Stage) **float64 { return &s.GoodputRate }},
}

func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// SamplesOf groups a run's measured requests (warmup left out) by stage: each metric's values
// of the ok requests, in the order they were sent, as the stage's distributions count them.
func SamplesOf(reqs []schemas.MetricRequest) map[int32]*Samples {
	out := map[int32]*Samples{}
	order := make([]int, 0, len(reqs))
	for i := range reqs {
		if reqs[i].OK && !reqs[i].Warmup {
			order = append(order, i)
		}
	}
	sortBySent(reqs, order)
	for _, i := range order {
		m := &reqs[i]
		s := out[m.Stage]
		if s == nil {
			s = &Samples{}
			out[m.Stage] = s
		}
		for mi, met := range Metrics {
			if met.Value == nil {
				continue
			}
			if v, lo, hi := met.Value(m); v != nil && lo != nil && hi != nil {
				s.V[mi] = append(s.V[mi], *v)
				s.Lo[mi] = append(s.Lo[mi], *lo)
				s.Hi[mi] = append(s.Hi[mi], *hi)
			}
		}
	}
	return out
}
