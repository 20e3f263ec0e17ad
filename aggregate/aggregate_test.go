package aggregate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

// handRun is the hand-computed fixture: one open stage, six requests of worker 0, covering a
// multi-chunk answer with usage, a one-token answer, N = 0, a failed request, a reasoning-only
// stream with multi-token events and no usage, and kept text counted by the tokenizer.
func handRun() *fixture {
	f := newFixture()
	f.slo = schemas.SLO{TTFT: schemas.Duration(30 * ms)}
	kern := func(v int64) *int64 { return ptr[int64](t0 + v) }
	// seq 1: S = 1 ms, content at 10, 30, 40 ms (kernel; user 0.2 ms later), usage N = 4,
	// done at 42 ms; server prefill 5 ms.
	f.req(schemas.RawRequest{Seq: 1, PlannedNs: t0, SentNs: t0 + 1*ms, DoneNs: kern(42 * ms), UsagePrompt: ptr[int32](100), UsageComplete: ptr[int32](4), InputTokens: 90,
		ServerQueueNs: ptr[int64](2 * ms), ServerPrefillNs: ptr[int64](5 * ms), ServerDecodeNs: ptr[int64](30 * ms)})
	for i, at := range []int64{5, 10, 30, 40, 41, 42} {
		kind := []string{"empty", "content", "content", "content", "usage", "done"}[i]
		f.chunk(0, schemas.RawChunk{Seq: 1, Index: int32(i), RxKernelNs: *kern(at * ms), RxUserNs: t0 + at*ms + 200_000, Kind: kind})
	}
	// seq 2: one-token answer: S = P = 100 ms, content at 150, done at 151; server prefill 20 ms.
	f.req(schemas.RawRequest{Seq: 2, PlannedNs: t0 + 100*ms, SentNs: t0 + 100*ms, DoneNs: kern(151 * ms), UsagePrompt: ptr[int32](10), UsageComplete: ptr[int32](1), InputTokens: 10,
		ServerQueueNs: ptr[int64](25 * ms), ServerPrefillNs: ptr[int64](20 * ms), ServerDecodeNs: ptr[int64](0)})
	f.chunk(0, schemas.RawChunk{Seq: 2, Index: 0, RxKernelNs: *kern(150 * ms), RxUserNs: t0 + 150*ms + 100_000, Kind: "content"})
	f.chunk(0, schemas.RawChunk{Seq: 2, Index: 1, RxKernelNs: *kern(151 * ms), RxUserNs: t0 + 151*ms + 100_000, Kind: "done"})
	// seq 3: N = 0: usage says 0 tokens, no content, done 5 ms after S = 200 ms.
	f.req(schemas.RawRequest{Seq: 3, PlannedNs: t0 + 200*ms, SentNs: t0 + 200*ms, DoneNs: kern(205 * ms), UsagePrompt: ptr[int32](10), UsageComplete: ptr[int32](0), InputTokens: 10})
	f.chunk(0, schemas.RawChunk{Seq: 3, Index: 0, RxUserNs: t0 + 205*ms, Kind: "done"})
	// seq 4: failed with HTTP 500, no stream.
	f.req(schemas.RawRequest{Seq: 4, PlannedNs: t0 + 300*ms, SentNs: t0 + 302*ms, Status: 500, ErrorKind: "http_status", InputTokens: 10})
	// seq 5: reasoning-only stream without usage, events carrying 3 and 2 tokens, user times only.
	f.req(schemas.RawRequest{Seq: 5, PlannedNs: t0 + 400*ms, SentNs: t0 + 400*ms, DoneNs: ptr[int64](t0 + 431*ms), InputTokens: 20})
	f.chunk(0, schemas.RawChunk{Seq: 5, Index: 0, RxUserNs: t0 + 420*ms, Kind: "content", ReasoningBytes: 12, Tokens: ptr[int32](3)})
	f.chunk(0, schemas.RawChunk{Seq: 5, Index: 1, RxUserNs: t0 + 430*ms, Kind: "content", ReasoningBytes: 8, Tokens: ptr[int32](2)})
	f.chunk(0, schemas.RawChunk{Seq: 5, Index: 2, RxUserNs: t0 + 431*ms, Kind: "done"})
	// seq 6: kept text "hello big world" (3 whitespace tokens), no usage, content at 510 and 520.
	f.req(schemas.RawRequest{Seq: 6, PlannedNs: t0 + 500*ms, SentNs: t0 + 500*ms, DoneNs: ptr[int64](t0 + 521*ms), InputTokens: 30, OutputText: "hello big world"})
	f.chunk(0, schemas.RawChunk{Seq: 6, Index: 0, RxUserNs: t0 + 510*ms, Kind: "content"})
	f.chunk(0, schemas.RawChunk{Seq: 6, Index: 1, RxUserNs: t0 + 520*ms, Kind: "content"})
	f.chunk(0, schemas.RawChunk{Seq: 6, Index: 2, RxUserNs: t0 + 521*ms, Kind: "done"})
	f.workers = []schemas.Worker{{Worker: 0, Stage: 0, WallNs: 1e9, CPUUserNs: 150e6, CPUSysNs: 50e6, GCPauseNs: 3000}}
	return f
}

