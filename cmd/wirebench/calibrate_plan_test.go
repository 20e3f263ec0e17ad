package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// TestCalibrateFromPlan: `calibrate --from calibration.json --for-rate R` prints the hosts R
// needs without sweeping; without --for-rate it is a usage error.
func TestCalibrateFromPlan(t *testing.T) {
	cal := schemas.Calibration{CPUs: 2, Workers: 2, OutputTokens: 16, FaithfulRate: 2000,
		Fit:   schemas.WorkerFit{IdleRho: 0.074, CPUPerReqNs: 140_000, Points: 4},
		Rates: []schemas.CalibrationRate{{TargetRate: 2000, Faithful: true}}}
	b, err := json.Marshal(cal)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "calibration.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := wirebench(t, time.Minute, "calibrate", "--from", path, "--for-rate", "100000")
	if err != nil || !strings.Contains(out, "for 100000 requests/s: 17 host(s) of this kind (2 CPUs each") {
		t.Errorf("calibrate --from --for-rate 100000: %v, stdout %q, stderr %q; want 17 hosts of 2 CPUs", err, out, errOut)
	}
	_, errOut, err = wirebench(t, time.Minute, "calibrate", "--from", path)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(errOut, "--from needs --for-rate") {
		t.Errorf("calibrate --from without --for-rate: %v, stderr %q; want exit 2 asking for --for-rate", err, errOut)
	}
}
