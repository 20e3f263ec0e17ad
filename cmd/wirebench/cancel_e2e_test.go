package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// cancelConfig writes a config of one constant stage (rate req/s for dur, 8-token prompts,
// out-token answers) against url, with workload.cancel when cancel is not empty.
func cancelConfig(t *testing.T, url string, rate float64, dur time.Duration, out int, cancel string) string {
	t.Helper()
	cfg := fmt.Sprintf(`name: cancel
seed: 11
target: {url: %s, api: completions, model: sim, ignore_eos: true}
tokenizer: whitespace
load:
  stages:
    - {name: steady, rate: %g, duration: %s, arrival: constant}
workload:
  synthetic: {input: {kind: fixed, value: 8}, output: {kind: fixed, value: %d}}
slo: {e2e: 30s}
`, url, rate, dur, out)
	if cancel != "" {
		cfg = strings.Replace(cfg, "\nslo:", "\n  cancel: "+cancel+"\nslo:", 1)
	}
	path := filepath.Join(t.TempDir(), "cancel.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// simCounter reads one unlabelled-by-le sample of the simulator's /metrics.
func simCounter(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", name, line, err)
			}
			return v
		}
	}
	t.Fatalf("%s/metrics has no %s", url, name)
	return 0
}

// runCancel runs cfg into a fresh directory with one worker and returns it.
func runCancel(t *testing.T, cfg string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "run")
	if _, stderr, err := wirebench(t, 2*time.Minute, "run", cfg, "-o", out, "--workers", "1", "--tap", "off", "--quiet"); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	return out
}

// workload.cancel {share: 0.3, after_tokens: 3} against the simulator: replay plans which
// requests the client closes (schedule cancel_after_tokens), capture closes exactly those after
// their third token (cancelled_by_client, the chunks so far kept, the connection closed), the
// simulator sees each close and frees the slot (its requests_cancelled_total, fewer tokens
// generated), and aggregate counts them apart: stage cancelled, no error, no latency figure,
// not in goodput's denominator, not in the trust verdict.
func TestCancelledByClient(t *testing.T) {
	const rate, planned, out = 20, 80, 40
	url := startSim(t, "--ttft", "10ms", "--itl", "5ms")
	run := runCancel(t, cancelConfig(t, url, rate, planned/rate*time.Second, out, "{share: 0.3, after_tokens: 3}"))

	sched, err := schemas.ReadFile[schemas.ScheduleRequest](schemas.FileOf[schemas.ScheduleRequest](run))
	if err != nil {
		t.Fatal(err)
	}
	plan := map[int64]bool{}
	for _, r := range sched {
		if r.CancelAfterTokens == 3 {
			plan[r.Seq] = true
		} else if r.CancelAfterTokens != 0 || r.CancelAfterNs != 0 {
			t.Errorf("seq %d: cancel_after_tokens %d, cancel_after_ns %d; want 3 or 0, and 0", r.Seq, r.CancelAfterTokens, r.CancelAfterNs)
		}
	}
	if n := len(plan); len(sched) != planned || n < planned*15/100 || n > planned*45/100 {
		t.Fatalf("%d of %d scheduled requests planned for cancelling; want about 30%% of %d", n, len(sched), planned)
	}

	m, reqs, chunks := rawFiles(t, run)
	if m.Status != schemas.StatusComplete {
		t.Errorf("manifest status %q; want complete", m.Status)
	}
	content := map[int64]int{}
	for _, c := range chunks {
		if c.Kind == schemas.ChunkContent {
			content[c.Seq]++
		}
	}
	for _, r := range reqs {
		switch cancelled := r.ErrorKind == schemas.ErrCancelledByClient; {
		case cancelled != plan[r.Seq]:
			t.Errorf("seq %d: error kind %q (%s); planned for cancelling: %v", r.Seq, r.ErrorKind, r.ErrorMessage, plan[r.Seq])
		case cancelled && (r.Status != 200 || content[r.Seq] < 3 || content[r.Seq] >= out || r.DoneNs != nil):
			t.Errorf("seq %d: cancelled with status %d, %d content events, done_ns %v; want 200, the 3 tokens it waited for (a read may bring a few more), no end", r.Seq, r.Status, content[r.Seq], r.DoneNs)
		case !cancelled && (r.ErrorKind != "" || content[r.Seq] != out):
			t.Errorf("seq %d: %q with %d content events; want ok with %d", r.Seq, r.ErrorKind, content[r.Seq], out)
		}
	}
	if len(reqs) != planned {
		t.Errorf("%d request rows; want %d", len(reqs), planned)
	}

	// The simulator's truth: it saw each close and stopped generating for it.
	if n := simCounter(t, url, "wirebench_sim:requests_cancelled_total"); int(n) != len(plan) {
		t.Errorf("simulator requests_cancelled_total %g; want the %d cancelled requests", n, len(plan))
	}
	if gen, full := simCounter(t, url, "vllm:generation_tokens_total"), float64(planned*out); gen > full-float64(len(plan)*(out/2)) {
		t.Errorf("simulator generated %g tokens; want well under the %g of uncancelled answers (the %d cancelled stop early)", gen, full, len(plan))
	}

	stages, err := schemas.ReadFile[schemas.Stage](filepath.Join(run, "metrics", "stages.parquet"))
	if err != nil || len(stages) != 1 {
		t.Fatalf("stages: %v, %d rows", err, len(stages))
	}
	st := stages[0]
	ok := int64(planned - len(plan))
	if st.Cancelled != int64(len(plan)) || st.Errors != 0 || st.Completed != ok || st.Requests != planned || st.ErrorsByKind != "{}" {
		t.Errorf("stage: %d requests, %d completed, %d errors %s, %d cancelled; want %d, %d, 0 {}, %d", st.Requests, st.Completed, st.Errors, st.ErrorsByKind, st.Cancelled, planned, ok, len(plan))
	}
	if st.TTFT.Count != ok || st.E2E.Count != ok || st.TPOT.Count != ok {
		t.Errorf("latency counts ttft %d, e2e %d, tpot %d; want the %d uncancelled requests only", st.TTFT.Count, st.E2E.Count, st.TPOT.Count, ok)
	}
	// Every uncancelled answer takes its 40 tokens (10 ms + 39 × 5 ms); a cancelled one about
	// 20 ms: in the figures it would pull the minimum far down.
	if p := time.Duration(val(st.E2E.P50)); p < 150*time.Millisecond {
		t.Errorf("E2E p50 %v; want that of whole answers (over 150ms)", p)
	}
	if val(st.GoodputShare) != 1 {
		t.Errorf("goodput share %v; want 1 (every uncancelled request met the SLO; cancelled ones are out of the denominator)", val(st.GoodputShare))
	}

	var p struct {
		Runs []struct {
			Trust struct {
				Sentence string `json:"sentence"`
			} `json:"trust"`
			Stages []struct {
				Cancelled int64 `json:"cancelled"`
				Errors    int64 `json:"errors"`
			} `json:"stages"`
		} `json:"runs"`
	}
	b, err := os.ReadFile(filepath.Join(run, "report", "profile.json"))
	if err != nil || json.Unmarshal(b, &p) != nil || len(p.Runs) != 1 || len(p.Runs[0].Stages) != 1 {
		t.Fatalf("profile.json: %v\n%.400s", err, b)
	}
	if s := p.Runs[0].Stages[0]; s.Cancelled != int64(len(plan)) || s.Errors != 0 {
		t.Errorf("profile.json stage cancelled %d, errors %d; want %d, 0", s.Cancelled, s.Errors, len(plan))
	}
	// The trust verdict may be amber or red on a loaded machine, never for the cancels.
	if s := p.Runs[0].Trust.Sentence; s == "" || strings.Contains(s, "cancel") || strings.Contains(s, "fail") {
		t.Errorf("trust sentence %q; want one that names no cancel or failure", s)
	}
	md, err := os.ReadFile(filepath.Join(run, "report", "summary.md"))
	if err != nil || !strings.Contains(string(md), fmt.Sprintf("%d cancelled by the client", len(plan))) {
		t.Errorf("summary.md does not say \"%d cancelled by the client\" (%v)", len(plan), err)
	}
}