func show(v *int64) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(*v)
}

func TestRequestMetrics(t *testing.T) {
	dir := handRun().write(t, t.TempDir())
	if _, err := Run(context.Background(), Config{Runs: []string{dir}}, quietLog()); err != nil {
		t.Fatal(err)
	}
	got := readRequests(t, dir)
	null := (*int64)(nil)
	tests := []struct {
		seq                                 int64
		ok, slo                             bool
		in, out                             int32
		src                                 string
		ttft, e2e, tpot, itlMean, itlMax    *int64
		ntpot, ttftP, e2eP, ntpotP, readLag *int64
		sendLag                             int64
		queue, prefill, decode              *int64
		dsrc                                string
	}{
		// multi-chunk with usage: TTFT 10-1, E2E 42-1, TPOT (40-10)/3, gaps 20 and 10, NTPOT 41/4
		{1, true, true, 100, 4, "usage", ptr[int64](9 * ms), ptr[int64](41 * ms), ptr[int64](10 * ms), ptr[int64](15 * ms), ptr[int64](20 * ms),
			ptr[int64](41 * ms / 4), ptr[int64](10 * ms), ptr[int64](42 * ms), ptr[int64](42 * ms / 4), ptr[int64](200_000), 1 * ms, ptr[int64](4 * ms), ptr[int64](5 * ms), ptr[int64](32 * ms), "server"},
		// one token: no TPOT or ITL; TTFT 50 ms misses the 30 ms SLO
		{2, true, false, 10, 1, "usage", ptr[int64](50 * ms), ptr[int64](51 * ms), null, null, null,
			ptr[int64](51 * ms), ptr[int64](50 * ms), ptr[int64](51 * ms), ptr[int64](51 * ms), ptr[int64](100_000), 0, ptr[int64](30 * ms), ptr[int64](20 * ms), ptr[int64](1 * ms), "server"},
		// N = 0: NTPOT null, no TTFT (so the TTFT SLO is missed), no decomposition
		{3, true, false, 10, 0, "usage", null, ptr[int64](5 * ms), null, null, null,
			null, null, ptr[int64](5 * ms), null, null, 0, null, null, null, ""},
		// failed
		{4, false, false, 10, 0, "chunks", null, null, null, null, null,
			null, null, null, null, null, 2 * ms, null, null, null, ""},
		// reasoning-only, events carry 3 + 2 tokens: N = 5, TPOT 10/4 ms
		{5, true, true, 20, 5, "chunks", ptr[int64](20 * ms), ptr[int64](31 * ms), ptr[int64](10 * ms / 4), ptr[int64](10 * ms), ptr[int64](10 * ms),
			ptr[int64](31 * ms / 5), ptr[int64](20 * ms), ptr[int64](31 * ms), ptr[int64](31 * ms / 5), null, 0, nil, nil, nil, "fit"},
		// kept text: tokenizer gives 3; TPOT 10/2 ms
		{6, true, true, 30, 3, "tokenizer", ptr[int64](10 * ms), ptr[int64](21 * ms), ptr[int64](5 * ms), ptr[int64](10 * ms), ptr[int64](10 * ms),
			ptr[int64](7 * ms), ptr[int64](10 * ms), ptr[int64](21 * ms), ptr[int64](7 * ms), null, 0, nil, nil, nil, "fit"},
	}
	for _, tt := range tests {
		m, ok := got[tt.seq]
		if !ok {
			t.Errorf("seq %d missing from requests.parquet", tt.seq)
			continue
		}
		if m.OK != tt.ok || m.SLOMet != tt.slo {
			t.Errorf("seq %d: ok, slo_met = %v, %v; want %v, %v", tt.seq, m.OK, m.SLOMet, tt.ok, tt.slo)
		}
		if *m.InputTokens != tt.in || *m.OutputTokens != tt.out || m.TokensSource != tt.src {
			t.Errorf("seq %d: I, N, source = %d, %d, %s; want %d, %d, %s", tt.seq, *m.InputTokens, *m.OutputTokens, m.TokensSource, tt.in, tt.out, tt.src)
		}
		if m.SendLagNs != tt.sendLag {
			t.Errorf("seq %d: send_lag_ns = %d; want %d", tt.seq, m.SendLagNs, tt.sendLag)
		}
		for _, c := range []struct {
			name      string
			got, want *int64
		}{
			{"ttft_ns", m.TTFTNs, tt.ttft}, {"e2e_ns", m.E2ENs, tt.e2e}, {"tpot_ns", m.TPOTNs, tt.tpot},
			{"itl_mean_ns", m.ITLMeanNs, tt.itlMean}, {"itl_max_ns", m.ITLMaxNs, tt.itlMax}, {"ntpot_ns", m.NTPOTNs, tt.ntpot},
			{"ttft_from_planned_ns", m.TTFTFromPlannedNs, tt.ttftP}, {"e2e_from_planned_ns", m.E2EFromPlannedNs, tt.e2eP},
			{"ntpot_from_planned_ns", m.NTPOTFromPlannedNs, tt.ntpotP}, {"read_lag_max_ns", m.ReadLagMaxNs, tt.readLag},
		} {
			if show(c.got) != show(c.want) {
				t.Errorf("seq %d: %s = %s; want %s", tt.seq, c.name, show(c.got), show(c.want))
			}
		}
		if m.DecompositionSource != tt.dsrc {
			t.Errorf("seq %d: decomposition_source = %q; want %q", tt.seq, m.DecompositionSource, tt.dsrc)
		}
		if tt.dsrc == "server" {
			if show(m.QueueNs) != show(tt.queue) || show(m.PrefillNs) != show(tt.prefill) || show(m.DecodeNs) != show(tt.decode) {
				t.Errorf("seq %d: queue, prefill, decode = %s, %s, %s; want %s, %s, %s", tt.seq, show(m.QueueNs), show(m.PrefillNs), show(m.DecodeNs), show(tt.queue), show(tt.prefill), show(tt.decode))
			}
		}
		if tt.dsrc == "" && (m.QueueNs != nil || m.PrefillNs != nil || m.DecodeNs != nil) {
			t.Errorf("seq %d: decomposition set without a source", tt.seq)
		}
		checkNTPOTIdentity(t, m)
	}
	if q := got[1]; q.ExactChunks != 6 || q.UserChunks != 0 || got[5].UserChunks != 3 {
		t.Errorf("quality counts: seq 1 exact=%d user=%d, seq 5 user=%d; want 6, 0, 3", q.ExactChunks, q.UserChunks, got[5].UserChunks)
	}
}

