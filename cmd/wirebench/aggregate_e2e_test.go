package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// notBuiltYet reports whether `wirebench CMD ARGS...` exits 2 saying it is not built yet.
func notBuiltYet(t *testing.T, args ...string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	var errb strings.Builder
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == 2 && strings.Contains(errb.String(), "not built yet")
}

// TestAggregateRecoversSimTimings runs sim -> replay -> capture -> aggregate and checks that the
// server-source decomposition recovers the simulator's own per-request prefill, queue and decode
// (reported in raw server_*_ns) with a median error under 1 ms.
func TestAggregateRecoversSimTimings(t *testing.T) {
	dir := t.TempDir()
	for _, c := range [][]string{{"sim", "--listen", "127.0.0.1:0"}, {"replay", filepath.Join(dir, "none.yaml"), "-o", dir}, {"capture", dir}} {
		if notBuiltYet(t, c...) {
			t.Skipf("wirebench %s is not built yet; this end-to-end test runs once it is", c[0])
		}
	}
	url := startSim(t, "--prefill-per-token", "20us", "--itl", "5ms")
	cfg := filepath.Join(dir, "config.yaml")
	run := filepath.Join(dir, "run")
	os.WriteFile(cfg, []byte(`name: aggregate-e2e
seed: 1
target: {url: "`+url+`", api: completions, model: sim, ignore_eos: true, timeout: 30s}
load:
  stages:
    - {rate: 5, duration: 3s, arrival: constant}
    - {rate: 40, duration: 3s, arrival: constant}
workload:
  synthetic:
    input: {kind: fixed, value: 256}
    output: {kind: fixed, value: 16}
tokenizer: whitespace
`), 0o644)
	for _, args := range [][]string{{"replay", cfg, "-o", run}, {"capture", run}, {"aggregate", run}} {
		if _, errs, err := wirebench(t, 3*time.Minute, args...); err != nil {
			t.Fatalf("wirebench %v: %v\n%s", args, err, errs)
		}
	}
	raw := map[int64]schemas.RawRequest{}
	parts, _ := filepath.Glob(filepath.Join(run, "raw", "requests-*.parquet"))
	for _, p := range parts {
		rows, err := schemas.ReadFile[schemas.RawRequest](p)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			raw[r.Seq] = r
		}
	}
	rows, err := schemas.ReadFile[schemas.MetricRequest](filepath.Join(run, "metrics", "requests.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	var dq, dp, dd []int64
	for _, m := range rows {
		r := raw[m.Seq]
		if !m.OK || m.DecompositionSource != "server" || r.ServerPrefillNs == nil || r.ServerQueueNs == nil || r.ServerDecodeNs == nil {
			continue
		}
		abs := func(v int64) int64 { return max(v, -v) }
		dq = append(dq, abs(*m.QueueNs-*r.ServerQueueNs))
		dp = append(dp, abs(*m.PrefillNs-*r.ServerPrefillNs))
		dd = append(dd, abs(*m.DecodeNs-*r.ServerDecodeNs))
	}
	if len(dq) < 10 {
		t.Fatalf("%d requests decomposed from server timings; want at least 10", len(dq))
	}
	for _, c := range []struct {
		name string
		errs []int64
	}{{"T_queue", dq}, {"T_prefill", dp}, {"T_decode", dd}} {
		slices.Sort(c.errs)
		if med := c.errs[len(c.errs)/2]; med >= 1e6 {
			t.Errorf("%s median error = %v; want < 1ms", c.name, time.Duration(med))
		}
	}
}
