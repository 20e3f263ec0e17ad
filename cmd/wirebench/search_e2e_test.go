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

// TestSearchFindsSimulatorCapacity searches a fixed-mode simulator whose capacity is known
// exactly: 1 slot, each request holding it for ttft + (N - 1) × itl = 100 ms + 10 × 40 ms =
// 500 ms, so it serves at most 2 req/s, a rate whose send-lag limit (50 ms) even a loaded
// machine's client meets. Below that, constant arrivals never queue (TTFT 100 ms, under the
// 160 ms SLO); above it the queue grows without end, and over a 4 s step the last TTFTs pass
// 160 ms once the rate is 60 ms / 4 s = 1.5% over 2 req/s: that is where the simulator's own
// timing crosses the SLO. The search must bracket it within its 5% precision (plus 3% for the
// simulator's timer jitter) in at most 8 steps, stop the clearly failing steps early, and end
// in the sentence. The bias tolerance is wide (20 ms, against the SLO's 60 ms of slack): a
// loaded machine's reads are late by milliseconds, which does not move the verdict.
func TestSearchFindsSimulatorCapacity(t *testing.T) {
	lightLoad(t)
	const truth = 2 * (1 + 0.06/4)
	url := startSim(t, "--mode", "fixed", "--ttft", "100ms", "--itl", "40ms", "--max-num-seqs", "1")
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "search.yaml")
	writeFile(t, cfgPath, `name: search-e2e
target: {url: "`+url+`", api: completions, model: sim, ignore_eos: true}
load: {warmup: {rate: 2, duration: 1s, arrival: constant}}
workload: {synthetic: {input: {kind: fixed, value: 8}, output: {kind: fixed, value: 11}}}
slo: {ttft: 160ms}
bias: {tolerance: 20ms, tolerance_share: 0.1}
search: {min_rate: 0.5, max_rate: 8, duration: 4s}
`)
	out := filepath.Join(dir, "search")
	stdout, stderr, err := wirebench(t, 4*time.Minute, "search", cfgPath, "-o", out, "--workers", "1", "--tap", "off", "--quiet")
	if err != nil {
		t.Fatalf("wirebench search: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	var rec schemas.SearchRecord
	b, err := os.ReadFile(filepath.Join(out, "search.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatalf("search.json: %v", err)
	}
	if !rec.Done || rec.Outcome != "converged" {
		t.Fatalf("search: done %v, outcome %q; want converged\n%s", rec.Done, rec.Outcome, stdout)
	}
	if n := len(rec.Steps); n > 8 {
		t.Errorf("search took %d steps; want at most 8\n%s", n, stdout)
	}
	// The bracket holds the truth (a 3% margin for the simulator's timer jitter on a loaded
	// machine) and is as narrow as the precision.
	if rec.PassRate > truth*1.03 || rec.FailRate < truth*0.97 || rec.FailRate > rec.PassRate*1.05+1e-9 {
		t.Errorf("search: passes %g, fails %g req/s; want a bracket within 5%% around the capacity %.2f\n%s", rec.PassRate, rec.FailRate, truth, stdout)
	}
	if rec.LimitedBy != "TTFT p99" {
		t.Errorf("search: limited by %q; want TTFT p99", rec.LimitedBy)
	}
	early := 0
	for _, s := range rec.Steps {
		if s.Verdict == schemas.StepUntrusted {
			t.Errorf("step %d (%g req/s) untrusted: %s", s.Index, s.Rate, s.Reason)
		}
		if s.EarlyStop != "" {
			early++
			if s.Rate < truth*0.97 {
				t.Errorf("step %d at %g req/s was stopped early (%s); only a rate over the capacity %.2f may be", s.Index, s.Rate, s.EarlyStop, truth)
			}
		}
		// Every step is an ordinary, aggregated run directory.
		if _, err := os.Stat(filepath.Join(out, s.Dir, "metrics", "stages.parquet")); err != nil {
			t.Errorf("step %d: %v", s.Index, err)
		}
		if s.Why == "" {
			t.Errorf("step %d: no reason for its rate", s.Index)
		}
	}
	if early == 0 {
		t.Errorf("no step was stopped early; the steps well over capacity should have been:\n%s", stdout)
	}
	md, err := os.ReadFile(filepath.Join(out, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	last := strings.TrimSpace(string(md))
	last = last[strings.LastIndex(last, "\n")+1:]
	if !strings.HasPrefix(last, "capacity under SLO: ") || !strings.Contains(last, "limited by TTFT p99") || !strings.Contains(stdout, last) {
		t.Errorf("summary.md ends with %q; want the capacity sentence (also on stdout)", last)
	}
}

// TestSearchUntrustedStepStops: a step whose load the client cannot deliver (a connection
// cap of 1 against 2 s answers) is neither a pass nor a fail: the search stops and says so.
func TestSearchUntrustedStepStops(t *testing.T) {
	lightLoad(t)
	url := startSim(t, "--mode", "fixed", "--ttft", "2s", "--itl", "1ms", "--max-num-seqs", "0")
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "search.yaml")
	writeFile(t, cfgPath, `target: {url: "`+url+`", api: completions, model: sim, ignore_eos: true}
workload: {synthetic: {input: {kind: fixed, value: 8}, output: {kind: fixed, value: 2}}}
slo: {e2e: 10s}
search: {min_rate: 5, max_rate: 20, duration: 2s}
`)
	out := filepath.Join(dir, "search")
	stdout, stderr, err := wirebench(t, 3*time.Minute, "search", cfgPath, "-o", out, "--workers", "1", "--max-connections", "1", "--tap", "off", "--quiet")
	if err != nil {
		t.Fatalf("wirebench search: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	var rec schemas.SearchRecord
	b, err := os.ReadFile(filepath.Join(out, "search.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Outcome != "untrusted" || len(rec.Steps) != 1 || rec.Steps[0].Verdict != schemas.StepUntrusted {
		t.Fatalf("search: outcome %q after %d steps; want untrusted after the first\n%s", rec.Outcome, len(rec.Steps), stdout)
	}
	if !strings.Contains(stdout, "could not deliver") || !strings.Contains(stdout, "capacity under SLO: not found") {
		t.Errorf("summary does not say the client could not deliver the load:\n%s", stdout)
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
