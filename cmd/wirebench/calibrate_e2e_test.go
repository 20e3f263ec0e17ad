package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// calibrate runs a short calibration (2 small rates, 2 s each) into a fresh directory and
// returns its calibration.json and stdout.
func runCalibrate(t *testing.T, args ...string) (*schemas.Calibration, string, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cal")
	base := []string{"calibrate", "-o", dir, "--min-rate", "10", "--max-rate", "20", "--steps", "2",
		"--stage-duration", "2s", "--warmup", "1s", "--output-tokens", "4", "--input-tokens", "8"}
	out, errOut, err := wirebench(t, 2*time.Minute, append(base, args...)...)
	if err != nil {
		t.Fatalf("wirebench calibrate %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out, errOut)
	}
	b, err := os.ReadFile(filepath.Join(dir, "calibration.json"))
	if err != nil {
		t.Fatalf("calibrate %v wrote no calibration.json: %v", args, err)
	}
	var c schemas.Calibration
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("calibration.json: %v", err)
	}
	// DIR is a normal, aggregated run directory.
	m, err := schemas.ReadManifest(filepath.Join(dir, schemas.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != schemas.StatusComplete {
		t.Errorf("calibrate %v: manifest status = %q; want %q", args, m.Status, schemas.StatusComplete)
	}
	st, err := schemas.ReadFile[schemas.Stage](filepath.Join(dir, "metrics", "stages.parquet"))
	if err != nil || len(st) != 2 {
		t.Errorf("calibrate %v: metrics/stages.parquet = %d rows, %v; want 2 rate stages aggregated", args, len(st), err)
	}
	if len(c.Rates) != 2 || c.Rates[0].TargetRate != 10 || c.Rates[1].TargetRate != 20 {
		t.Fatalf("calibrate %v: rates = %+v; want 10 and 20", args, c.Rates)
	}
	for _, r := range c.Rates {
		if r.Requests != int64(2*r.TargetRate) || r.Errors != 0 {
			t.Errorf("calibrate %v: rate %g: %d requests, %d errors; want %d, 0", args, r.TargetRate, r.Requests, r.Errors, int(2*r.TargetRate))
		}
		if r.ChunkErr.N != 4*int(r.Requests) || r.TTFTErr.N != int(r.Requests) {
			t.Errorf("calibrate %v: rate %g: %d chunk and %d TTFT error samples; want %d and %d (every content chunk has the server's send time)",
				args, r.TargetRate, r.ChunkErr.N, r.TTFTErr.N, 4*r.Requests, r.Requests)
		}
	}
	if !strings.Contains(out, "highest rate held faithfully") && !strings.Contains(out, "no rate was held faithfully") {
		t.Errorf("calibrate %v: stdout lacks the faithful-rate line:\n%s", args, out)
	}
	// The client's CPU per request (workers and coordinator) beside the faithful rate.
	for _, r := range c.Rates {
		// (over the coordinator's stage window, not the workers': it can be below the workers'
		// own figure, never zero)
		if r.ClientCPUPerReqNs <= 0 || r.MachineBusy <= 0 {
			t.Errorf("calibrate %v: rate %g: client CPU per request %.0f ns, machine busy %.2f; want both measured",
				args, r.TargetRate, r.ClientCPUPerReqNs, r.MachineBusy)
		}
	}
	if c.FaithfulRate > 0 && (c.FaithfulCPUPerReqNs <= 0 || !strings.Contains(out, "of CPU per request there (workers and coordinator)")) {
		t.Errorf("calibrate %v: faithful rate %g with client CPU per request %.0f ns; want it, and said beside the rate:\n%s", args, c.FaithfulRate, c.FaithfulCPUPerReqNs, out)
	}
	// On loopback every exact kernel stamp lies inside the simulator's write (calibrate.Truth).
	if (c.Kernel && (c.StampTransit.N == 0 || c.StampWrite.N != c.StampTransit.N || c.StampOutside != 0)) || !strings.Contains(out, "bounds: covered") {
		t.Errorf("calibrate %v: stamp transit over %d events, write over %d, %d outside their write; want none outside; the table's bounds line:\n%s",
			args, c.StampTransit.N, c.StampWrite.N, c.StampOutside, out)
	}
	if c.SharedCPUs != strings.Contains(out, "SHARE") {
		t.Errorf("calibrate %v: shared_cpus = %v but the table says SHARE: %v\n%s", args, c.SharedCPUs, !c.SharedCPUs, out)
	}
	return &c, out, dir
}

// TestCalibrateFindsStampLead: the simulator stamps each chunk, then waits 3 ms before writing
// it; calibrate must report an arrival error of about 3 ms (its error figures measure from the
// stamp before the write), and about 0 without the lead. The bounds hold the truth either way:
// it lies between the stamps before and after the write.
func TestCalibrateFindsStampLead(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end calibration runs")
	}
	const ms = float64(time.Millisecond)
	for _, tt := range []struct {
		lead           string
		min, max       float64 // bounds of the median errors, ns
		covMin, covMax float64 // bounds of the share of TTFT intervals meeting the simulator's write
	}{
		// 3 ms between the stamp and the write: the stamp before the write is 3 ms early, and
		// the intervals meet the write's window all the same.
		{"3ms", 2 * ms, 4 * ms, 1, 1},
		// Without the lead the errors are the client's, plus the simulator's own when it is
		// preempted between its stamp and its write on a loaded 2-CPU machine.
		{"0s", -0.1 * ms, 1 * ms, 1, 1},
	} {
		c, _, _ := runCalibrate(t, "--stamp-lead", tt.lead)
		if c.SimStampLead != int64(mustDuration(t, tt.lead)) {
			t.Errorf("stamp-lead %s: calibration.json sim_stamp_lead_ns = %d", tt.lead, c.SimStampLead)
		}
		for _, r := range c.Rates {
			for _, q := range []struct {
				name string
				v    int64
			}{{"chunk error median", r.ChunkErr.P50}, {"TTFT error median", r.TTFTErr.P50}} {
				if float64(q.v) < tt.min || float64(q.v) > tt.max {
					t.Errorf("stamp-lead %s, rate %g: %s = %v; want in [%v, %v]", tt.lead, r.TargetRate, q.name,
						time.Duration(q.v), time.Duration(tt.min), time.Duration(tt.max))
				}
			}
			// The lead delays every chunk alike: the gaps stay right.
			if d := time.Duration(r.ITLErr.P50); d < -time.Millisecond || d > time.Millisecond {
				t.Errorf("stamp-lead %s, rate %g: ITL error median = %v; want within 1ms of 0", tt.lead, r.TargetRate, d)
			}
			if r.BoundsCoverage < tt.covMin || r.BoundsCoverage > tt.covMax || r.TTFTBound.N != int(r.Requests) {
				t.Errorf("stamp-lead %s, rate %g: bounds coverage %.3f over %d requests; want in [%g, %g] over %d",
					tt.lead, r.TargetRate, r.BoundsCoverage, r.TTFTBound.N, tt.covMin, tt.covMax, r.Requests)
			}
			if r.ReadLag.N == 0 || r.ExactShare == 0 {
				t.Errorf("stamp-lead %s, rate %g: %d read-lag samples, exact share %g; want kernel timestamps", tt.lead, r.TargetRate, r.ReadLag.N, r.ExactShare)
			}
		}
	}
}

// TestCalibrateSingleProcess: the naive client has one worker and no kernel timestamps; its
// events have no lower bound, so its wide bounds do not make it client-bound.
func TestCalibrateSingleProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end calibration runs")
	}
	c, out, _ := runCalibrate(t, "--single-process")
	if !c.SingleProcess || c.Kernel || c.Workers != 1 || c.GOMAXPROCS != 1 {
		t.Errorf("single process: single=%v kernel=%v workers=%d gomaxprocs=%d; want true false 1 1", c.SingleProcess, c.Kernel, c.Workers, c.GOMAXPROCS)
	}
	for _, r := range c.Rates {
		if r.ExactShare != 0 || r.ReadLag.N != 0 {
			t.Errorf("single process, rate %g: exact share %g, %d read-lag samples; want 0 and 0 (no kernel timestamps)", r.TargetRate, r.ExactShare, r.ReadLag.N)
		}
		// Stamped after decoding, an event has no lower bound but the send: the bounds are
		// wide, and that is not the client's load.
		if r.ClientBound || val(r.Uncertainty) < int64(schemas.DefaultTolerance) {
			t.Errorf("single process, rate %g: client_bound %v, uncertainty %v; want wide bounds, not client-bound", r.TargetRate, r.ClientBound, time.Duration(val(r.Uncertainty)))
		}
	}
	if !strings.Contains(out, "SINGLE PROCESS") {
		t.Errorf("single process: the table does not say so:\n%s", out)
	}
}

