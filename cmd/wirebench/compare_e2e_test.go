package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// compareConfig is a short run against the simulator at url: Poisson arrivals at 20 req/s for
// 16 s (about 320 requests: p50 has an interval, p90 only where the values are not alike in
// time, p99 none: it needs 2,000; at 20 req/s the load verdict allows a send lag p99 of 5 ms, a
// tenth of the mean gap, where at 40 req/s a test machine busy with other tests went past its
// 2.5 ms and the gate rightly refused the red run), output lengths 2 to 10, drawn independently, so that E2E and NTPOT
// vary from request to request (a fixed-mode TTFT is the same for all but the machine's jitter,
// which drifts with its load: alike in time, its percentiles may have no interval). A loaded
// machine's reads are late by up to hundreds of milliseconds: the bias tolerance is wide so
// that the latency verdict stays green or amber (the gate refuses red).
func compareConfig(url, bias string) string {
	return `name: compare-e2e
target: {url: "` + url + `", api: completions, model: sim, ignore_eos: true}
load:
  warmup: {rate: 10, duration: 1s, arrival: constant}
  stages: [{rate: 20, duration: 16s, arrival: poisson}]
workload: {synthetic: {input: {kind: fixed, value: 8}, output: {kind: uniform, min: 2, max: 10}}}
bias: ` + bias + `
`
}

const wideBias = "{tolerance: 2s, tolerance_share: 0.9}"

// lightLoad lets compare's and search's end-to-end tests run in parallel with each other:
// t.Parallel holds them until every other test of the package has ended, then runs as many at
// once as -parallel allows (5 in the Makefile: all of them). Each sends a few to 20 requests a
// second to its own simulator and spends its minute waiting on the simulator's latencies, not
// on the CPU: one after another they took 230 of the package's 765 s on a 2-CPU guest, all at
// once 82 s (27 s of CPU).
func lightLoad(t *testing.T) { t.Parallel() }

// compareRun runs the config against url into a new run directory. compare's tests need runs
// whose trust is not red, and a busy machine may wake the pacer later than the load verdict
// allows (a send lag p99 of 5.5 ms against 4.85 ms, with other builds at nice 19 beside the
// test): such a run, blamed on the client or the machine, is made again, up to three times.
func compareRun(t *testing.T, url, bias string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "run.yaml")
	writeFile(t, cfg, compareConfig(url, bias))
	for try := 1; ; try++ {
		run := filepath.Join(dir, fmt.Sprint("run", try))
		if stdout, stderr, err := wirebench(t, 2*time.Minute, "run", cfg, "-o", run, "--workers", "1", "--tap", "off", "--quiet"); err != nil {
			t.Fatalf("wirebench run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
		}
		late := lateSends(t, run)
		if late == "" || try == 3 {
			return run
		}
		t.Logf("run %d: %s; running it again", try, late)
	}
}