// checkNTPOTIdentity checks NTPOT = (queue + prefill + decode) / N (integer division).
func checkNTPOTIdentity(t *testing.T, m schemas.MetricRequest) {
	t.Helper()
	if m.QueueNs == nil || m.NTPOTNs == nil {
		return
	}
	sum := *m.QueueNs + *m.PrefillNs + *m.DecodeNs
	if got := sum / int64(*m.OutputTokens); got != *m.NTPOTNs {
		t.Errorf("seq %d: (queue + prefill + decode)/N = (%d+%d+%d)/%d = %d; want ntpot %d", m.Seq, *m.QueueNs, *m.PrefillNs, *m.DecodeNs, *m.OutputTokens, got, *m.NTPOTNs)
	}
	if *m.QueueNs < 0 || *m.PrefillNs < 0 {
		t.Errorf("seq %d: negative queue %d or prefill %d", m.Seq, *m.QueueNs, *m.PrefillNs)
	}
}

func TestStageMetrics(t *testing.T) {
	dir := handRun().write(t, t.TempDir())
	sum, err := Run(context.Background(), Config{Runs: []string{dir}}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	rows, err := schemas.ReadFile[schemas.Stage](filepath.Join(dir, "metrics", "stages.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || len(sum.Stages) != 1 {
		t.Fatalf("stages.parquet has %d rows, summary %d; want 1", len(rows), len(sum.Stages))
	}
	s := rows[0]
	// TTFT of ok requests: 9, 50, 20, 10 ms -> sorted 9, 10, 20, 50.
	// Window: start t0, last end 521 ms. ok = 5 requests; good (TTFT <= 30 ms): seq 1, 5, 6.
	// Output tokens of ok requests: 4+1+0+5+3 = 13; input 100+10+10+20+30 = 170.
	// Sends at 1, 100, 200, 302, 400, 500 ms: achieved rate 5 / 0.499 s.
	// Busy: 41 + 51 + 5 + 0 (failed: ends at S) + 31 + 21 = 149 ms over 521 ms.
	// Events with kernel time: 6 (seq 1) + 2 (seq 2) of 15: read lags 0.2 ms x6, 0.1 ms x2.
	// ITL gaps (ok): 20, 10 (seq 1), 10 (seq 5), 10 (seq 6); token-weighted: seq 5's gap ends at
	// an event carrying 2 tokens: 5 ms twice.
	// Throughput counts ok completions where they complete: at 42 (seq 1: 4 out, 100 in), 151
	// (seq 2: 1, 10), 205 (seq 3: 0, 10), 431 (seq 5: 5, 20) and 521 ms (seq 6: 3, 30). The send
	// window [1, 500) ms holds the first four: 10 output and 140 input tokens over 0.499 s. Its
	// middle 80%, [50.9, 450.1) ms, holds 151, 205 and 431: 3 completions and 6 output tokens
	// over 0.3992 s. Goodput rate = goodput share (3 of 6) × completion rate.
	const sendWin, steadyWin = 0.499, 0.3992
	tests := []struct {
		name      string
		got, want any
	}{
		{"requests", s.Requests, int64(6)},
		{"completed", s.Completed, int64(5)},
		{"errors", s.Errors, int64(1)},
		{"errors_by_kind", s.ErrorsByKind, `{"http_status":1}`},
		{"ttft", point(s.TTFT), pointDist{Count: 4, P50: 10 * ms, P90: 50 * ms, P95: 50 * ms, P99: 50 * ms, P999: 50 * ms, Max: 50 * ms, Mean: 89 * ms / 4}},
		{"itl", point(s.ITL), pointDist{Count: 4, P50: 10 * ms, P90: 20 * ms, P95: 20 * ms, P99: 20 * ms, P999: 20 * ms, Max: 20 * ms, Mean: 12_500_000}},
		{"itl_token_weighted", point(s.ITLWeighted), pointDist{Count: 5, P50: 10 * ms, P90: 20 * ms, P95: 20 * ms, P99: 20 * ms, P999: 20 * ms, Max: 20 * ms, Mean: 10 * ms}},
		{"read_lag", point(s.ReadLag), pointDist{Count: 8, P50: 200_000, P90: 200_000, P95: 200_000, P99: 200_000, P999: 200_000, Max: 200_000, Mean: 175_000}},
		{"send_lag.max", val(s.SendLag.Max), 2 * ms},
		{"output_tokens", s.OutputTokens.Count, int64(5)},
		{"start_ns", s.StartNs, t0},
		{"end_ns", s.EndNs, t0 + 521*ms},
		{"achieved_rate", round3(val(s.AchievedRate)), round3(5 / 0.499)},
		{"completion_rate", round3(val(s.CompletionRate)), round3(3 / steadyWin)},
		{"steady_output_tps", round3(val(s.SteadyOutputTPS)), round3(6 / steadyWin)},
		{"output_tps", round3(val(s.OutputTPS)), round3(10 / sendWin)},
		{"input_tps", round3(val(s.InputTPS)), round3(140 / sendWin)},
		{"total_tps", round3(val(s.TotalTPS)), round3(150 / sendWin)},
		{"inflight_mean", round3(val(s.InflightMean)), round3(149.0 / 521)},
		{"goodput_share", round3(val(s.GoodputShare)), round3(3.0 / 6)},
		{"goodput_rate", round3(val(s.GoodputRate)), round3(0.5 * 3 / steadyWin)},
		{"exact_share", round3(val(s.ExactShare)), round3(8.0 / 15)},
		{"worker_rho_max", val(s.WorkerRhoMax), 0.2},
		{"worker_rho", s.WorkerRho, "[0.2]"},
		{"workers_for_rho_half", s.WorkersForRhoHalf, int32(1)},
		{"gc_pause_ns", s.GCPauseNs, int64(3000)},
		// Planned at 0, 100, ..., 500 ms: the schedule's rate is 5/0.5 s; sends span 0.499 s
		// (seq 1 left 1 ms late): fidelity 1.002, within 2%. Lateness p99 2 ms (seq 4) is under
		// a tenth of the planned gap (10 ms): the load was delivered.
		{"planned_rate", round3(val(s.PlannedRate)), round3(10)},
		{"rate_fidelity", round3(val(s.RateFidelity)), round3(5 / 0.499 / 10)},
		{"load_delivered", s.LoadDelivered, true},
		// Seqs 3, 5 and 6 have user times only: their events arrived somewhere in
		// [S, rx_user_ns], so TTFT's p50 bound is [0, 10 ms] and E2E's p50 [0, 31 ms]: E2E lower
		// ends 0, 0, 0, 40.98, 50.98 ms (seqs 1 and 2 exact, less the 20 µs stamp allowance),
		// upper ends 5, 21, 31, 41, 51 ms. Those 7 of 15 events have no lower bound (no
		// rx_after_ns): the bounds are wide, and not because of the client.
		{"client_bound", s.ClientBound, false},
		{"unbounded_share", round3(val(s.UnboundedShare)), round3(7.0 / 15)},
		{"uncertainty", fmt.Sprint(s.UncertaintyFigure, " ", val(s.UncertaintyNs)), "e2e p50 31000000"},
		{"e2e p99 bound", fmt.Sprint(val(s.E2E.P99Lo), " ", val(s.E2E.P99Hi)), fmt.Sprint(51*ms-20_000, " ", 51*ms)},
		{"decomposition_source", s.DecompositionSource, "server"}, // 2 server, 2 fit: the tie goes to the preferred source
		{"prefill_per_token_ns", val(s.PrefillPerTokenNs), float64(25*ms) / 110},
	}
	for _, tt := range tests {
		if fmt.Sprint(tt.got) != fmt.Sprint(tt.want) {
			t.Errorf("stage 0 %s = %v; want %v", tt.name, tt.got, tt.want)
		}
	}
	if !strings.HasPrefix(s.ClientBoundReason, "not client-bound: 46.7% of events have no lower bound but the send") ||
		!strings.Contains(s.ClientBoundReason, "start at the send: ttft p50 bound [0 ms, 10.0 ms] is 10.0 ms wide > 0.500 ms; ") {
		t.Errorf("client_bound_reason = %q; want the events without a lower bound, then the TTFT p50 bound first", s.ClientBoundReason)
	}
	ts, err := schemas.ReadFile[schemas.Timeseries](filepath.Join(dir, "metrics", "timeseries.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	var sends, done, outTok int64
	for _, b := range ts {
		sends += b.Sends
		done += b.Completions
		outTok += b.OutputTokens
	}
	if len(ts) != 6 || sends != 6 || done != 5 || outTok != 13 || ts[len(ts)-1].Inflight != 0 {
		t.Errorf("timeseries: %d buckets, sends %d, completions %d, output tokens %d, final inflight %d; want 6, 6, 5, 13, 0", len(ts), sends, done, outTok, ts[len(ts)-1].Inflight)
	}
	// Bucket 0 holds seq 1 (sent at 1 ms, first token at 10 ms, TTFT 9 ms).
	if ts[0].TTFTP50Ns == nil || *ts[0].TTFTP50Ns != 9*ms {
		t.Errorf("bucket 0 ttft_p50_ns = %s; want %d", show(ts[0].TTFTP50Ns), 9*ms)
	}
	m, err := schemas.ReadManifest(filepath.Join(dir, schemas.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Steps) == 0 || m.Steps[len(m.Steps)-1].Name != "aggregate" {
		t.Errorf("manifest steps = %+v; want an aggregate step last", m.Steps)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, "metrics"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("metrics/ keeps temporary %s", e.Name())
		}
	}
}

func round3(v float64) string { return fmt.Sprintf("%.3f", v) }

func TestBadInput(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(t *testing.T, dir string)
		warn   string // a warning naming this file part; empty: no warning expected
		err    error  // error without strict (nil: only a warning)
	}{
		{"truncated part", func(t *testing.T, dir string) {
			truncate(t, filepath.Join(dir, "raw", "chunks-w00-0000.parquet"))
		}, "chunks-w00-0000.parquet", nil},
		{"missing chunks part", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "raw", "chunks-w00-0000.parquet"))
		}, "chunks-w00-0000.parquet", nil},
		{"manifest row count disagrees", func(t *testing.T, dir string) {
			m, _ := schemas.ReadManifest(filepath.Join(dir, schemas.ManifestName))
			m.Files[0].Rows = 99
			m.Write(filepath.Join(dir, schemas.ManifestName))
		}, "requests-w00-0000.parquet", nil},
		{"dead worker", func(t *testing.T, dir string) {
			m, _ := schemas.ReadManifest(filepath.Join(dir, schemas.ManifestName))
			m.Workers = []schemas.WorkerStatus{{Worker: 0, Exit: "signal: killed"}}
			m.Write(filepath.Join(dir, schemas.ManifestName))
		}, "manifest.json", nil},
		{"other schema version", func(t *testing.T, dir string) {
			writeOtherVersion(t, filepath.Join(dir, "raw", "requests-w00-0000.parquet"))
		}, "", schemas.ErrVersion},
		{"chunks file in a requests name", func(t *testing.T, dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, "raw", "chunks-w00-0000.parquet"))
			os.WriteFile(filepath.Join(dir, "raw", "requests-w00-0000.parquet"), b, 0o644)
		}, "", schemas.ErrKind},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, strict := range []bool{false, true} {
				dir := handRun().write(t, t.TempDir())
				tt.break_(t, dir)
				sum, err := Run(context.Background(), Config{Runs: []string{dir}, Strict: strict}, quietLog())
				switch {
				case tt.err != nil:
					if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), "requests-w00-0000.parquet") {
						t.Errorf("strict=%v: Run error = %v; want %v naming the file", strict, err, tt.err)
					}
				case strict:
					if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), tt.warn) {
						t.Errorf("strict: Run error = %v; want ErrInput naming %s", err, tt.warn)
					}
				default:
					if err != nil {
						t.Fatalf("Run: %v; want only a warning", err)
					}
					if !strings.Contains(strings.Join(sum.Warnings, "\n"), tt.warn) {
						t.Errorf("warnings %q; want one naming %s", sum.Warnings, tt.warn)
					}
				}
			}
		})
	}
}

