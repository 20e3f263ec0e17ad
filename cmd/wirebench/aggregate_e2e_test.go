package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// Simulator settings of the decomposition test, and what they make the simulator report.
// With --max-num-seqs 1 and --batch-slowdown 0, every engine step runs one sequence, so the
// simulator's prefill of a request (admission to first token) is exactly
// itl + prefill-base + I·prefill-per-token (the model that both the fit and the histograms'
// per-stage mean assume), and only its queue time changes with load. With more slots, requests
// admitted in the same step share one longer prefill step: per-request variation that neither a
// per-stage histogram mean nor a fit over I can see, so their per-request error would then be
// bounded by that step length, not by 1 ms. --prefix-cache-blocks 0 keeps prefix-cache hits
// (synthetic prompts share corpus text) from shortening some prefills.
const (
	decITL             = 2 * time.Millisecond
	decPrefillBase     = time.Millisecond
	decPrefillPerToken = 10 * time.Microsecond
)

// firstLast is a response's first content event and last event, as times of the simulator's
// writes that carried them (server_sent_ns), with those events' indexes.
type firstLast struct {
	first, last int64
	fi, li      int32
}

// serverWrites gives each request its firstLast; first or last is 0 where the simulator
// reported no time.
func serverWrites(chunks []schemas.RawChunk) map[int64]firstLast {
	out := map[int64]firstLast{}
	for _, c := range chunks {
		if c.ServerSentNs == 0 {
			continue
		}
		w, seen := out[c.Seq]
		if !seen {
			w = firstLast{fi: -1, li: -1}
		}
		if c.Kind == schemas.ChunkContent && (w.fi < 0 || c.Index < w.fi) {
			w.first, w.fi = c.ServerSentNs, c.Index
		}
		if c.Index > w.li {
			w.last, w.li = c.ServerSentNs, c.Index
		}
		out[c.Seq] = w
	}
	return out
}

// medianNs is the lower median of v (it sorts v).
func medianNs(v []int64) time.Duration {
	slices.Sort(v)
	return time.Duration(v[(len(v)-1)/2])
}

