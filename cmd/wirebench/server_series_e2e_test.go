package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// serverPanels are the titles of the timeline's panels of the server's scraped gauges.
var serverPanels = []string{"Server requests over time", "Server KV-cache usage over time"}

// TestReportDrawsServerSeries runs against the simulator with target.metrics_url: capture
// scrapes its vLLM-named gauges (running, waiting, KV-cache usage) into
// raw/server-metrics.parquet, and the report's timeline draws them on its time axis. Without
// that file the same report is drawn without them, and nothing fails.
func TestReportDrawsServerSeries(t *testing.T) {
	url := startSim(t, "--ttft", "20ms", "--itl", "5ms")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte(`name: server-series
seed: 1
target: {url: "`+url+`", api: completions, model: sim, ignore_eos: true, timeout: 30s, metrics_url: "`+url+`/metrics"}
load:
  stages:
    - {rate: 40, duration: 3s, arrival: constant}
workload:
  synthetic:
    input: {kind: fixed, value: 32}
    output: {kind: fixed, value: 32}
tokenizer: whitespace
`), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if _, stderr, err := wirebench(t, 90*time.Second, "run", cfg, "-o", run, "--quiet"); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	rows, err := schemas.ReadFile[schemas.ServerMetric](schemas.FileOf[schemas.ServerMetric](run))
	if err != nil {
		t.Fatal(err)
	}
	var kv bool
	for _, r := range rows {
		kv = kv || (r.Name == "vllm:kv_cache_usage_perc" && r.Stage >= 0 && r.Value > 0)
	}
	if !kv {
		t.Errorf("server-metrics.parquet: no vllm:kv_cache_usage_perc above 0 during the stage; want the simulator's gauge")
	}
	html := readReport(t, run)
	for _, p := range serverPanels {
		if !strings.Contains(html, p) {
			t.Errorf("report/index.html lacks the panel %q", p)
		}
	}

	if err := os.Remove(schemas.FileOf[schemas.ServerMetric](run)); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := wirebench(t, 60*time.Second, "report", run); err != nil {
		t.Fatalf("report without server-metrics.parquet: %v\n%s", err, stderr)
	}
	html = readReport(t, run)
	for _, p := range serverPanels {
		if strings.Contains(html, p) {
			t.Errorf("report/index.html without server metrics has the panel %q", p)
		}
	}
	if !strings.Contains(html, "Latency over time") {
		t.Errorf("report/index.html without server metrics lacks the timeline chart")
	}
}

func readReport(t *testing.T, run string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, "report", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