func truncate(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCompletionsWithin(t *testing.T) {
	c := completions{{endNs: 30, in: 3, out: 30}, {endNs: 10, in: 1, out: 10}, {endNs: 20, in: 2, out: 20}, {endNs: 40, in: 4, out: 40}}
	c.sort()
	for _, tc := range []struct {
		from, to    int64
		n, in, outs int64
	}{
		{0, 100, 4, 10, 100},
		{10, 30, 2, 3, 30}, // [10, 30): 10 and 20
		{11, 40, 2, 5, 50}, // 20 and 30
		{41, 50, 0, 0, 0},
		{0, 10, 0, 0, 0},
	} {
		n, in, out := c.within(tc.from, tc.to)
		if n != tc.n || in != tc.in || out != tc.outs {
			t.Errorf("within(%d, %d) = (%d, %d, %d); want (%d, %d, %d)", tc.from, tc.to, n, in, out, tc.n, tc.in, tc.outs)
		}
	}
}

// One content event carrying every token (a whole answer, a server that buffers the stream)
// has no time between tokens: its TPOT is null, not 0, and the stage's TPOT has no value from it;
// its NTPOT (E2E / N) stands.
func TestOneEventHasNoTPOT(t *testing.T) {
	f := newFixture()
	f.req(schemas.RawRequest{Seq: 1, PlannedNs: t0, SentNs: t0, DoneNs: ptr[int64](t0 + 20*ms), UsagePrompt: ptr[int32](10), UsageComplete: ptr[int32](4), InputTokens: 10})
	f.chunk(0, schemas.RawChunk{Seq: 1, Index: 0, RxUserNs: t0 + 20*ms, Kind: "content"})
	dir := f.write(t, t.TempDir())
	sum, err := Run(context.Background(), Config{Runs: []string{dir}}, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	m := readRequests(t, dir)[1]
	if m.TPOTNs != nil || m.TPOTLoNs != nil || m.NTPOTNs == nil || *m.NTPOTNs != 5*ms {
		t.Errorf("tpot %s [%s, %s], ntpot %s; want tpot null, ntpot 20 ms / 4", show(m.TPOTNs), show(m.TPOTLoNs), show(m.TPOTHiNs), show(m.NTPOTNs))
	}
	if d := sum.Stages[0].TPOT; d.Count != 0 || d.P50 != nil {
		t.Errorf("stage tpot %v; want no value", d)
	}
}