// TestAggregateDecompositionSources runs sim -> replay -> capture once, then aggregate once per
// decomposition source (server, histograms, fit) into its own OUT directory, and checks that
// each recovers the simulator's own per-request T_queue, T_prefill and T_decode (raw
// server_queue_ns, server_prefill_ns, server_decode_ns) with a median absolute error under 1 ms.
//
// Stage 0 (10 req/s, one request every 100 ms, each ~25 ms long) never queues: it is the
// least-loaded stage the fit uses, with input lengths uniform in [100, 400] so the fit has
// spread. Stage 1 (60 req/s against ~40 req/s of capacity) builds a real queue of up to about a
// second. capture scrapes the simulator's /metrics once a second (target.metrics_url), which
// gives the histograms source its per-stage deltas; its per-stage mean prefill is spread over
// the stage's requests with the fit's slope (see aggregate/decompose.go).
//
// Every source measures T_queue as TTFT − prefill and T_decode as E − t_first from the client's
// timestamps, so their truth is taken at the simulator's socket: T_queue from the client's send
// to the simulator's write of the first token, less its engine's prefill; T_decode from that
// write to the write of the stream's last event (server_sent_ns). The simulator's own delays
// outside its engine (reading the request, handing a token to its writer), which a loaded
// machine stretches to milliseconds, then count on both sides; what is left is the estimate of
// the prefill and loopback's transport, tens of µs. The fit's prefill includes, by its
// definition, those delays as they were at the least-loaded stage; its truth does too (the
// median, measured in the run), so that the test judges the fit and not the machine's load.
func TestAggregateDecompositionSources(t *testing.T) {
	dir := t.TempDir()
	url := startSim(t, "--mode", "engine", "--max-num-seqs", "1", "--batch-slowdown", "0",
		"--itl", decITL.String(), "--prefill-base", decPrefillBase.String(),
		"--prefill-per-token", decPrefillPerToken.String(), "--prefix-cache-blocks", "0")
	cfg := filepath.Join(dir, "config.yaml")
	run := filepath.Join(dir, "run")
	if err := os.WriteFile(cfg, []byte(`name: aggregate-decomposition-e2e
seed: 7
target: {url: "`+url+`", api: completions, model: sim, ignore_eos: true, timeout: 30s, metrics_url: "`+url+`/metrics"}
load:
  stages:
    - {rate: 10, duration: 3s, arrival: constant}
    - {rate: 60, duration: 3s, arrival: constant}
workload:
  synthetic:
    input: {kind: uniform, min: 100, max: 400}
    output: {kind: fixed, value: 10}
tokenizer: whitespace
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"replay", cfg, "-o", run}, {"capture", run}} {
		if _, errs, err := wirebench(t, 2*time.Minute, args...); err != nil {
			t.Fatalf("wirebench %v: %v\n%s", args, err, errs)
		}
	}
	_, reqs, chunks := rawFiles(t, run)
	if len(reqs) == 0 {
		t.Fatalf("no raw requests in %s", run)
	}
	raw := make(map[int64]schemas.RawRequest, len(reqs))
	for _, r := range reqs {
		raw[r.Seq] = r
	}
	writes := serverWrites(chunks)

	// The run must exercise what the sources are meant to separate: queueing in stage 1.
	var maxQueue [2]int64
	for _, r := range raw {
		if r.ServerQueueNs != nil && r.Stage >= 0 && r.Stage < 2 {
			maxQueue[r.Stage] = max(maxQueue[r.Stage], *r.ServerQueueNs)
		}
	}
	if maxQueue[1] < 50e6 || maxQueue[1] < 10*maxQueue[0] {
		t.Fatalf("simulator queue time: max %v in stage 0, %v in stage 1; want stage 1 to queue (> 50 ms and 10× stage 0)",
			time.Duration(maxQueue[0]), time.Duration(maxQueue[1]))
	}

	// The fit's prefill is a + b·I, fitted on the least-loaded stage (0): its intercept a takes in
	// the simulator's own delays outside its engine at that load, which a loaded machine stretches
	// to milliseconds. So, for the fit only, that part moves from the truth's T_queue to its
	// T_prefill: the stage-0 median of what the simulator spent outside its engine before the
	// first token's write, measured from its own timestamps in this run.
	var outside []int64
	for seq, r := range raw {
		if w := writes[seq]; r.Stage == 0 && r.ServerQueueNs != nil && r.ServerPrefillNs != nil && w.first != 0 {
			outside = append(outside, w.first-r.SentNs-*r.ServerQueueNs-*r.ServerPrefillNs)
		}
	}
	if len(outside) == 0 {
		t.Fatal("no stage-0 request timed by the simulator")
	}
	fitOverhead := int64(medianNs(outside))
	t.Logf("simulator's time outside its engine before the first token, stage-0 median: %v", time.Duration(fitOverhead))

	for _, source := range []string{"server", "histograms", "fit"} {
		t.Run(source, func(t *testing.T) {
			out := filepath.Join(dir, "out-"+source)
			if _, errs, err := wirebench(t, time.Minute, "aggregate", run, "--decomposition", source, "-o", out); err != nil {
				t.Fatalf("wirebench aggregate --decomposition %s: %v\n%s", source, err, errs)
			}
			rows, err := schemas.ReadFile[schemas.MetricRequest](filepath.Join(out, "metrics", "requests.parquet"))
			if err != nil {
				t.Fatal(err)
			}
			var dq, dp, dd []int64
			perStage := map[int32][3][]int64{}
			for _, m := range rows {
				r, w := raw[m.Seq], writes[m.Seq]
				if !m.OK || r.ServerPrefillNs == nil || w.first == 0 || w.last == 0 {
					continue
				}
				if m.DecompositionSource != source || m.QueueNs == nil {
					t.Errorf("seq %d: decomposition_source = %q (queue %v); want %s", m.Seq, m.DecompositionSource, m.QueueNs, source)
					continue
				}
				abs := func(v int64) int64 { return max(v, -v) }
				prefill, decode := *r.ServerPrefillNs, w.last-w.first
				if source == "fit" {
					prefill += fitOverhead
				}
				queue := w.first - r.SentNs - prefill
				q, p, d := abs(*m.QueueNs-queue), abs(*m.PrefillNs-prefill), abs(*m.DecodeNs-decode)
				dq, dp, dd = append(dq, q), append(dp, p), append(dd, d)
				s := perStage[m.Stage]
				s[0], s[1], s[2] = append(s[0], q), append(s[1], p), append(s[2], d)
				perStage[m.Stage] = s
			}
			if len(dq) < 100 {
				t.Fatalf("%d requests decomposed and timed by the simulator; want at least 100", len(dq))
			}
			for st, s := range perStage {
				t.Logf("stage %d: %d requests, median |error| queue %v prefill %v decode %v",
					st, len(s[0]), medianNs(s[0]), medianNs(s[1]), medianNs(s[2]))
			}
			for _, c := range []struct {
				name string
				errs []int64
			}{{"T_queue", dq}, {"T_prefill", dp}, {"T_decode", dd}} {
				if med := medianNs(c.errs); med >= time.Millisecond {
					t.Errorf("%s: %s median |error| = %v over %d requests; want < 1ms", source, c.name, med, len(c.errs))
				}
			}
			// Each OUT gets its own manifest with this aggregate step; the RUN keeps its own.
			m, err := schemas.ReadManifest(filepath.Join(out, schemas.ManifestName))
			if err != nil {
				t.Fatal(err)
			}
			if last := m.Steps[len(m.Steps)-1]; last.Name != "aggregate" || !slices.Contains(last.Args, source) {
				t.Errorf("%s manifest: last step %s %v; want aggregate with --decomposition %s", out, last.Name, last.Args, source)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(run, "metrics")); err == nil {
		t.Errorf("%s/metrics exists; want aggregate -o to leave the run directory alone", run)
	}

	// Forcing histograms on a run without scraped server metrics is an error naming them.
	bare := filepath.Join(dir, "bare")
	if err := os.CopyFS(bare, os.DirFS(run)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(bare, "raw", "server-metrics.parquet")); err != nil {
		t.Fatal(err)
	}
	_, errs, err := wirebench(t, time.Minute, "aggregate", bare, "--decomposition", "histograms", "-o", filepath.Join(dir, "out-bare"))
	if err == nil || !strings.Contains(errs, "server-metrics.parquet") || !strings.Contains(errs, "metrics_url") {
		t.Errorf("aggregate --decomposition histograms without server metrics: err = %v, stderr:\n%s\nwant an error naming server-metrics.parquet and metrics_url", err, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "out-bare", "metrics", "requests.parquet")); err == nil {
		t.Error("failed aggregate wrote metrics/requests.parquet; want nothing written")
	}
}
