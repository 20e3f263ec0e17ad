package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/construn"
	"github.com/wirebench/wirebench/schemas"
)

// The simulator's whole fault mix at 5% each, at load, through `wirebench run`: every planned
// request is one row; each fault lands in its error kind (429, 500 and 503 as http_status with
// their status, a dropped connection as reset and a cut JSON event as malformed_stream, both
// with the chunks that came before; a stall and late headers are answers, slow ones); every
// failure is a goodput miss; the stage's errors_by_kind and the report's profile.json count
// them as the raw rows do.
func TestRunWithFaultMix(t *testing.T) {
	url := startFaultySim(t)
	checkFaultMix(t, schemas.Target{URL: url, API: "completions", Model: "sim"})
}

// The simulator's fault settings for the fault-mix tests.
const stall, slowHeaders = 300 * time.Millisecond, 300 * time.Millisecond

// startFaultySim starts the simulator with its whole fault mix at 5% each.
func startFaultySim(t *testing.T) string {
	t.Helper()
	return startSim(t, "--ttft", "10ms", "--itl", "2ms", "--fault-seed", "7",
		"--fault-429", "0.05", "--fault-500", "0.05", "--fault-503", "0.05", "--fault-stall", "0.05",
		"--fault-drop", "0.05", "--fault-malformed", "0.05", "--fault-slow-headers", "0.05",
		"--stall", stall.String(), "--slow-headers", slowHeaders.String())
}

// checkFaultMix runs 300 requests at 100 req/s against tgt (the faulty simulator, or a proxy in
// front of it) and checks what TestRunWithFaultMix says.
func checkFaultMix(t *testing.T, tgt schemas.Target) {
	t.Helper()
	const rate, planned, maxTokens = 100, 300, 8
	cfg := filepath.Join(constantRun(t, tgt, construn.Stage{Rate: rate, Duration: planned / rate * time.Second, InputTokens: 16, MaxTokens: maxTokens}), "constant.yaml")
	out := filepath.Join(t.TempDir(), "run")
	stdout, stderr, err := wirebench(t, time.Minute, "run", cfg, "-o", out, "--workers", "1", "--tap", "off", "--quiet")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	m, reqs, chunks := rawFiles(t, out)
	if m.Status != schemas.StatusComplete {
		t.Errorf("manifest status %q; want complete (failures are rows, not a failed run)", m.Status)
	}
	if len(m.Outages) != 0 {
		t.Errorf("outages %v; want none (the server never went away)", m.Outages)
	}
	perSeq := map[int64]int{}
	for _, c := range chunks {
		perSeq[c.Seq]++
	}
	seen := map[int64]bool{}
	kinds := map[string]int64{}
	statuses := map[int32]int{}
	stalled, late := 0, 0
	for _, r := range reqs {
		if seen[r.Seq] {
			t.Errorf("seq %d recorded twice", r.Seq)
		}
		seen[r.Seq] = true
		if perSeq[r.Seq] != int(r.Chunks) {
			t.Errorf("seq %d: %d chunk rows; the request row says %d", r.Seq, perSeq[r.Seq], r.Chunks)
		}
		if r.ErrorKind != "" {
			kinds[r.ErrorKind]++
		}
		switch r.ErrorKind {
		case schemas.ErrHTTPStatus:
			statuses[r.Status]++
			if !strings.Contains(r.ErrorMessage, "injected fault") {
				t.Errorf("seq %d: status %d message %q; want the server's error body", r.Seq, r.Status, r.ErrorMessage)
			}
		case schemas.ErrReset, schemas.ErrMalformedStream:
			if r.Chunks == 0 || r.Status != 200 {
				t.Errorf("seq %d: %s with status %d and %d chunks; want the events before the fault kept", r.Seq, r.ErrorKind, r.Status, r.Chunks)
			}
		case "":
			if r.HeadersNs != nil && time.Duration(*r.HeadersNs-r.SentNs) >= slowHeaders {
				late++
			}
			if r.DoneNs != nil && time.Duration(*r.DoneNs-r.SentNs) >= stall+10*time.Millisecond && (r.HeadersNs == nil || time.Duration(*r.HeadersNs-r.SentNs) < slowHeaders) {
				stalled++
			}
		default:
			t.Errorf("seq %d: %s: %s; want only the injected faults' kinds", r.Seq, r.ErrorKind, r.ErrorMessage)
		}
	}
	if len(seen) != planned {
		t.Errorf("%d requests recorded; want the %d planned", len(seen), planned)
	}
	// 5% of 300 is 15 each; the draws are seeded, the bounds wide.
	for name, n := range map[string]int{"429": statuses[429], "500": statuses[500], "503": statuses[503],
		"drop": int(kinds[schemas.ErrReset]), "malformed": int(kinds[schemas.ErrMalformedStream]), "stall": stalled, "slow-headers": late} {
		if n < 3 || n > 40 {
			t.Errorf("fault %s seen %d times in %d requests; want about 15", name, n, planned)
		}
	}
	t.Logf("kinds %v, statuses %v, stalled %d, late headers %d", kinds, statuses, stalled, late)

	metrics, err := schemas.ReadFile[schemas.MetricRequest](filepath.Join(out, "metrics", "requests.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	var met int64
	for _, r := range metrics {
		if r.ErrorKind != "" && (r.OK || r.SLOMet) {
			t.Errorf("seq %d: %s counted ok %v, slo_met %v; want a goodput miss", r.Seq, r.ErrorKind, r.OK, r.SLOMet)
		}
		if r.SLOMet {
			met++
		}
	}
	stages, err := schemas.ReadFile[schemas.Stage](filepath.Join(out, "metrics", "stages.parquet"))
	if err != nil || len(stages) != 1 {
		t.Fatalf("stages: %v, %d rows; want 1", err, len(stages))
	}
	var byKind map[string]int64
	if err := json.Unmarshal([]byte(stages[0].ErrorsByKind), &byKind); err != nil || !equalCounts(byKind, kinds) {
		t.Errorf("stage errors_by_kind %s (%v); want the raw rows' %v", stages[0].ErrorsByKind, err, kinds)
	}
	if st := stages[0]; math.Abs(val(st.GoodputShare)-float64(met)/float64(st.Requests)) > 1e-9 || st.Requests != planned || met > planned-sum(kinds) {
		t.Errorf("stage goodput share %.4f of %d requests; want the %d that met the SLO of the %d planned, at most the %d ok", val(st.GoodputShare), st.Requests, met, planned, planned-sum(kinds))
	}
	var p struct {
		Runs []struct {
			Stages []struct {
				ErrorsByKind map[string]int64 `json:"errors_by_kind"`
			} `json:"stages"`
		} `json:"runs"`
	}
	b, err := os.ReadFile(filepath.Join(out, "report", "profile.json"))
	if err == nil {
		err = json.Unmarshal(b, &p)
	}
	if err != nil || len(p.Runs) != 1 || len(p.Runs[0].Stages) != 1 || !equalCounts(p.Runs[0].Stages[0].ErrorsByKind, kinds) {
		t.Errorf("profile.json errors_by_kind (err %v) %+v; want %v", err, p.Runs, kinds)
	}
	if !strings.Contains(stdout, "trust") {
		t.Errorf("run printed no summary:\n%s", stdout)
	}
}

func equalCounts(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}
