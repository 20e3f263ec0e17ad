package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// TestRunSmokeEndToEnd runs `wirebench run examples/smoke.yaml` (two 5 s stages, 20 and 50
// requests/s, 16 output tokens) against the simulator: every stage's files, the report and the
// terminal summary must be there, and the numbers must match what the simulator was told.
func TestRunSmokeEndToEnd(t *testing.T) {
	url := startSim(t, "--ttft", "20ms", "--itl", "5ms")
	run := filepath.Join(t.TempDir(), "smoke")
	out, stderr, err := wirebench(t, 90*time.Second, "run", "../../examples/smoke.yaml", "-o", run, "--target", url, "--quiet")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	m, err := schemas.ReadManifest(filepath.Join(run, schemas.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != schemas.StatusComplete {
		t.Errorf("manifest status %q; want complete (missing: %v)", m.Status, m.Missing)
	}
	var steps []string
	for _, s := range m.Steps {
		steps = append(steps, s.Name)
	}
	if got := strings.Join(steps, ","); got != "replay,capture,aggregate,report" {
		t.Errorf("manifest steps %s; want replay,capture,aggregate,report", got)
	}
	for _, f := range []string{"report/index.html", "report/summary.md", "report/profile.json", "report/stages.csv", "report/ttft.png"} {
		if st, err := os.Stat(filepath.Join(run, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v; want a non-empty file", f, err)
		}
	}
	stages, err := schemas.ReadFile[schemas.Stage](filepath.Join(run, "metrics", "stages.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != 2 {
		t.Fatalf("stages.parquet has %d rows; want 2", len(stages))
	}
	for i, want := range []int64{100, 250} { // 20/s and 50/s for 5 s
		s := stages[i]
		if s.Requests != want || s.Completed != want || s.Errors != 0 {
			t.Errorf("stage %d: %d requests, %d completed, %d errors; want %d, %d, 0", i, s.Requests, s.Completed, s.Errors, want, want)
		}
		// Fixed-mode simulator: TTFT 20 ms from its arrival, so the measured median sits just above.
		if p50 := time.Duration(val(s.TTFT.P50)); p50 < 20*time.Millisecond || p50 > 25*time.Millisecond {
			t.Errorf("stage %d: TTFT p50 %v; want 20-25 ms", i, p50)
		}
		if p50 := time.Duration(val(s.TPOT.P50)); p50 < 4*time.Millisecond || p50 > 6*time.Millisecond {
			t.Errorf("stage %d: TPOT p50 %v; want about 5 ms", i, p50)
		}
	}
	// The terminal summary: one line per stage, labelled by its name.
	for _, name := range []string{"\nconstant-20rps ", "\nconstant-50rps "} {
		if !strings.Contains(out, name) {
			t.Errorf("summary lacks a line for stage %q:\n%s", strings.TrimSpace(name), out)
		}
	}
}
