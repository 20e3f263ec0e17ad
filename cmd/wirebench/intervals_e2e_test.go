package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// TestIntervalsEndToEnd runs examples/smoke.yaml (100 and 250 requests of 16 tokens) against
// the simulator: every latency percentile's 95% interval in stages.parquet holds the percentile
// and its client bound; p99 and p99.9 (fewer than 2,000 values) have none; a TTFT or TPOT p50
// has one, over all the stage's values, and the terminal, summary.md and profile.json show it.
func TestIntervalsEndToEnd(t *testing.T) {
	url := startSim(t, "--ttft", "20ms", "--itl", "5ms")
	run := filepath.Join(t.TempDir(), "smoke")
	out, stderr, err := wirebench(t, 2*time.Minute, "run", "../../examples/smoke.yaml", "-o", run, "--target", url)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	stages, err := schemas.ReadFile[schemas.Stage](filepath.Join(run, "metrics", "stages.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != 2 {
		t.Fatalf("stages.parquet has %d rows; want 2", len(stages))
	}
	for _, s := range stages {
		if s.Overloaded { // the simulator's fixed times do not grow with a queue at this load
			t.Errorf("stage %s flagged overloaded (%s); its intervals are withheld", s.Name, s.OverloadedReason)
		}
		for _, l := range []struct {
			name string
			d    schemas.Dist
			ci   schemas.CI
		}{{"ttft", s.TTFT, s.TTFTCI}, {"ttfc", s.TTFC, s.TTFCCI}, {"tpot", s.TPOT, s.TPOTCI},
			{"itl", s.ITL, s.ITLCI}, {"e2e", s.E2E, s.E2ECI}, {"ntpot", s.NTPOT, s.NTPOTCI}} {
			for _, p := range []struct {
				name        string
				v, blo, bhi *int64
				lo, hi      *int64
				wantSmall   bool
			}{
				{"p50", l.d.P50, l.d.P50Lo, l.d.P50Hi, l.ci.P50Lo, l.ci.P50Hi, false},
				{"p90", l.d.P90, l.d.P90Lo, l.d.P90Hi, l.ci.P90Lo, l.ci.P90Hi, false},
				{"p99", l.d.P99, l.d.P99Lo, l.d.P99Hi, l.ci.P99Lo, l.ci.P99Hi, l.d.Count < 2000},
				{"p99.9", l.d.P999, l.d.P999, l.d.P999, l.ci.P999Lo, l.ci.P999Hi, true},
			} {
				what := s.Name + " " + l.name + " " + p.name
				if (p.lo == nil) != (p.hi == nil) {
					t.Errorf("%s: interval [%v, %v]; want both ends or neither", what, p.lo, p.hi)
					continue
				}
				if p.lo == nil {
					continue
				}
				if p.wantSmall {
					t.Errorf("%s of %d values: interval [%d, %d]; want null (n too small)", what, l.d.Count, *p.lo, *p.hi)
				}
				if *p.lo > *p.blo || *p.hi < *p.bhi || *p.lo > *p.v || *p.hi < *p.v {
					t.Errorf("%s: interval [%d, %d] does not hold the percentile %d and its bound [%d, %d]", what, *p.lo, *p.hi, *p.v, *p.blo, *p.bhi)
				}
				if *p.lo < 0 {
					t.Errorf("%s: interval [%d, %d] below 0", what, *p.lo, *p.hi)
				}
			}
		}
	}
	// A stage and latency with a p50 interval, to find in the report: the simulator's fixed
	// TTFT and ITL make neighbours independent, so 100 requests suffice unless the machine
	// stalls the run for long stretches.
	var s *schemas.Stage
	var ci schemas.CI
	for i := range stages {
		for _, c := range []schemas.CI{stages[i].TTFTCI, stages[i].TPOTCI} {
			if s == nil && c.P50Lo != nil {
				s, ci = &stages[i], c
			}
		}
	}
	if s == nil {
		t.Fatalf("no stage has a TTFT or TPOT p50 interval: %+v, %+v", stages[0].TTFTCI, stages[1].TTFTCI)
	}
	if s.ITLCI.Values != s.ITL.Count || s.TTFTCI.Values != s.TTFT.Count {
		t.Errorf("stage %d: intervals over %d TTFT and %d ITL values; want all %d and %d", s.Stage, s.TTFTCI.Values, s.ITLCI.Values, s.TTFT.Count, s.ITL.Count)
	}

	// The report: a percentile with its interval in the tables ("16.8ms [16.4ms, 17.1ms]",
	// where a client bound is in offsets: "[-2.60ms, +1.80ms]"), the note that reads it,
	// profile.json.
	shown := regexp.MustCompile(`\d[\d.]*ms \[\d[\d.]*ms, \d[\d.]*ms\]`)
	md, err := os.ReadFile(filepath.Join(run, "report", "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []struct{ name, text string }{{"terminal summary", out}, {"summary.md", string(md)}} {
		if !shown.MatchString(doc.text) {
			t.Errorf("%s shows no percentile with its interval:\n%s", doc.name, doc.text)
		}
	}
	if !strings.Contains(out, "95% interval") {
		t.Errorf("terminal summary does not say what its brackets are:\n%s", out)
	}
	pj, err := os.ReadFile(filepath.Join(run, "report", "profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	var prof schemas.Profile
	if err := json.Unmarshal(pj, &prof); err != nil {
		t.Fatal(err)
	}
	key := "ttft_ns"
	if ci != s.TTFTCI {
		key = "tpot_ns"
	}
	got := prof.Runs[0].Stages[s.Stage].Intervals[key]
	if prof.ProfileVersion != schemas.ProfileVersion || got.P50Lo == nil || *got.P50Lo != *ci.P50Lo {
		t.Errorf("profile.json (version %d): stage %d %s interval %+v; want p50_lo %d", prof.ProfileVersion, s.Stage, key, got, *ci.P50Lo)
	}
}
