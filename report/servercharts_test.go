package report

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

// TestServerPanels: the timeline chart draws the server's running and waiting requests and its
// KV-cache usage below the client's series when raw/server-metrics.parquet has them (vLLM's or
// SGLang's names, label sets added up or averaged), and is drawn as before when the file is
// absent or holds none of them.
func TestServerPanels(t *testing.T) {
	t0 := int64(1_750_000_000) * 1e9 // the fixture's first stage starts here
	sample := func(ns int64, name, labels string, v float64) schemas.ServerMetric {
		return schemas.ServerMetric{ScrapeNs: t0 + ns, Stage: 0, Name: name, Labels: labels, Value: v}
	}
	vllm := []schemas.ServerMetric{
		sample(-5e8, "vllm:num_requests_running", `model_name="m"`, 99), // before the stage: stage -1
		sample(1e9, "vllm:num_requests_running", `engine="0"`, 3),
		sample(1e9, "vllm:num_requests_running", `engine="1"`, 4),
		sample(1e9, "vllm:num_requests_waiting", `engine="0"`, 2),
		sample(1e9, "vllm:kv_cache_usage_perc", `engine="0"`, 0.2),
		sample(1e9, "vllm:kv_cache_usage_perc", `engine="1"`, 0.4),
		sample(1e9, "vllm:prompt_tokens_total", `engine="0"`, 1000),
	}
	vllm[0].Stage = -1
	sglang := []schemas.ServerMetric{sample(1e9, "sglang:num_running_reqs", "", 5), sample(1e9, "sglang:num_queue_reqs", "", 1)}
	other := []schemas.ServerMetric{sample(1e9, "vllm:prompt_tokens_total", "", 1)}
	cases := []struct {
		name  string
		rows  []schemas.ServerMetric // nil: no file
		want  []string               // panel titles
		first serverSample
	}{
		{"vllm", vllm, []string{"Server requests over time", "Server KV-cache usage over time"}, serverSample{t0 + 1e9, 7, 2, 0.3}},
		{"sglang without cache usage", sglang, []string{"Server requests over time"}, serverSample{t0 + 1e9, 5, 1, math.NaN()}},
		{"no gauge in the file", other, nil, serverSample{}},
		{"no file", nil, nil, serverSample{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := fixtureOne.write(t, t.TempDir())
			if tc.rows != nil {
				if err := schemas.WriteFile(schemas.FileOf[schemas.ServerMetric](dir), tc.rows, schemas.Producer{Command: "test"}); err != nil {
					t.Fatal(err)
				}
			}
			runs, err := loadRuns([]string{dir}, quiet())
			if err != nil {
				t.Fatal(err)
			}
			if s := runs[0].Server; len(tc.want) > 0 && (len(s) != 1 || s[0].ScrapeNs != tc.first.ScrapeNs || s[0].Running != tc.first.Running ||
				s[0].Waiting != tc.first.Waiting || !near(s[0].KV, tc.first.KV)) {
				t.Errorf("server samples %+v; want one, %+v", s, tc.first)
			}
			cs, err := buildCharts(runs)
			if err != nil {
				t.Fatal(err)
			}
			texts := svgTexts(t, chartByID(t, cs, "timeline-1").SVG)
			for _, title := range []string{"Server requests over time", "Server KV-cache usage over time"} {
				if got, want := strings.Contains(texts, title), strings.Contains(strings.Join(tc.want, "|"), title); got != want {
					t.Errorf("timeline chart has %q: %v; want %v\n%s", title, got, want, texts)
				}
			}
			if !strings.Contains(texts, "seconds since the first stage started") {
				t.Errorf("timeline chart lost its time axis label:\n%s", texts)
			}
		})
	}
}

// TestServerMetricsUnreadable: a server-metrics file that is not one is an error naming it.
func TestServerMetricsUnreadable(t *testing.T) {
	dir := fixtureOne.write(t, t.TempDir())
	path := schemas.FileOf[schemas.ServerMetric](dir)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("not parquet"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadRuns([]string{dir}, quiet()); err == nil || !strings.Contains(err.Error(), "server-metrics.parquet") {
		t.Errorf("loadRuns = %v; want an error naming server-metrics.parquet", err)
	}
}

// near: equal within 1e-9, or both NaN.
func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 || (math.IsNaN(a) && math.IsNaN(b)) }
