package main

import (
	"path/filepath"
	"regexp"
	"sort"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/construn"
	"github.com/wirebench/wirebench/schemas"
)

// A stream that stalls longer than --gap-timeout is cut: recorded as gap_timeout with the chunks
// it had, within the timeout plus 100 ms of its last byte, and a goodput miss; the run's other
// requests are ok with the simulator's own TTFT and ITL.
func TestGapTimeoutCutsStalledStreams(t *testing.T) {
	const (
		ttft, itl = 20 * time.Millisecond, 5 * time.Millisecond
		gap       = 300 * time.Millisecond
		maxTokens = 8
	)
	url := startSim(t, "--ttft", ttft.String(), "--itl", itl.String(), "--fault-stall", "0.2", "--stall", "3s")
	run := captureRun(t, url, construn.Stage{Rate: 20, Duration: 3 * time.Second, InputTokens: 16, MaxTokens: maxTokens})
	if _, stderr, err := wirebench(t, 40*time.Second, "capture", run, "--workers", "1", "--quiet", "--gap-timeout", gap.String()); err != nil {
		t.Fatalf("capture: %v\n%s", err, stderr)
	}
	m, reqs, chunks := rawFiles(t, run)
	if m.Status != schemas.StatusComplete {
		t.Errorf("manifest status %q (missing %q); want complete", m.Status, m.Missing)
	}
	bySeq := map[int64][]schemas.RawChunk{}
	for _, c := range chunks {
		bySeq[c.Seq] = append(bySeq[c.Seq], c)
	}
	quietRe := regexp.MustCompile(`no byte for ([0-9.]+m?s) since the last \(gap_timeout 300ms\)`)
	var ttfts, gaps []int64
	cut := map[int64]bool{}
	for _, r := range reqs {
		cs := bySeq[r.Seq]
		sort.Slice(cs, func(i, j int) bool { return cs[i].Index < cs[j].Index })
		content := 0
		for _, c := range cs {
			if c.Kind == "content" {
				content++
			}
		}
		switch r.ErrorKind {
		case "gap_timeout":
			cut[r.Seq] = true
			if len(cs) == 0 || int(r.Chunks) != len(cs) || content == 0 || content >= maxTokens {
				t.Errorf("seq %d: gap_timeout with %d chunk rows (row says %d), %d content; want the partial stream kept", r.Seq, len(cs), r.Chunks, content)
			}
			sm := quietRe.FindStringSubmatch(r.ErrorMessage)
			if sm == nil {
				t.Errorf("seq %d: message %q; want the silence measured", r.Seq, r.ErrorMessage)
				continue
			}
			if q, _ := time.ParseDuration(sm[1]); q < gap || q > gap+100*time.Millisecond {
				t.Errorf("seq %d: cut %v after its last byte; want within [%v, %v]", r.Seq, q, gap, gap+100*time.Millisecond)
			}
		case "":
			if content != maxTokens {
				t.Errorf("seq %d: ok with %d content chunks; want %d", r.Seq, content, maxTokens)
				continue
			}
			var prev int64
			for _, c := range cs {
				if c.Kind != "content" {
					continue
				}
				if prev == 0 {
					ttfts = append(ttfts, chunkTime(&c)-r.SentNs)
				} else {
					gaps = append(gaps, chunkTime(&c)-prev)
				}
				prev = chunkTime(&c)
			}
		default:
			t.Errorf("seq %d: %s: %s; want ok or gap_timeout", r.Seq, r.ErrorKind, r.ErrorMessage)
		}
	}
	if len(reqs) != 60 || len(cut) == 0 || len(cut) > 30 {
		t.Fatalf("%d requests, %d cut by gap_timeout; want 60 with about 12 stalled (fault-stall 0.2)", len(reqs), len(cut))
	}
	// Independently of the client's own measure: the capture ended sooner after the last cut
	// request's send than its stall lasts, so nothing waited for a stalled stream to resume.
	var lastCut int64
	for _, r := range reqs {
		if cut[r.Seq] {
			lastCut = max(lastCut, r.SentNs)
		}
	}
	for _, st := range m.Steps {
		if st.Name == "capture" {
			if d := st.Ended.Sub(time.Unix(0, lastCut)); d <= 0 || d >= 3*time.Second {
				t.Errorf("capture ended %v after the last cut request was sent; want under the 3s stall", d)
			}
		}
	}
	mt, mg := time.Duration(median(ttfts)), time.Duration(median(gaps))
	t.Logf("%d of %d cut; the others: median TTFT %v, median ITL %v", len(cut), len(reqs), mt, mg)
	if d := mt - ttft; d < -2*time.Millisecond || d > 2*time.Millisecond {
		t.Errorf("median TTFT of the unstalled requests %v; want the simulator's %v ± 2ms", mt, ttft)
	}
	if d := mg - itl; d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("median ITL of the unstalled requests %v; want the simulator's %v ± 1ms", mg, itl)
	}

	// Goodput: a cut request is a miss.
	out := filepath.Join(t.TempDir(), "out")
	if _, errs, err := wirebench(t, time.Minute, "aggregate", run, "-o", out); err != nil {
		t.Fatalf("aggregate: %v\n%s", err, errs)
	}
	rows, err := schemas.ReadFile[schemas.MetricRequest](filepath.Join(out, "metrics", "requests.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if cut[r.Seq] && (r.OK || r.SLOMet || r.ErrorKind != "gap_timeout") {
			t.Errorf("seq %d: metrics ok %v slo_met %v error_kind %q; want a gap_timeout miss", r.Seq, r.OK, r.SLOMet, r.ErrorKind)
		}
	}
}
