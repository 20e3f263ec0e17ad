package capture

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wirebench/wirebench/capture/internal/worker"
	"github.com/wirebench/wirebench/schemas"
)

// LiveMetrics is what `capture --metrics-listen` serves while a capture runs: the workers'
// progress lines (once a second), summed over the workers, in Prometheus text format. The
// latency histograms are live figures from the wire times of results as the workers write
// them; the offline aggregate (metrics/*.parquet) remains the source of truth.
//
// Cost: a worker counts each finished request into its histograms in the write loop that
// already walks it to write the raw parts (a bucket search per event, off the send and read
// paths), and adds the stages that changed to its progress line; the coordinator stores the
// last line of each worker, and a scrape sums them.
type LiveMetrics struct {
	mu      sync.Mutex
	stages  []schemas.StageInfo
	planned map[int32]int64
	workers map[int]*workerLive
	running bool
	reg     *prometheus.Registry
}

// workerLive is one worker's last progress and the last live figures of each of its stages.
type workerLive struct {
	p      *worker.Progress
	stages map[int32]*worker.LiveStage
}

// NewLiveMetrics returns live metrics with nothing to report until a capture begins.
func NewLiveMetrics() *LiveMetrics {
	l := &LiveMetrics{workers: map[int]*workerLive{}, reg: prometheus.NewRegistry()}
	l.reg.MustRegister(l)
	return l
}

// Handler serves the metrics in Prometheus text format.
func (l *LiveMetrics) Handler() http.Handler {
	return promhttp.HandlerFor(l.reg, promhttp.HandlerOpts{})
}

// begin starts a capture's figures afresh (a search runs one capture per step: its counters
// then start again from 0, which Prometheus reads as a counter reset).
func (l *LiveMetrics) begin(stages []schemas.StageInfo, planned map[int32]int64) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stages, l.planned, l.workers, l.running = stages, maps.Clone(planned), map[int]*workerLive{}, true
}

// update keeps a worker's progress line; its Live holds only the stages that changed.
func (l *LiveMetrics) update(w int, p *worker.Progress) {
	if l == nil || p == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	wl := l.workers[w]
	if wl == nil {
		wl = &workerLive{stages: map[int32]*worker.LiveStage{}}
		l.workers[w] = wl
	}
	wl.p = p
	maps.Copy(wl.stages, p.Live)
}

// end marks the capture finished; its last figures stay.
func (l *LiveMetrics) end() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running = false
}

var (
	liveStage   = []string{"stage", "stage_name"}
	descPlanned = prometheus.NewDesc("wirebench_requests_planned", "Requests this host's schedule plans in the stage.", liveStage, nil)
	descSent    = prometheus.NewDesc("wirebench_requests_sent_total", "Requests sent.", liveStage, nil)
	descDone    = prometheus.NewDesc("wirebench_requests_done_total", "Requests finished, with or without an error (one raw requests row each).", liveStage, nil)
	descErrors  = prometheus.NewDesc("wirebench_request_errors_total", "Requests finished with an error, by error kind.", append(slices.Clone(liveStage), "kind"), nil)
	descTTFT    = prometheus.NewDesc("wirebench_live_ttft_seconds", "Live TTFT (first content event - send) of requests as they finish; the offline aggregate is the source of truth.", liveStage, nil)
	descITL     = prometheus.NewDesc("wirebench_live_itl_seconds", "Live gaps between content events; the offline aggregate is the source of truth.", liveStage, nil)
	descE2E     = prometheus.NewDesc("wirebench_live_e2e_seconds", "Live end-to-end latency (final event - send); the offline aggregate is the source of truth.", liveStage, nil)
	descLag     = prometheus.NewDesc("wirebench_live_send_lag_seconds", "Live send lateness (send - planned time), every request.", liveStage, nil)
	descFlight  = prometheus.NewDesc("wirebench_requests_in_flight", "Requests sent and not finished.", nil, nil)
	descConns   = prometheus.NewDesc("wirebench_connections_open", "Connections open to the target.", nil, nil)
	descCPU     = prometheus.NewDesc("wirebench_worker_cpu_seconds_total", "CPU time (user + system) of each capture worker process.", []string{"worker"}, nil)
	descStage   = prometheus.NewDesc("wirebench_stage", "Stage whose clock is running; -1 before the first.", nil, nil)
	descRunning = prometheus.NewDesc("wirebench_capture_running", "1 while a capture runs, 0 once it has ended (its last figures stay).", nil, nil)
)

// Describe sends the descriptors of every metric.
func (l *LiveMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPlanned, descSent, descDone, descErrors, descTTFT, descITL, descE2E, descLag, descFlight, descConns, descCPU, descStage, descRunning} {
		ch <- d
	}
}

// Collect sums the workers' last progress lines.
func (l *LiveMetrics) Collect(ch chan<- prometheus.Metric) {
	l.mu.Lock()
	defer l.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	running := 0.0
	if l.running {
		running = 1
	}
	gauge(descRunning, running)
	stage, inflight, conns := int32(-1), int64(0), int64(0)
	for i, w := range l.workers {
		stage, inflight, conns = max(stage, w.p.Stage), inflight+w.p.Inflight, conns+w.p.ConnsOpen
		counter(descCPU, float64(w.p.CPUNs)/1e9, strconv.Itoa(i))
	}
	gauge(descStage, float64(stage))
	gauge(descFlight, float64(inflight))
	gauge(descConns, float64(conns))
	for _, st := range l.stages {
		labels := []string{strconv.Itoa(int(st.Index)), st.Name}
		var sent, done int64
		var ttft, itl, e2e, lag worker.Hist
		errs := map[string]int64{}
		for _, w := range l.workers {
			if i := int(st.Index); i < len(w.p.Sent) {
				sent += w.p.Sent[i]
				done += w.p.Done[i] + w.p.Errors[i]
			}
			if s := w.stages[st.Index]; s != nil {
				addHist(&ttft, s.TTFT)
				addHist(&itl, s.ITL)
				addHist(&e2e, s.E2E)
				addHist(&lag, s.SendLag)
				for k, n := range s.Errors {
					errs[k] += n
				}
			}
		}
		gauge(descPlanned, float64(l.planned[st.Index]), labels...)
		counter(descSent, float64(sent), labels...)
		counter(descDone, float64(done), labels...)
		for k, n := range errs {
			counter(descErrors, float64(n), append(labels, k)...)
		}
		ch <- constHist(descTTFT, ttft, worker.LatencyBounds, labels)
		ch <- constHist(descITL, itl, worker.GapBounds, labels)
		ch <- constHist(descE2E, e2e, worker.LatencyBounds, labels)
		ch <- constHist(descLag, lag, worker.LagBounds, labels)
	}
}

// addHist adds h's counts to sum.
func addHist(sum *worker.Hist, h worker.Hist) {
	if sum.Counts == nil && h.Counts != nil {
		sum.Counts = make([]int64, len(h.Counts))
	}
	for i, n := range h.Counts {
		sum.Counts[i] += n
	}
	sum.SumNs += h.SumNs
}

// constHist turns per-bucket counts into a Prometheus histogram (cumulative buckets).
func constHist(d *prometheus.Desc, h worker.Hist, bounds []float64, labels []string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(bounds))
	var cum uint64
	for i, b := range bounds {
		if i < len(h.Counts) {
			cum += uint64(h.Counts[i])
		}
		buckets[b] = cum
	}
	if len(h.Counts) > len(bounds) {
		cum += uint64(h.Counts[len(bounds)])
	}
	return prometheus.MustNewConstHistogram(d, cum, float64(h.SumNs)/1e9, buckets, labels...)
}
