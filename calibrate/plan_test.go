package calibrate

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

// vm is the 2-CPU project VM's calibration (client and simulator sharing the CPUs, every rate
// of the sweep up to 2,000/s faithful).
func vm() *schemas.Calibration {
	return &schemas.Calibration{CPUs: 2, Workers: 2, SharedCPUs: true, OutputTokens: 16, FaithfulRate: 2000,
		Fit:   schemas.WorkerFit{IdleRho: 0.074, CPUPerReqNs: 140_000, Points: 4},
		Rates: []schemas.CalibrationRate{{TargetRate: 1000, Faithful: true}, {TargetRate: 2000, Faithful: true}}}
}

func TestPlanHosts(t *testing.T) {
	cases := []struct {
		name      string
		cal       func() *schemas.Calibration
		rate      float64
		hostRate  float64
		hosts     int
		cappedBy0 bool // FaithfulCap is 0 (the sweep never failed)
	}{
		// 2 × (0.5 − 0.074) / 140 µs = 6,085.7/s a host: 100,000 / 6,085.7 = 16.4 → 17.
		{"model, sweep never failed", vm, 100_000, 6085.714, 17, true},
		{"one host is enough", vm, 6000, 6085.714, 1, true},
		{"exactly two hosts' worth", vm, 2 * 6085.714285714286, 6085.714, 2, true},
		// A failure above the faithful 2,000/s caps a host at 2,000 × 2/2 workers.
		{"faithful rate caps the model", func() *schemas.Calibration {
			c := vm()
			c.Rates = append(c.Rates, schemas.CalibrationRate{TargetRate: 4000})
			return c
		}, 100_000, 2000, 50, false},
		// 4 CPUs, 3 workers calibrated (one CPU for the simulator): the cap scales to 4 workers,
		// 3,000 × 4/3 = 4,000, under the model's 4 × 0.4 / 200 µs = 8,000.
		{"cap scaled to the host's CPUs", func() *schemas.Calibration {
			return &schemas.Calibration{CPUs: 4, Workers: 3, FaithfulRate: 3000, Fit: schemas.WorkerFit{IdleRho: 0.1, CPUPerReqNs: 200_000},
				Rates: []schemas.CalibrationRate{{TargetRate: 3000, Faithful: true}, {TargetRate: 6000}}}
		}, 100_000, 4000, 25, false},
		// A failed rate below a faithful one is not above the faithful rate: no cap.
		{"failure below the faithful rate", func() *schemas.Calibration {
			c := vm()
			c.Rates = append(c.Rates, schemas.CalibrationRate{TargetRate: 500})
			return c
		}, 100_000, 6085.714, 17, true},
	}
	for _, tc := range cases {
		p, err := PlanHosts(tc.cal(), tc.rate)
		if err != nil || p.Hosts != tc.hosts || math.Abs(p.HostRate-tc.hostRate) > 0.01 || (p.FaithfulCap == 0) != tc.cappedBy0 {
			t.Errorf("%s: PlanHosts(%g) = %d hosts at %.3f/s (cap %g), %v; want %d at %.3f/s", tc.name, tc.rate, p.Hosts, p.HostRate, p.FaithfulCap, err, tc.hosts, tc.hostRate)
		}
	}
}

func TestPlanHostsErrors(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(c *schemas.Calibration)
		rate  float64
		model bool // wants ErrNoModel
	}{
		{"rate 0", func(c *schemas.Calibration) {}, 0, false},
		{"idle cost at 0.5", func(c *schemas.Calibration) { c.Fit.IdleRho = 0.5 }, 1000, true},
		{"no fit", func(c *schemas.Calibration) { c.Fit.CPUPerReqNs = 0 }, 1000, true},
		{"nothing faithful", func(c *schemas.Calibration) { c.FaithfulRate = 0 }, 1000, true},
		{"no CPUs recorded", func(c *schemas.Calibration) { c.CPUs = 0 }, 1000, true},
	}
	for _, tc := range cases {
		c := vm()
		tc.edit(c)
		_, err := PlanHosts(c, tc.rate)
		if err == nil || errors.Is(err, ErrNoModel) != tc.model {
			t.Errorf("%s: PlanHosts = %v; want an error (ErrNoModel: %v)", tc.name, err, tc.model)
		}
	}
}

func TestPlanWriteText(t *testing.T) {
	c := vm()
	p, err := PlanHosts(c, 100_000)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := p.WriteText(&b, c); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"for 100000 requests/s: 17 host(s)", "6086 requests/s per host: 2 workers at worker ρ = 0.5", "16 output tokens", "pessimistic"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("WriteText = %q; want it to contain %q", b.String(), want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "calibration.json")
	if err := write(vm(), path); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil || c.Fit.CPUPerReqNs != 140_000 || c.FaithfulRate != 2000 || len(c.Rates) != 2 {
		t.Fatalf("Load = %+v, %v; want the calibration written", c, err)
	}
	other := filepath.Join(dir, "other.json")
	if err := os.WriteFile(other, []byte(`{"run_id": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(other); err == nil || !strings.Contains(err.Error(), "not a calibration.json") {
		t.Errorf("Load(other JSON) = %v; want an error saying it is not a calibration.json", err)
	}
	if c.Version != schemas.CalibrationVersion {
		t.Errorf("written calibration_version = %d; want %d", c.Version, schemas.CalibrationVersion)
	}
	newer := filepath.Join(dir, "newer.json")
	if err := os.WriteFile(newer, []byte(`{"calibration_version": 99, "fit": {"points": 2}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(newer); !errors.Is(err, schemas.ErrVersion) {
		t.Errorf("Load(version 99) = %v; want schemas.ErrVersion", err)
	}
}
