package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// writeMetrics writes a small hand-made run (three stages, the last client-bound) to dir.
func writeMetrics(t *testing.T, dir, id string, speed float64) string {
	t.Helper()
	rd := filepath.Join(dir, id)
	var stages []schemas.Stage
	for i, rate := range []float64{2, 4, 8} {
		d := func(ns float64) schemas.Dist {
			n := int64(ns)
			at := func(num, den int64) *int64 { return ptr(n * num / den) }
			// bounds 1% below and 0.5% above each percentile
			return schemas.Dist{Count: 10, P50: at(1, 1), P90: at(3, 2), P95: at(7, 4), P99: at(2, 1), P999: at(2, 1), Max: at(3, 1), Mean: at(1, 1),
				P50Lo: at(99, 100), P50Hi: at(201, 200), P90Lo: at(297, 200), P90Hi: at(603, 400), P99Lo: at(198, 100), P99Hi: at(201, 100)}
		}
		s := schemas.Stage{Stage: int32(i), Name: "s" + string(rune('a'+i)), Mode: "open", TargetRate: rate,
			Requests: int64(rate * 5), Completed: int64(rate * 5), AchievedRate: ptr(rate), CompletionRate: ptr(rate * 0.99),
			OutputTPS: ptr(rate * 100 * speed), GoodputShare: ptr(1.0), GoodputRate: ptr(rate), RateFidelity: ptr(1.0), ExactShare: ptr(1.0),
			TTFT: d(40e6 * rate / speed), TPOT: d(8e6 / speed), ITL: d(8e6 / speed), NTPOT: d(9e6 / speed), E2E: d(900e6 / speed),
			Queue: d(5e6 * rate), Prefill: d(30e6), Decode: d(800e6), SendLag: d(50e3), ReadLag: d(10e3),
			Workers: 2, WorkerRhoMax: ptr(0.1 * rate), WorkersForRhoHalf: 1, Saturated: i == 1,
			PlannedRate: ptr(rate), LoadDelivered: true, UncertaintyNs: ptr(int64(15e4 / speed)), UncertaintyFigure: "e2e p99"}
		if i == 2 {
			s.ClientBound, s.ClientBoundReason = true, "e2e p99 bound [1782 ms, 1809 ms] is 27 ms wide > 18 ms"
			s.LoadDelivered, s.LoadBlame, s.WorkerRhoMax, s.WorkersForRhoHalf = false, schemas.BlameClientCPU, ptr(0.8), 4
			s.LoadReason = "send lag p99 2 ms > 1 ms; the client: 90% of the lateness was before the worker began the request (pacer and CPU); worker utilisation 0.80: 4 workers would bring it under 0.5"
		}
		stages = append(stages, s)
	}
	if err := schemas.WriteFile(filepath.Join(rd, "metrics", "stages.parquet"), stages, schemas.Producer{Command: "test"}); err != nil {
		t.Fatal(err)
	}
	m := &schemas.Manifest{RunID: id, Host: "h", CPUs: 2, Status: schemas.StatusComplete}
	if err := m.Write(filepath.Join(rd, schemas.ManifestName)); err != nil {
		t.Fatal(err)
	}
	return rd
}

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	a, b := writeMetrics(t, dir, "a", 1), writeMetrics(t, dir, "b", 2)

	out, errOut, err := wirebench(t, 2*time.Minute, "report", a)
	if err != nil {
		t.Fatalf("wirebench report %s: %v\nstderr:\n%s", a, err, errOut)
	}
	for _, f := range []string{"index.html", "summary.md", "profile.json", "stages.csv", "ttft.png", "throughput.png", "quality-1.png"} {
		if st, err := os.Stat(filepath.Join(a, "report", f)); err != nil || st.Size() == 0 {
			t.Errorf("report/%s: stat %v; want a non-empty file", f, err)
		}
	}
	tests := []struct {
		sub  string
		want int
	}{
		{"run a (host h, 2 CPUs, complete)", 1}, // header
		{"<- saturation", 1},                    // stage 1
		{"warning: Stage sc is client-bound", 1},
		{"trust red: stage sc is client-bound (e2e p99 bound", 1}, // the verdict line
		{"\nsa ", 1}, // one line per stage, named
	}
	for _, tt := range tests {
		if got := strings.Count(out, tt.sub); got != tt.want {
			t.Errorf("report stdout has %q %d times; want %d\n%s", tt.sub, got, tt.want, out)
		}
	}
	if strings.Contains(errOut, "level=ERROR") {
		t.Errorf("report logged an error:\n%s", errOut)
	}

	ab := filepath.Join(dir, "ab")
	out, errOut, err = wirebench(t, 2*time.Minute, "report", a, b, "-o", ab, "--quiet")
	if err != nil {
		t.Fatalf("wirebench report A B: %v\nstderr:\n%s", err, errOut)
	}
	if out != "" {
		t.Errorf("report --quiet printed %q; want nothing on stdout", out)
	}
	md, err := os.ReadFile(filepath.Join(ab, "summary.md"))
	if err != nil || !strings.Contains(string(md), "## b vs a (ratios B / A)") {
		t.Errorf("A/B summary.md: err %v, lacks the comparison section:\n%s", err, md)
	}
}

func TestReportCommandErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no run", []string{"report"}, "expected \"<run> ...\""},
		{"missing dir", []string{"report", filepath.Join(dir, "nope")}, "nope"},
		{"no metrics", []string{"report", dir}, "wirebench aggregate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, err := wirebench(t, time.Minute, tt.args...)
			if err == nil || !strings.Contains(errOut, tt.want) {
				t.Errorf("wirebench %v: err %v, stderr %q; want a failure mentioning %q", tt.args, err, errOut, tt.want)
			}
		})
	}
}

func TestReportHelp(t *testing.T) {
	out, _, err := wirebench(t, 30*time.Second, "report", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"<run> ...", "--out", "--open", "--quiet", "baseline A"} {
		if !strings.Contains(out, f) {
			t.Errorf("report --help lacks %q:\n%s", f, out)
		}
	}
}