// With two engine slots and answers of 300 ms, 10 req/s overload the simulator (6.7/s at most) and requests
// queue; when half of them are closed after 3 tokens their slots come free early and the others
// wait far less (the simulator's own queue time, x-sim truth, of the uncancelled requests).
func TestCancelFreesSimulatorSlots(t *testing.T) {
	const rate, dur, out = 10, 3 * time.Second, 30
	queue := func(cancel string) (mean time.Duration, cancelled int) {
		url := startSim(t, "--ttft", "5ms", "--itl", "10ms", "--max-num-seqs", "2")
		run := runCancel(t, cancelConfig(t, url, rate, dur, out, cancel))
		_, reqs, _ := rawFiles(t, run)
		var sum time.Duration
		n := 0
		for _, r := range reqs {
			if r.ErrorKind == schemas.ErrCancelledByClient {
				cancelled++
				continue
			}
			if r.ErrorKind != "" || r.ServerQueueNs == nil {
				t.Fatalf("seq %d: %q, server queue %v; want ok with the simulator's truth", r.Seq, r.ErrorKind, r.ServerQueueNs)
			}
			sum += time.Duration(*r.ServerQueueNs)
			n++
		}
		if n == 0 {
			t.Fatal("no uncancelled request")
		}
		if c := simCounter(t, url, "wirebench_sim:requests_cancelled_total"); int(c) != cancelled {
			t.Errorf("simulator requests_cancelled_total %g; want %d", c, cancelled)
		}
		return sum / time.Duration(n), cancelled
	}
	without, c0 := queue("")
	with, c1 := queue("{share: 0.5, after_tokens: 3}")
	t.Logf("mean server queue of uncancelled requests: %v without cancelling, %v with %d of %d cancelled", without, with, c1, int(rate*dur.Seconds()))
	if c0 != 0 || c1 == 0 {
		t.Fatalf("cancelled %d without workload.cancel, %d with it; want 0 and some", c0, c1)
	}
	if without < 150*time.Millisecond || with > without/2 {
		t.Errorf("mean queue %v with cancelling, %v without; want the freed slots to halve it at least (and a queue without)", with, without)
	}
}
