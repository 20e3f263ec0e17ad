package calibrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/wirebench/wirebench/schemas"
)

// HostPlan is how many client hosts of the calibrated machine's kind a rate needs
// (`wirebench calibrate --for-rate RATE`), from the fitted worker CPU model.
//
// A host runs capture alone, one worker per CPU (capture's default), so it has CPUs workers. The
// headroom rule: each worker is given the rate that keeps its fitted utilisation at
// ρ = IdleRho + c·λ_w = 0.5 (c = CPUPerReqNs), so a host takes
//
//	λ_host = CPUs · (0.5 − IdleRho) / c
//
// and no more than the highest rate the calibration held faithfully, scaled to CPUs workers,
// when the sweep went past it (a rate above it was not faithful: the measured limit of the
// machine wins over the line). Hosts = ⌈rate / λ_host⌉.
type HostPlan struct {
	Rate           float64 `json:"rate"`              // requests/s asked for
	WorkersPerHost int     `json:"workers_per_host"`  // the calibrated machine's CPUs
	ModelRate      float64 `json:"model_host_rate"`   // λ_host at worker ρ = 0.5
	FaithfulCap    float64 `json:"faithful_host_cap"` // the faithful rate scaled to WorkersPerHost; 0 = the sweep never failed
	HostRate       float64 `json:"host_rate"`         // min(ModelRate, FaithfulCap): what each host is given
	Hosts          int     `json:"hosts"`
	OutputTokens   int     `json:"output_tokens"` // of the calibration's requests: CPU per request grows with them
}

// ErrNoModel: the calibration has no usable worker CPU model.
var ErrNoModel = errors.New("no usable worker CPU model")

// PlanHosts applies the headroom rule of HostPlan to a calibration.
func PlanHosts(c *schemas.Calibration, rate float64) (HostPlan, error) {
	p := HostPlan{Rate: rate, WorkersPerHost: c.CPUs, OutputTokens: c.OutputTokens}
	f := c.Fit
	switch {
	case rate <= 0:
		return p, fmt.Errorf("rate %g: want > 0", rate)
	case c.CPUs < 1 || c.Workers < 1:
		return p, fmt.Errorf("%w: the calibration records %d CPUs and %d workers", ErrNoModel, c.CPUs, c.Workers)
	case f.CPUPerReqNs <= 0 || f.IdleRho >= schemas.TargetRho:
		return p, fmt.Errorf("%w: ρ = %.3f + %.0f ns × rate per worker cannot stay at %.1f (%s)", ErrNoModel, f.IdleRho, f.CPUPerReqNs, schemas.TargetRho, f.Method)
	case c.FaithfulRate <= 0:
		return p, fmt.Errorf("%w: no rate was held faithfully on this machine (%s)", ErrNoModel, c.FaithfulRule)
	}
	p.ModelRate = float64(c.CPUs) * (schemas.TargetRho - f.IdleRho) / (f.CPUPerReqNs * 1e-9)
	p.HostRate = p.ModelRate
	if slices.ContainsFunc(c.Rates, func(r schemas.CalibrationRate) bool { return r.TargetRate > c.FaithfulRate && !r.Faithful }) {
		p.FaithfulCap = c.FaithfulRate * float64(c.CPUs) / float64(c.Workers)
		p.HostRate = min(p.HostRate, p.FaithfulCap)
	}
	p.Hosts = int(math.Ceil(rate/p.HostRate - 1e-9))
	return p, nil
}

// WriteText writes the plan in one or two lines.
func (p HostPlan) WriteText(w io.Writer, c *schemas.Calibration) error {
	limit := fmt.Sprintf("%.0f requests/s per host: %d workers at worker ρ = %.1f", p.HostRate, p.WorkersPerHost, schemas.TargetRho)
	if p.FaithfulCap > 0 && p.FaithfulCap < p.ModelRate {
		limit = fmt.Sprintf("%.0f requests/s per host: the highest faithful rate (the model's %.0f at ρ = %.1f is past where this machine stopped being faithful)", p.HostRate, p.ModelRate, schemas.TargetRho)
	}
	_, err := fmt.Fprintf(w, "for %g requests/s: %d host(s) of this kind (%d CPUs each, capture alone on them), %s; for requests of %d output tokens like the calibration's\n",
		p.Rate, p.Hosts, p.WorkersPerHost, limit, p.OutputTokens)
	if err == nil && c.SharedCPUs {
		_, err = fmt.Fprintln(w, "  (the simulator shared this machine's CPUs during the calibration: the per-host rate is pessimistic)")
	}
	return err
}

// Load reads a calibration.json written by Run.
func Load(path string) (*schemas.Calibration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c schemas.Calibration
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if c.Version != 0 && c.Version != schemas.CalibrationVersion { // 0: written before versions, same layout
		return nil, fmt.Errorf("%s: %w: calibration_version %d, this wirebench reads %d", path, schemas.ErrVersion, c.Version, schemas.CalibrationVersion)
	}
	if len(c.Rates) == 0 && c.Fit.Points == 0 {
		return nil, fmt.Errorf("%s: no rates and no fit: not a calibration.json", path)
	}
	return &c, nil
}
