package main

import (
	"context"
	"crypto/tls"
	"encoding/csv"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/construn"
	"github.com/wirebench/wirebench/internal/hostile"
	"github.com/wirebench/wirebench/schemas"
)

// unavailable answers 503 to every request: a server that has fallen over.
var unavailable = hostile.Case{Name: "503", Respond: func(w io.Writer) {
	io.WriteString(w, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\nbusy")
}}

// twoStages plans two stages of 10 requests (10/s for 1 s each) against url.
func twoStages(t *testing.T, url string) string {
	st := construn.Stage{Rate: 10, Duration: time.Second, MaxTokens: 4}
	return captureRun(t, url, st, st)
}

// A server that answers the first stage and then only 503: the second stage has no ok request.
// Its figures over nothing are null in stages.parquet and profile.json, an empty cell in
// stages.csv and – in aggregate's lines, the terminal summary, summary.md and index.html (never
// 0), and the run's trust is red, the trust line saying that stage measured nothing and why.
func TestStageWithoutOKRequest(t *testing.T) {
	srv, err := hostile.StartAfter(10, unavailable, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	run := twoStages(t, srv.URL)
	if _, errOut, err := wirebench(t, time.Minute, "capture", run, "--workers", "1", "--quiet", "--tap", "off"); err != nil {
		t.Fatalf("capture: %v\n%s", err, errOut)
	}
	aggOut, errOut, err := wirebench(t, time.Minute, "aggregate", run)
	if err != nil {
		t.Fatalf("aggregate: %v\n%s", err, errOut)
	}
	repOut, errOut, err := wirebench(t, time.Minute, "report", run)
	if err != nil {
		t.Fatalf("report: %v\n%s", err, errOut)
	}
	const why = `stage 1 "rate-10" has no ok request (10 failed: http_status 10), so it measured no latency`

	trust, line1 := lineStarting(aggOut, "trust "), lineStarting(aggOut, "stage 1 ")
	if !strings.HasPrefix(trust, "trust red: ") || !strings.Contains(trust, why) {
		t.Errorf("aggregate's trust line %q; want red, saying %q", trust, why)
	}
	if !strings.Contains(line1, "0 ok") || !strings.Contains(line1, "ttft p50 –, p99 –") {
		t.Errorf("aggregate's stage 1 line %q; want 0 ok and ttft p50 –, p99 –", line1)
	}

	checkSummaryLine(t, repOut, why)
	dir := filepath.Join(run, "report")
	checkProfileNull(t, filepath.Join(dir, "profile.json"))
	checkCSVEmpty(t, filepath.Join(dir, "stages.csv"))
	md, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	if row := lineStarting(string(md), `| 🔴 **1 "rate-10"** |`); strings.Count(row, "| – ") != 8 {
		t.Errorf("summary.md stage 1 row %q; want red with – for its 8 latency figures", row)
	}
	html, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(html), ">–</td>"); n < 8 || strings.Contains(string(html), ">0</td><td>0</td><td>0</td>") {
		t.Errorf("index.html has %d cells of –; want at least stage 1's 8 latency figures, no run of 0 cells", n)
	}

	stages, err := schemas.ReadFile[schemas.Stage](schemas.FileOf[schemas.Stage](run))
	if err != nil || len(stages) != 2 {
		t.Fatalf("stages.parquet: %v, %d rows; want 2", err, len(stages))
	}
	if s := stages[0]; s.Completed != 10 || s.TTFT.P50 == nil {
		t.Errorf("stage 0: %d ok, ttft p50 %v; want 10 and a figure", s.Completed, s.TTFT.P50)
	}
	s := stages[1]
	if s.Completed != 0 || s.Errors != 10 {
		t.Fatalf("stage 1: %d ok, %d errors; want 0 and 10", s.Completed, s.Errors)
	}
	for name, d := range map[string]schemas.Dist{"ttft": s.TTFT, "tpot": s.TPOT, "itl": s.ITL, "e2e": s.E2E, "ntpot": s.NTPOT} {
		if d.Count != 0 || d.P50 != nil || d.P99 != nil || d.Max != nil || d.Mean != nil {
			t.Errorf("stage 1 %s %v; want count 0 and every figure null", name, d)
		}
	}
	if s.UncertaintyNs != nil || s.ExactShare != nil || s.SendLag.P99 == nil {
		t.Errorf("stage 1 uncertainty %v, exact share %v, send lag p99 %v; want null, null and a figure (the sends were made)", s.UncertaintyNs, s.ExactShare, s.SendLag.P99)
	}
}

// checkSummaryLine checks the terminal summary of `wirebench report`: trust red with the
// reason, and stage 1's line – for its TTFT, TPOT and E2E figures.
func checkSummaryLine(t *testing.T, out, why string) {
	t.Helper()
	if trust := lineStarting(out, "trust "); !strings.HasPrefix(trust, "trust red: ") || !strings.Contains(trust, why) {
		t.Errorf("summary trust line %q; want red, saying %q", trust, why)
	}
	// stage offered sent/s done/s "out tok/s" TTFT-p50 TTFT-p99 TPOT-p50 TPOT-p99 E2E-p99 goodput errors
	f := strings.Fields(lineStarting(out, `1 "rate-10"`))
	if len(f) < 12 || strings.Join(f[6:11], " ") != "– – – – –" {
		t.Errorf("summary stage 1 fields %q; want – for TTFT p50, p99, TPOT p50, p99 and E2E p99", f)
	}
}

// checkProfileNull checks that profile.json holds stage 1's empty figures as null.
func checkProfileNull(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Runs []struct {
			Stages []struct {
				Latency map[string]map[string]any `json:"latency"`
				Quality map[string]any            `json:"quality"`
			} `json:"stages"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(b, &p); err != nil || len(p.Runs) != 1 || len(p.Runs[0].Stages) != 2 {
		t.Fatalf("profile.json: %v; want one run of two stages", err)
	}
	st := p.Runs[0].Stages[1]
	for _, k := range []string{"ttft_ns", "tpot_ns", "e2e_ns"} {
		for _, q := range []string{"p50", "p99", "mean"} {
			if v, ok := st.Latency[k][q]; !ok || v != nil {
				t.Errorf("profile.json stage 1 %s %s = %v (present %v); want null", k, q, v, ok)
			}
		}
	}
	if v, ok := st.Quality["uncertainty_ns"]; !ok || v != nil || st.Quality["trust"] != "red" {
		t.Errorf("profile.json stage 1 uncertainty_ns %v, trust %v; want null and red", v, st.Quality["trust"])
	}
}

// checkCSVEmpty checks that stages.csv leaves stage 1's latency figures empty.
func checkCSVEmpty(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("stages.csv: %v, %d rows; want a header and two stages", err, len(rows))
	}
	for i, h := range rows[0] {
		if h == "ttft_p50_ns" || h == "ttft_p99_hi_ns" || h == "e2e_mean_ns" || h == "uncertainty_ns" {
			if rows[1][i] == "" || rows[2][i] != "" {
				t.Errorf("stages.csv %s: stage 0 %q, stage 1 %q; want a figure and an empty cell", h, rows[1][i], rows[2][i])
			}
		}
	}
}

// lineStarting returns the first line of s that starts with prefix, or "".
func lineStarting(s, prefix string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// Before any first token has come, capture's progress lines (log lines when stderr is not a
// terminal) show the TTFT percentiles as –, never 0s.
func TestProgressBeforeFirstToken(t *testing.T) {
	url := startSim(t, "--ttft", "2500ms", "--itl", "1ms")
	run := captureRun(t, url, construn.Stage{Rate: 2, Duration: time.Second, MaxTokens: 2})
	_, errOut, err := wirebench(t, time.Minute, "capture", run, "--workers", "1", "--tap", "off")
	if err != nil {
		t.Fatalf("capture: %v\n%s", err, errOut)
	}
	var progress []string
	for _, l := range strings.Split(errOut, "\n") {
		if strings.Contains(l, "msg=progress") {
			progress = append(progress, l)
		}
	}
	if len(progress) == 0 || !strings.Contains(progress[0], "ttft_p50=– ttft_p99=–") {
		t.Fatalf("progress lines %q; want the first (before the first token, 2.5 s in) to show ttft_p50=– ttft_p99=–\n%s", progress, errOut)
	}
	for _, l := range progress {
		if strings.Contains(l, "ttft_p50=0s") || strings.Contains(l, "ttft_p99=0s") {
			t.Errorf("progress line %q shows a TTFT of 0s", l)
		}
	}
}

// wholeJSON is the answer of a server or proxy that ignores stream: true.
var wholeJSON = hostile.Case{Name: "whole JSON", Respond: hostile.WholeJSON}

// A 200 whose body is a whole JSON completion, answered to a streaming request, is kind
// not_streamed (its text still parsed), on plain http and https: not ok, and aggregate counts it
// as an error with no TPOT, not as a completion with TPOT 0.
func TestWholeJSONAnswerIsNotStreamed(t *testing.T) {
	overPlainAndTLS(t, func(t *testing.T, srvTLS *tls.Config) {
		srv, err := hostile.StartAfter(5, wholeJSON, srvTLS)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		run := captureRun(t, srv.URL, construn.Stage{Rate: 10, Duration: time.Second, MaxTokens: 4})
		var out []byte
		for _, args := range [][]string{{"capture", run, "--workers", "1", "--quiet", "--tap", "off"}, {"aggregate", run}} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			out, err = exec.CommandContext(ctx, binary, args...).CombinedOutput()
			cancel()
			if err != nil {
				t.Fatalf("%s: %v\n%s", args[0], err, out)
			}
		}
		if !strings.Contains(string(out), ": 10 requests, 5 ok,") {
			t.Errorf("aggregate says\n%s\nwant 10 requests, 5 ok (the whole answers are not)", out)
		}
		_, reqs, _ := rawFiles(t, run)
		kinds := map[string]int{}
		for _, r := range reqs {
			kinds[r.ErrorKind]++
			if r.ErrorKind == schemas.ErrNotStreamed && (r.Chunks != 1 || !strings.Contains(r.ErrorMessage, `"application/json", not text/event-stream`)) {
				t.Errorf("seq %d: not_streamed with %d chunks, message %q; want the whole answer kept as one chunk, the content type named", r.Seq, r.Chunks, r.ErrorMessage)
			}
		}
		if kinds[""] != 5 || kinds[schemas.ErrNotStreamed] != 5 {
			t.Errorf("kinds %v; want 5 ok and 5 not_streamed", kinds)
		}
		metrics, err := schemas.ReadFile[schemas.MetricRequest](schemas.FileOf[schemas.MetricRequest](run))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range metrics {
			if m.ErrorKind == schemas.ErrNotStreamed && (m.OK || m.TPOTNs != nil || m.SLOMet) {
				t.Errorf("seq %d (not_streamed): ok %v, tpot %v, slo_met %v; want a failed request with no TPOT", m.Seq, m.OK, m.TPOTNs, m.SLOMet)
			}
		}
		stages, err := schemas.ReadFile[schemas.Stage](schemas.FileOf[schemas.Stage](run))
		if err != nil || len(stages) != 1 || stages[0].Completed != 5 || stages[0].Errors != 5 {
			t.Fatalf("stages: %v; want one stage with 5 ok and 5 errors: %+v", err, stages)
		}
	})
}
