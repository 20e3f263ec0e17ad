package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/wirebench/wirebench/schemas"
)

// TestLiveMetricsDuringRun runs `wirebench run --metrics-listen 127.0.0.1:0` (two 3 s stages
// against the simulator) and scrapes the endpoint every 200 ms, parsing each scrape with
// Prometheus's own parser. During the capture the counters move; once it has ended
// (wirebench_capture_running 0, kept up by --metrics-linger) sent and done per stage equal the
// rows of metrics/requests.parquet, and each stage's live TTFT p50 lies in the histogram
// bucket that holds the offline TTFT p50 of stages.parquet.
func TestLiveMetricsDuringRun(t *testing.T) {
	url := startSim(t, "--ttft", "20ms", "--itl", "5ms")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte(`name: live
seed: 1
target: {url: "`+url+`", api: completions, model: sim, ignore_eos: true, timeout: 30s}
load:
  stages:
    - {rate: 20, duration: 3s, arrival: constant}
    - {rate: 40, duration: 3s, arrival: poisson}
workload:
  synthetic:
    input: {kind: fixed, value: 32}
    output: {kind: fixed, value: 16}
tokenizer: whitespace
`), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "run", cfg, "-o", run, "--quiet", "--metrics-listen", "127.0.0.1:0", "--metrics-linger", "8s")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	endpoint, logs := liveEndpoint(t, stderr)

	var during, final map[string]*dto.MetricFamily
	for deadline := time.Now().Add(90 * time.Second); final == nil && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		fams, err := scrapeLive(endpoint)
		if err != nil {
			continue // not up yet, or the run ended
		}
		switch {
		case gaugeOf(fams, "wirebench_capture_running") == 1 && sumOf(fams, "wirebench_requests_sent_total") > 0:
			if during == nil { // the first: well before the end
				during = fams
			}
		case gaugeOf(fams, "wirebench_capture_running") == 0 && sumOf(fams, "wirebench_requests_sent_total") > 0:
			final = fams
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, logs())
	}
	if during == nil || final == nil {
		t.Fatalf("scrapes: during the capture %v, after it %v; want both\n%s", during != nil, final != nil, logs())
	}
	if sent, all := sumOf(during, "wirebench_requests_sent_total"), sumOf(final, "wirebench_requests_sent_total"); sent >= all {
		t.Errorf("sent during the capture %v, at its end %v; want fewer during (a scrape while it ran)", sent, all)
	}
	for _, name := range []string{"wirebench_requests_in_flight", "wirebench_connections_open", "wirebench_worker_cpu_seconds_total", "wirebench_live_send_lag_seconds", "wirebench_live_itl_seconds", "wirebench_live_e2e_seconds"} {
		if final[name] == nil {
			t.Errorf("scrape lacks %s", name)
		}
	}

	reqs, err := schemas.ReadFile[schemas.MetricRequest](filepath.Join(run, "metrics", "requests.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]float64{}
	for _, r := range reqs {
		rows[strconv.Itoa(int(r.Stage))]++
	}
	stages, err := schemas.ReadFile[schemas.Stage](filepath.Join(run, "metrics", "stages.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != 2 {
		t.Fatalf("stages.parquet: %d stages; want 2", len(stages))
	}
	for _, s := range stages {
		st := strconv.Itoa(int(s.Stage))
		sent, done := byStage(final, "wirebench_requests_sent_total", st), byStage(final, "wirebench_requests_done_total", st)
		if sent != rows[st] || done != rows[st] || done != float64(s.Requests) {
			t.Errorf("stage %s: live sent %v, done %v; want both %v (rows of requests.parquet; stages.parquet says %d)", st, sent, done, rows[st], s.Requests)
		}
		lo, hi, err := p50Bucket(final, "wirebench_live_ttft_seconds", st)
		offline := float64(val(s.TTFT.P50)) / 1e9
		if err != nil || offline <= lo || offline > hi {
			t.Errorf("stage %s: live TTFT p50 in bucket (%v, %v] s (%v); offline p50 %v s: want it in that bucket", st, lo, hi, err, offline)
		}
	}
}

// liveEndpoint reads the command's stderr until it logs the metrics URL; it returns the URL
// and what returns every line logged so far (the rest is read in the background).
func liveEndpoint(t *testing.T, stderr interface{ Read([]byte) (int, error) }) (string, func() string) {
	t.Helper()
	var buf syncBuffer
	found, ended := make(chan string, 1), make(chan struct{})
	re := regexp.MustCompile(`msg="serving live metrics" url=(\S+)`)
	go func() {
		defer close(ended)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(&buf, sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case u := <-found:
		return u, buf.String
	case <-ended:
		t.Fatalf("the command ended without a `serving live metrics` line on stderr:\n%s", buf.String())
		return "", nil
	case <-time.After(60 * time.Second):
		t.Fatalf("no `serving live metrics` line on stderr:\n%s", buf.String())
		return "", nil
	}
}

// scrapeLive fetches and parses the endpoint with Prometheus's text parser.
func scrapeLive(url string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	return p.TextToMetricFamilies(resp.Body)
}

func gaugeOf(fams map[string]*dto.MetricFamily, name string) float64 {
	if f := fams[name]; f != nil && len(f.Metric) == 1 && f.Metric[0].Gauge != nil {
		return f.Metric[0].Gauge.GetValue()
	}
	return math.NaN()
}

// sumOf adds a counter's series.
func sumOf(fams map[string]*dto.MetricFamily, name string) float64 {
	var sum float64
	if f := fams[name]; f != nil {
		for _, m := range f.Metric {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// series returns the series of name whose label stage is stage.
func series(fams map[string]*dto.MetricFamily, name, stage string) *dto.Metric {
	if f := fams[name]; f != nil {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if l.GetName() == "stage" && l.GetValue() == stage {
					return m
				}
			}
		}
	}
	return nil
}

func byStage(fams map[string]*dto.MetricFamily, name, stage string) float64 {
	return series(fams, name, stage).GetCounter().GetValue()
}

// p50Bucket returns the bounds (lo, hi] of the bucket of a histogram that holds its median.
func p50Bucket(fams map[string]*dto.MetricFamily, name, stage string) (lo, hi float64, err error) {
	h := series(fams, name, stage).GetHistogram()
	if h.GetSampleCount() == 0 {
		return 0, 0, fmt.Errorf("%s{stage=%q}: no observations", name, stage)
	}
	half := float64(h.GetSampleCount()) / 2
	for _, b := range h.Bucket {
		if float64(b.GetCumulativeCount()) >= half {
			return lo, b.GetUpperBound(), nil
		}
		lo = b.GetUpperBound()
	}
	return lo, math.Inf(1), nil
}

// TestLiveMetricsPortInUse: --metrics-listen on a port already taken fails before anything
// is written, exit 2, naming the flag.
func TestLiveMetricsPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	run := filepath.Join(t.TempDir(), "run")
	_, stderr, err := wirebench(t, time.Minute, "run", "../../examples/smoke.yaml", "-o", run, "--metrics-listen", ln.Addr().String())
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr, "--metrics-listen") || !strings.Contains(stderr, "address already in use") {
		t.Errorf("run --metrics-listen %s (taken): %v\n%s\nwant exit 2 naming --metrics-listen and the address in use", ln.Addr(), err, stderr)
	}
	if _, err := os.Stat(run); !os.IsNotExist(err) {
		t.Errorf("run directory %s: %v; want nothing written", run, err)
	}
}
