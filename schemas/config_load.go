package schemas

import "math"

// Load is the load plan: explicit stages and/or a sweep, an optional warmup stage first.
type Load struct {
	Warmup *StageSpec  `yaml:"warmup" json:"warmup,omitempty"`
	Stages []StageSpec `yaml:"stages" json:"stages,omitempty"`
	Sweep  *Sweep      `yaml:"sweep" json:"sweep,omitempty"`
}

// Arrival processes of an open-loop stage (StageSpec.Arrival, StageInfo.Arrival,
// Search.Arrival).
const (
	ArrivalConstant = "constant" // evenly spaced sends
	ArrivalPoisson  = "poisson"  // exponential gaps
	ArrivalGamma    = "gamma"    // gamma gaps of the stage's burstiness
	ArrivalTrace    = "trace"    // the send times of a trace (workload.trace)
)

// StageSpec is one stage: open loop {rate, duration, arrival} or closed loop
// {concurrency, requests | duration, think_time}.
type StageSpec struct {
	Name        string   `yaml:"name" json:"name,omitempty"`
	Rate        float64  `yaml:"rate" json:"rate,omitempty"`             // requests per second (open loop)
	Duration    Duration `yaml:"duration" json:"duration,omitempty"`     // stage length
	Arrival     string   `yaml:"arrival" json:"arrival,omitempty"`       // constant, poisson, gamma
	Burstiness  float64  `yaml:"burstiness" json:"burstiness,omitempty"` // gamma shape; 1 = Poisson, < 1 burstier
	Concurrency int      `yaml:"concurrency" json:"concurrency,omitempty"`
	Requests    int      `yaml:"requests" json:"requests,omitempty"`
	ThinkTime   Duration `yaml:"think_time" json:"think_time,omitempty"`
}

// How a sweep spaces its rates (Sweep.Scale; see Sweep.Rates).
const (
	ScaleLinear    = "linear"    // equal steps (the default)
	ScaleGeometric = "geometric" // equal ratios
)

// Sweep expands into stages from min_rate to max_rate.
type Sweep struct {
	MinRate    float64  `yaml:"min_rate" json:"min_rate"`
	MaxRate    float64  `yaml:"max_rate" json:"max_rate"`
	Stages     int      `yaml:"stages" json:"stages"`         // at most MaxSweepStages
	Scale      string   `yaml:"scale" json:"scale,omitempty"` // ScaleLinear (default) or ScaleGeometric
	Duration   Duration `yaml:"duration" json:"duration"`
	Arrival    string   `yaml:"arrival" json:"arrival,omitempty"`
	Burstiness float64  `yaml:"burstiness" json:"burstiness,omitempty"`
}

// Rates returns the sweep's rates: linear r_i = min + i·(max−min)/(n−1), geometric
// r_i = min·(max/min)^(i/(n−1)), i = 0..n−1; one stage runs at min_rate.
func (s Sweep) Rates() []float64 {
	out := make([]float64, s.Stages)
	for i := range out {
		if s.Stages == 1 {
			out[i] = s.MinRate
			continue
		}
		f := float64(i) / float64(s.Stages-1)
		if s.Scale == ScaleGeometric {
			out[i] = s.MinRate * math.Pow(s.MaxRate/s.MinRate, f)
		} else {
			out[i] = s.MinRate + f*(s.MaxRate-s.MinRate)
		}
	}
	return out
}

// MaxSweepStages bounds a sweep's stages (and calibrate's steps): a latency-vs-load profile needs
// tens, and a mistyped count would otherwise plan stages for days.
const MaxSweepStages = 256