// lateSends returns the load reason of run's first stage whose load was not delivered because
// the client's sends were late (its pacer or a busy machine), or "".
func lateSends(t *testing.T, run string) string {
	t.Helper()
	stages, err := schemas.ReadFile[schemas.Stage](filepath.Join(run, "metrics", "stages.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stages {
		switch s.LoadBlame {
		case schemas.BlameClient, schemas.BlameClientCPU, schemas.BlameMachine:
			if !s.LoadDelivered {
				return s.LoadReason
			}
		}
	}
	return ""
}

// compareJSON runs `wirebench compare --format json` and returns the comparison and the exit code.
func compareJSON(t *testing.T, args ...string) (schemas.Comparison, int, string) {
	t.Helper()
	stdout, stderr, err := wirebench(t, time.Minute, append([]string{"compare", "--format", "json"}, args...)...)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var c schemas.Comparison
	if err := json.Unmarshal([]byte(stdout), &c); err != nil {
		t.Fatalf("compare --format json: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	return c, code, stderr
}

// significant lists the significant changes of the given metrics.
func significant(c schemas.Comparison, metrics ...string) []string {
	var out []string
	for _, p := range c.Pairs {
		for _, ch := range p.Changes {
			if ch.Significant && slices.Contains(metrics, ch.Metric) {
				out = append(out, ch.Metric+" "+ch.Percentile)
			}
		}
	}
	return out
}

func findChange(c schemas.Comparison, metric, pct string) *schemas.CompareChange {
	for _, p := range c.Pairs {
		for i := range p.Changes {
			if ch := &p.Changes[i]; ch.Metric == metric && ch.Percentile == pct {
				return ch
			}
		}
	}
	return nil
}

// TestCompareSameConfigPasses: two runs of one config against one simulator (fixed mode: TTFT
// 100 ms, then a token each 20 ms) are paired by stage name, show no significant change, and
// pass a gate on E2E p50; with two runs more, so do two sets of two runs (compareSets).
func TestCompareSameConfigPasses(t *testing.T) {
	lightLoad(t)
	url := startSim(t, "--ttft", "100ms", "--itl", "20ms", "--max-num-seqs", "0")
	base, again := compareRun(t, url, wideBias), compareRun(t, url, wideBias)
	c, code, stderr := compareJSON(t, base, again, "--fail-on", "e2e.p50>+5%", "--fail-on", "ntpot.p50>+5%")
	if code != 0 || c.Gate == nil || c.Gate.Verdict != "pass" {
		t.Fatalf("compare of two runs of one config: exit %d, gate %+v; want 0 and pass\nstderr:\n%s", code, c.Gate, stderr)
	}
	if len(c.Pairs) != 1 || c.Pairs[0].PairedBy != schemas.PairedByName || len(c.Unmatched) != 0 {
		t.Fatalf("pairs %+v, unmatched %+v; want the one stage paired by name", c.Pairs, c.Unmatched)
	}
	// E2E and NTPOT vary from request to request by up to 160 ms (the output lengths), so the
	// two runs' intervals are as wide as their samples make them. The simulator's TTFT (and
	// TPOT) is one value for every request plus this machine's scheduling jitter, a millisecond
	// or two that drifts with the machine's load from one run to the next, more than within a
	// run: a real difference of the measured system, which compare may find significant on a
	// busy machine. Those are logged, not judged.
	if s := significant(c, "e2e", "ntpot"); len(s) > 0 {
		t.Errorf("significant changes between two runs of one config: %v", s)
	}
	if s := significant(c, "ttft", "ttfc", "tpot"); len(s) > 0 {
		t.Logf("significant changes of the near-constant latencies (the machine's drift): %v", s)
	}
	ch := findChange(c, "e2e", "p50")
	if ch == nil || ch.Lo == nil || ch.Hi == nil || *ch.Lo > 0 || *ch.Hi < 0 {
		t.Errorf("E2E p50 change %+v; want an interval holding 0", ch)
	}
	if ch := findChange(c, "ttft", "p99"); ch == nil || ch.Note != "n too small" || ch.Lo != nil {
		t.Errorf("TTFT p99 over about 320 requests: %+v; want no interval, n too small", ch)
	}
	compareSets(t, url, base, again)
}

// compareSets: two more runs of the config make two sets of two runs, each a directory of run
// directories; compared, their intervals are taken between the runs (method between), the gate
// on E2E p50 passes, E2E and NTPOT show no significant change, and the text names the sets. One
// run against a set is refused with exit 2.
func compareSets(t *testing.T, url string, base, again string) {
	t.Helper()
	a, b := filepath.Join(t.TempDir(), "base"), filepath.Join(t.TempDir(), "new")
	for dir, runs := range map[string][]string{a: {base, again}, b: {compareRun(t, url, wideBias), compareRun(t, url, wideBias)}} {
		for i, r := range runs {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(r, filepath.Join(dir, fmt.Sprint("r", i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	c, code, stderr := compareJSON(t, a, b, "--fail-on", "e2e.p50>+5%")
	if code != 0 || c.Method != schemas.CompareBetween || len(c.Base.Runs) != 2 || len(c.New.Runs) != 2 || c.Gate.Verdict != "pass" {
		t.Fatalf("compare of two sets of two runs: exit %d, method %q, runs %v / %v, gate %+v; want 0, between, 2 / 2, pass\nstderr:\n%s",
			code, c.Method, c.Base.Runs, c.New.Runs, c.Gate, stderr)
	}
	if s := significant(c, "e2e", "ntpot"); len(s) > 0 {
		t.Errorf("significant changes between two sets of one config: %v", s)
	}
	if ch := findChange(c, "e2e", "p50"); ch == nil || ch.Lo == nil || *ch.Lo > 0 || *ch.Hi < 0 || *ch.Lo > *ch.Change || *ch.Hi < *ch.Change {
		t.Errorf("E2E p50 change %+v; want an interval holding 0 and the change", ch)
	}
	out, _, err := wirebench(t, time.Minute, "compare", a, b)
	if err != nil || !strings.Contains(out, "NEW new (2 runs) vs BASE base (2 runs)") || !strings.Contains(out, "intervals between runs") {
		t.Errorf("text of two sets: %v\n%s", err, out)
	}
	_, stderr, err = wirebench(t, time.Minute, "compare", base, b)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr, "has 1 run and NEW") {
		t.Errorf("one run against a set: %v\n%s; want exit 2 naming the counts", err, stderr)
	}
	// A run of the set that was never aggregated (its manifest, no metrics/) is an error, not
	// left out.
	raw := filepath.Join(a, "r9")
	if err := os.MkdirAll(raw, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(base, schemas.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(raw, schemas.ManifestName), string(manifest))
	_, stderr, err = wirebench(t, time.Minute, "compare", a, b)
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr, "run "+raw+" has no") {
		t.Errorf("a set with a run not aggregated: %v\n%s; want exit 1 naming %s", err, stderr, raw)
	}
}

// TestCompareSlowerSimulatorFailsGate: NEW ran against a simulator 20% slower (--ttft 120ms
// --itl 24ms): E2E p50 is reported up about 20%, significant, and TTFT p50 and E2E p90 up about
// 20%; the gate exits 3 naming the regression; text and Markdown say the same.
func TestCompareSlowerSimulatorFailsGate(t *testing.T) {
	lightLoad(t)
	url := startSim(t, "--ttft", "100ms", "--itl", "20ms", "--max-num-seqs", "0")
	slow := startSim(t, "--ttft", "120ms", "--itl", "24ms", "--max-num-seqs", "0")
	base, worse := compareRun(t, url, wideBias), compareRun(t, slow, wideBias)
	c, code, stderr := compareJSON(t, base, worse, "--fail-on", "e2e.p50>+5%")
	if code != schemas.ExitGateFailed || c.Gate == nil || c.Gate.Verdict != "fail" {
		t.Fatalf("compare against a 20%% slower simulator: exit %d, gate %+v; want %d and fail\nstderr:\n%s", code, c.Gate, schemas.ExitGateFailed, stderr)
	}
	if !strings.Contains(stderr, "gate failed: E2E p50") {
		t.Errorf("stderr does not name the regression:\n%s", stderr)
	}
	if ch := findChange(c, "e2e", "p50"); ch == nil || ch.Change == nil || *ch.Change < 0.15 || *ch.Change > 0.25 || !ch.Significant {
		t.Errorf("E2E p50 change %+v; want about +20%%, significant", ch)
	}
	for _, mp := range [][2]string{{"ttft", "p50"}, {"e2e", "p90"}} {
		if ch := findChange(c, mp[0], mp[1]); ch == nil || ch.Change == nil || *ch.Change < 0.15 || *ch.Change > 0.25 {
			t.Errorf("%s %s change %+v; want about +20%%", mp[0], mp[1], ch)
		}
	}
	for _, format := range []string{"text", "markdown"} {
		out, _, err := wirebench(t, time.Minute, "compare", "--format", format, base, worse, "--fail-on", "e2e.p50>+5%")
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != schemas.ExitGateFailed {
			t.Errorf("--format %s: %v; want exit %d", format, err, schemas.ExitGateFailed)
		}
		if !strings.Contains(out, "E2E p50") || !strings.Contains(out, "significant") || !strings.Contains(out, "fail") {
			t.Errorf("--format %s does not show the significant E2E p50 change and the failed gate:\n%s", format, out)
		}
	}
}

// TestCompareRedTrustCannotPass: a run whose latency verdict is red (a bias tolerance of 1 µs
// that no client meets) cannot pass a gate, as BASE or as NEW, even with nothing regressed: exit
// 4 naming the red run. Without --fail-on the comparison is shown, with a note, and exits 0.
func TestCompareRedTrustCannotPass(t *testing.T) {
	lightLoad(t)
	url := startSim(t, "--ttft", "100ms", "--itl", "20ms", "--max-num-seqs", "0")
	good, red := compareRun(t, url, wideBias), compareRun(t, url, "{tolerance: 1us, tolerance_share: 0.00001}")
	for _, args := range [][]string{{good, red}, {red, good}} {
		c, code, stderr := compareJSON(t, append(args, "--fail-on", "e2e.p50>+50%")...)
		if code != schemas.ExitGateUntrusted || c.Gate == nil || c.Gate.Verdict != "untrusted" {
			t.Errorf("compare %v with a red run: exit %d, gate %+v; want %d and untrusted\nstderr:\n%s", args, code, c.Gate, schemas.ExitGateUntrusted, stderr)
		}
		if !strings.Contains(stderr, "trust is red") {
			t.Errorf("stderr does not say a run's trust is red:\n%s", stderr)
		}
	}
	c, code, _ := compareJSON(t, good, red)
	if code != 0 || c.Gate != nil || c.New.Trust != "red" || len(c.Notes) == 0 {
		t.Errorf("compare without --fail-on: exit %d, gate %+v, NEW trust %q, notes %v; want 0, no gate, red, a note", code, c.Gate, c.New.Trust, c.Notes)
	}
}
