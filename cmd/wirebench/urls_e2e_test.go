package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// urlsConfig writes a config of one constant stage against the endpoints urls (weights 3:1,
// picked by pick) and returns its path.
func urlsConfig(t *testing.T, fast, slow, pick string, rate float64, dur time.Duration) string {
	t.Helper()
	cfg := fmt.Sprintf(`name: urls
seed: 5
target:
  urls: [{url: %s, weight: 3}, {url: %s}]
  pick: %s
  api: completions
  model: sim
  ignore_eos: true
tokenizer: whitespace
load:
  stages:
    - {name: steady, rate: %g, duration: %s, arrival: constant}
workload:
  synthetic: {input: {kind: fixed, value: 8}, output: {kind: fixed, value: 8}}
`, fast, slow, pick, rate, dur)
	path := filepath.Join(t.TempDir(), "urls.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// target.urls with two simulators, one 100 ms slower to its first token, weights 3:1: replay
// plans each request's endpoint (round robin by weight: exactly 3 of 4; random: about), capture
// sends each to its own endpoint over its own connections, the raw and metric rows say which,
// and breakdown.parquet (by endpoint), profile.json, summary.md and index.html give each
// endpoint its figures, where the slow one shows its own TTFT.
func TestSeveralTargetURLs(t *testing.T) {
	fast := startSim(t, "--ttft", "10ms", "--itl", "2ms")
	slow := startSim(t, "--ttft", "110ms", "--itl", "2ms")
	for _, pick := range []string{"round_robin", "random"} {
		t.Run(pick, func(t *testing.T) {
			const rate, planned = 40, 80
			run := filepath.Join(t.TempDir(), "run")
			if _, stderr, err := wirebench(t, 2*time.Minute, "run", urlsConfig(t, fast, slow, pick, rate, planned/rate*time.Second),
				"-o", run, "--workers", "2", "--tap", "off", "--quiet"); err != nil {
				t.Fatalf("run: %v\n%s", err, stderr)
			}
			sched, err := schemas.ReadFile[schemas.ScheduleRequest](schemas.FileOf[schemas.ScheduleRequest](run))
			if err != nil {
				t.Fatal(err)
			}
			plan := map[int64]int32{}
			perEndpoint := [2]int{}
			for _, r := range sched {
				plan[r.Seq] = r.Endpoint
				perEndpoint[r.Endpoint]++
			}
			if pick == "round_robin" && perEndpoint != [2]int{planned * 3 / 4, planned / 4} {
				t.Errorf("planned %v requests per endpoint; want exactly 3:1 of %d", perEndpoint, planned)
			}
			if pick == "random" && (perEndpoint[1] < planned/10 || perEndpoint[1] > planned*2/5) {
				t.Errorf("planned %v requests per endpoint; want about 3:1 of %d", perEndpoint, planned)
			}

			_, reqs, _ := rawFiles(t, run)
			if len(reqs) != planned {
				t.Fatalf("%d request rows; want %d", len(reqs), planned)
			}
			for _, r := range reqs {
				if r.Endpoint != plan[r.Seq] || r.ErrorKind != "" {
					t.Errorf("seq %d: endpoint %d, error %q; want the planned endpoint %d, ok", r.Seq, r.Endpoint, r.ErrorKind, plan[r.Seq])
				}
				// The slow simulator's own truth: its queue and prefill put the first token
				// 110 ms after admission, the fast one's 10 ms.
				if r.ServerPrefillNs != nil && r.ServerQueueNs != nil {
					ttft := time.Duration(*r.ServerQueueNs + *r.ServerPrefillNs)
					if (r.Endpoint == 1) != (ttft >= 100*time.Millisecond) {
						t.Errorf("seq %d at endpoint %d: the server's time to its first token %v; it went to the wrong server", r.Seq, r.Endpoint, ttft)
					}
				}
			}
			metrics, err := schemas.ReadFile[schemas.MetricRequest](filepath.Join(run, "metrics", "requests.parquet"))
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range metrics {
				if m.Endpoint != plan[m.Seq] {
					t.Errorf("metrics seq %d: endpoint %d; want %d", m.Seq, m.Endpoint, plan[m.Seq])
				}
			}

			rows, err := schemas.ReadFile[schemas.Breakdown](filepath.Join(run, "metrics", "breakdown.parquet"))
			if err != nil {
				t.Fatal(err)
			}
			byURL := map[string]schemas.Breakdown{}
			for _, b := range rows {
				if b.By == schemas.ByEndpoint {
					byURL[b.Key] = b
				}
			}
			for i, u := range []string{fast, slow} {
				b, ok := byURL[u]
				if !ok || b.Requests != int64(perEndpoint[i]) || b.Completed != b.Requests || b.TTFT.Count != b.Requests || b.Stage != 0 {
					t.Errorf("breakdown by endpoint %s: %+v (found %v); want its %d requests, all ok", u, b, ok, perEndpoint[i])
				}
			}
			if len(byURL) != 2 || len(rows) != 2 {
				t.Errorf("breakdown rows %d, %d by endpoint; want one per endpoint", len(rows), len(byURL))
			}
			f, s := time.Duration(val(byURL[fast].TTFT.P50)), time.Duration(val(byURL[slow].TTFT.P50))
			if f <= 0 || f > 80*time.Millisecond || s < 100*time.Millisecond {
				t.Errorf("TTFT p50 %v at the fast endpoint, %v at the slow; want under 80ms and over 100ms", f, s)
			}

			var p struct {
				Runs []struct {
					Stages []struct {
						Split []schemas.Breakdown `json:"split"`
					} `json:"stages"`
				} `json:"runs"`
			}
			b, err := os.ReadFile(filepath.Join(run, "report", "profile.json"))
			if err != nil || json.Unmarshal(b, &p) != nil || len(p.Runs) != 1 || len(p.Runs[0].Stages) != 1 {
				t.Fatalf("profile.json: %v", err)
			}
			got := p.Runs[0].Stages[0].Split
			i := slices.IndexFunc(got, func(b schemas.Breakdown) bool { return b.By == schemas.ByEndpoint && b.Key == slow })
			if len(got) != 2 || i < 0 || got[i].Requests != byURL[slow].Requests || val(got[i].TTFT.P50) != val(byURL[slow].TTFT.P50) {
				t.Errorf("profile.json split %+v; want breakdown.parquet's by endpoint", got)
			}
			for _, f := range []struct{ name, heading string }{{"summary.md", "### By endpoint in"}, {"index.html", "By endpoint in"}} {
				b, err := os.ReadFile(filepath.Join(run, "report", f.name))
				if err != nil || !strings.Contains(string(b), f.heading) || !strings.Contains(string(b), slow) {
					t.Errorf("%s has no by-endpoint table naming %s (%v)", f.name, slow, err)
				}
			}
		})
	}
}

// target.url alone keeps its meaning: every row at endpoint 0, no breakdown by endpoint.
func TestOneTargetURLHasNoEndpointFigures(t *testing.T) {
	url := startSim(t, "--ttft", "5ms", "--itl", "1ms")
	run := runCancel(t, cancelConfig(t, url, 20, time.Second, 4, ""))
	_, reqs, _ := rawFiles(t, run)
	for _, r := range reqs {
		if r.Endpoint != 0 || r.ErrorKind != "" {
			t.Errorf("seq %d: endpoint %d, error %q; want 0, ok", r.Seq, r.Endpoint, r.ErrorKind)
		}
	}
	rows, err := schemas.ReadFile[schemas.Breakdown](filepath.Join(run, "metrics", "breakdown.parquet"))
	if err != nil || len(rows) != 0 || len(reqs) != 20 {
		t.Errorf("breakdown: %v, %d rows; %d requests; want no breakdown rows, 20 requests", err, len(rows), len(reqs))
	}
}
