package capture

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/wirebench/wirebench/capture/internal/worker"
	"github.com/wirebench/wirebench/schemas"
)

// TestLiveMetricsSum: a scrape sums the workers' last progress lines; a line carries only the
// stages that changed, so a stage's figures stay from an earlier line.
func TestLiveMetricsSum(t *testing.T) {
	l := NewLiveMetrics()
	l.begin([]schemas.StageInfo{{Index: 0, Name: "a"}, {Index: 1, Name: "b"}}, map[int32]int64{0: 10, 1: 20})
	ttft := func(counts ...int64) worker.Hist {
		h := make([]int64, len(worker.LatencyBounds)+1)
		copy(h, counts)
		return worker.Hist{Counts: h, SumNs: 5e8}
	}
	l.update(0, &worker.Progress{Stage: 0, Sent: []int64{5, 0}, Done: []int64{3, 0}, Errors: []int64{1, 0}, Inflight: 1, CPUNs: 2e9, ConnsOpen: 4,
		Live: map[int32]*worker.LiveStage{0: {TTFT: ttft(0, 2, 1), Errors: map[string]int64{"timeout": 1}}}})
	l.update(1, &worker.Progress{Stage: 0, Sent: []int64{5, 0}, Done: []int64{4, 0}, Errors: []int64{1, 0}, Inflight: 0, CPUNs: 1e9, ConnsOpen: 3,
		Live: map[int32]*worker.LiveStage{0: {TTFT: ttft(1, 3), Errors: map[string]int64{"status_5xx": 1}}}})
	// worker 1 moves on to stage 1: its line has no stage 0 figures, which stay.
	l.update(1, &worker.Progress{Stage: 1, Sent: []int64{5, 2}, Done: []int64{4, 1}, Errors: []int64{1, 0}, Inflight: 1, CPUNs: 1.5e9, ConnsOpen: 3,
		Live: map[int32]*worker.LiveStage{1: {TTFT: ttft(0, 0, 1)}}})
	l.end()
	fams, err := l.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.Metric {
			got[f.GetName()+labelText(m)] = value(m)
		}
	}
	for key, want := range map[string]float64{
		`wirebench_requests_sent_total{stage="0",stage_name="a"}`:                    10,
		`wirebench_requests_done_total{stage="0",stage_name="a"}`:                    9, // done + errors
		`wirebench_requests_sent_total{stage="1",stage_name="b"}`:                    2,
		`wirebench_requests_planned{stage="1",stage_name="b"}`:                       20,
		`wirebench_request_errors_total{kind="timeout",stage="0",stage_name="a"}`:    1,
		`wirebench_request_errors_total{kind="status_5xx",stage="0",stage_name="a"}`: 1,
		`wirebench_live_ttft_seconds{stage="0",stage_name="a"}`:                      7, // sample count
		`wirebench_live_ttft_seconds{stage="1",stage_name="b"}`:                      1,
		`wirebench_requests_in_flight`:                                               2,
		`wirebench_connections_open`:                                                 7,
		`wirebench_worker_cpu_seconds_total{worker="1"}`:                             1.5,
		`wirebench_stage`:           1,
		`wirebench_capture_running`: 0,
	} {
		if got[key] != want {
			t.Errorf("%s = %v; want %v", key, got[key], want)
		}
	}
	// Cumulative buckets: the second bound holds 1 + 2 + 3 of stage 0's 7.
	for _, f := range fams {
		if f.GetName() == "wirebench_live_ttft_seconds" {
			if b := f.Metric[0].Histogram.Bucket[1]; b.GetCumulativeCount() != 6 || b.GetUpperBound() != worker.LatencyBounds[1] {
				t.Errorf("ttft stage 0 bucket 1: %d at %v; want 6 at %v", b.GetCumulativeCount(), b.GetUpperBound(), worker.LatencyBounds[1])
			}
		}
	}
}

func labelText(m *dto.Metric) string {
	if len(m.Label) == 0 {
		return ""
	}
	var parts []string
	for _, l := range m.Label {
		parts = append(parts, l.GetName()+`="`+l.GetValue()+`"`)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return -1
}

// TestDashboardMetrics: every wirebench metric the Grafana dashboard queries is one that
// LiveMetrics serves.
func TestDashboardMetrics(t *testing.T) {
	b, err := os.ReadFile("../examples/grafana/wirebench-live.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	ch := make(chan *prometheus.Desc, 32)
	NewLiveMetrics().Describe(ch)
	close(ch)
	for d := range ch {
		served[regexp.MustCompile(`fqName: "([^"]+)"`).FindStringSubmatch(d.String())[1]] = true
	}
	name := regexp.MustCompile(`wirebench_[a-z0-9_]+`)
	n := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, m := range name.FindAllString(tg.Expr, -1) {
				n++
				if base := strings.TrimSuffix(m, "_bucket"); !served[base] {
					t.Errorf("panel %q queries %s, which capture does not serve", p.Title, m)
				}
			}
		}
	}
	if n == 0 {
		t.Errorf("dashboard queries no wirebench metric")
	}
}