func TestCalibrateBadInput(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--min-rate", "0"}, "rates must be > 0"},
		{[]string{"--min-rate", "50", "--max-rate", "10"}, "below min rate"},
		{[]string{"--geometric", "0.5"}, "geometric factor"},
		{[]string{"--single-process", "--workers", "2"}, "contradicts"},
		{[]string{"--stage-duration", "100ms"}, "stage duration"},
		{[]string{"--ttft", "0s"}, "fixed mode"},
		{[]string{"--target", "ftp://x"}, "calibrate.yaml:5: target.url: invalid URL"}, // the line of the config it wrote
	} {
		dir := filepath.Join(t.TempDir(), "cal")
		_, errOut, err := wirebench(t, time.Minute, append([]string{"calibrate", "-o", dir}, tt.args...)...)
		if err == nil || !strings.Contains(errOut, tt.want) {
			t.Errorf("calibrate %v: err=%v, stderr %q; want a failure naming %q", tt.args, err, errOut, tt.want)
		}
		if _, serr := os.Stat(filepath.Join(dir, "schedule")); serr == nil {
			t.Errorf("calibrate %v: bad input left %s/schedule behind", tt.args, dir)
		}
	}
}

func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestCalibrateTarget: calibrate against a simulator it did not start (--target), with a known
// stamp lead on that simulator.
func TestCalibrateTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end calibration runs")
	}
	url := startSim(t, "--mode", "fixed", "--ttft", "20ms", "--itl", "10ms", "--max-num-seqs", "0", "--stamp-lead", "2ms")
	c, _, _ := runCalibrate(t, "--target", url)
	if c.SimCPU != -1 || len(c.Notes) == 0 || !strings.Contains(c.Notes[0], url) {
		t.Errorf("--target %s: sim_cpu %d, notes %q; want -1 and a note naming the target", url, c.SimCPU, c.Notes)
	}
	for _, r := range c.Rates {
		if d := time.Duration(r.ChunkErr.P50); d < time.Millisecond || d > 3*time.Millisecond {
			t.Errorf("--target with the sim's 2ms stamp lead, rate %g: chunk error median = %v; want in [1ms, 3ms]", r.TargetRate, d)
		}
	}
}

// TestWorkersFollowLogLevel: the capture workers log at the level and in the format the command
// was given (they are started with the global log flags), not at their own default.
func TestWorkersFollowLogLevel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cal")
	args := []string{"--log-level", "warn", "--log-format", "json", "calibrate", "-o", dir, "--min-rate", "20", "--max-rate", "20",
		"--steps", "1", "--stage-duration", "1s", "--warmup", "0s", "--output-tokens", "2", "--input-tokens", "4"}
	out, errOut, err := wirebench(t, time.Minute, args...)
	if err != nil {
		t.Fatalf("wirebench %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out, errOut)
	}
	for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
		if line == "" {
			continue
		}
		if strings.Contains(line, `"level":"INFO"`) || strings.Contains(line, "level=INFO") || !strings.HasPrefix(line, "{") {
			t.Errorf("stderr line not a warn-or-worse JSON log line: %s", line)
		}
	}
}
