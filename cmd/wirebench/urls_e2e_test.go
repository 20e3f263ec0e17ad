package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
// and stages.parquet, profile.json and summary.md give each endpoint its figures, where the slow
// one shows its own TTFT.
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

			stages, err := schemas.ReadFile[schemas.Stage](filepath.Join(run, "metrics", "stages.parquet"))
			if err != nil || len(stages) != 1 {
				t.Fatalf("stages: %v, %d rows", err, len(stages))
			}
			var eps []schemas.EndpointFigures
			if err := json.Unmarshal([]byte(stages[0].Endpoints), &eps); err != nil || len(eps) != 2 {
				t.Fatalf("stage endpoints %q (%v); want two endpoints' figures", stages[0].Endpoints, err)
			}
			for i, e := range eps {
				want := []string{fast, slow}[i]
				if e.Endpoint != int32(i) || e.URL != want || e.Requests != int64(perEndpoint[i]) || e.Completed != e.Requests || e.TTFT.Count != e.Requests {
					t.Errorf("endpoint %d: %+v; want %s with its %d requests, all ok", i, e, want, perEndpoint[i])
				}
			}
			f, s := time.Duration(val(eps[0].TTFT.P50)), time.Duration(val(eps[1].TTFT.P50))
			if f <= 0 || f > 80*time.Millisecond || s < 100*time.Millisecond {
				t.Errorf("TTFT p50 %v at the fast endpoint, %v at the slow; want under 80ms and over 100ms", f, s)
			}

			var p struct {
				Runs []struct {
					Stages []struct {
						Endpoints []schemas.EndpointFigures `json:"endpoints"`
					} `json:"stages"`
				} `json:"runs"`
			}
			b, err := os.ReadFile(filepath.Join(run, "report", "profile.json"))
			if err != nil || json.Unmarshal(b, &p) != nil || len(p.Runs) != 1 || len(p.Runs[0].Stages) != 1 {
				t.Fatalf("profile.json: %v", err)
			}
			if got := p.Runs[0].Stages[0].Endpoints; len(got) != 2 || got[1].Requests != eps[1].Requests || val(got[1].TTFT.P50) != val(eps[1].TTFT.P50) {
				t.Errorf("profile.json endpoints %+v; want stages.parquet's %+v", got, eps)
			}
			for _, f := range []struct{ name, heading string }{{"summary.md", "### Endpoints of"}, {"index.html", "<h3>Endpoints of"}} {
				b, err := os.ReadFile(filepath.Join(run, "report", f.name))
				if err != nil || !strings.Contains(string(b), f.heading) || !strings.Contains(string(b), slow) {
					t.Errorf("%s has no endpoints table naming %s (%v)", f.name, slow, err)
				}
			}
		})
	}
}

// target.url alone keeps its meaning: every row at endpoint 0, no per-endpoint figures.
func TestOneTargetURLHasNoEndpointFigures(t *testing.T) {
	url := startSim(t, "--ttft", "5ms", "--itl", "1ms")
	run := runCancel(t, cancelConfig(t, url, 20, time.Second, 4, ""))
	_, reqs, _ := rawFiles(t, run)
	for _, r := range reqs {
		if r.Endpoint != 0 || r.ErrorKind != "" {
			t.Errorf("seq %d: endpoint %d, error %q; want 0, ok", r.Seq, r.Endpoint, r.ErrorKind)
		}
	}
	stages, err := schemas.ReadFile[schemas.Stage](filepath.Join(run, "metrics", "stages.parquet"))
	if err != nil || len(stages) != 1 {
		t.Fatalf("stages: %v, %d rows", err, len(stages))
	}
	if stages[0].Endpoints != "" || len(reqs) != 20 {
		t.Errorf("stage endpoints %q, %d requests; want no endpoint figures, 20 requests", stages[0].Endpoints, len(reqs))
	}
}
