package report

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/wirebench/wirebench/schemas"
)

// The server's own gauges that the report draws under the client's time series, by the names
// vLLM (v0 and v1) and SGLang give them. Several label sets of one name at one scrape (data
// parallel engines, several models) add up for request counts and average for cache usage.
var (
	serverRunning = []string{"vllm:num_requests_running", "sglang:num_running_reqs"}
	serverWaiting = []string{"vllm:num_requests_waiting", "sglang:num_queue_reqs"}
	serverKV      = []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"} // fractions, 0-1
)

// serverSample is one scrape of the server's gauges; NaN where the server did not expose one.
type serverSample struct {
	ScrapeNs             int64
	Running, Waiting, KV float64
}

// loadServer reads RUN/raw/server-metrics.parquet (written by capture with target.metrics_url)
// and returns the scrapes taken while a stage ran, in time order: nil when the file is absent
// or holds none of the gauges.
func loadServer(dir string) ([]serverSample, error) {
	path := schemas.FileOf[schemas.ServerMetric](dir)
	rows, err := schemas.ReadFile[schemas.ServerMetric](path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read server metrics: %w", err)
	}
	type acc struct{ run, wait, kv, kvN float64 }
	by := map[int64]*acc{}
	seen := [3]bool{}
	for _, m := range rows {
		if m.Stage < 0 {
			continue
		}
		a := by[m.ScrapeNs]
		if a == nil {
			a = &acc{}
			by[m.ScrapeNs] = a
		}
		switch {
		case slices.Contains(serverRunning, m.Name):
			a.run += m.Value
			seen[0] = true
		case slices.Contains(serverWaiting, m.Name):
			a.wait += m.Value
			seen[1] = true
		case slices.Contains(serverKV, m.Name):
			a.kv += m.Value
			a.kvN++
			seen[2] = true
		}
	}
	if seen == [3]bool{} {
		return nil, nil
	}
	out := make([]serverSample, 0, len(by))
	for ns, a := range by {
		s := serverSample{ScrapeNs: ns, Running: a.run, Waiting: a.wait, KV: a.kv / a.kvN}
		if !seen[0] {
			s.Running = math.NaN()
		}
		if !seen[1] {
			s.Waiting = math.NaN()
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ScrapeNs < out[j].ScrapeNs })
	return out, nil
}

// serverPlots returns the panels that put the server's scraped gauges on the timeline's axis
// (seconds since t0): running and waiting requests, and KV-cache usage in percent, each only
// when the server exposed it.
func serverPlots(samples []serverSample, t0 int64, suffix string, hs *hoverSet) []*plot.Plot {
	var run, wait, kv []point
	for _, s := range samples {
		x := float64(s.ScrapeNs-t0) / 1e9
		run = append(run, point{X: x, Y: s.Running})
		wait = append(wait, point{X: x, Y: s.Waiting})
		kv = append(kv, point{X: x, Y: 100 * s.KV})
	}
	run, wait, kv = finite(run), finite(wait), finite(kv)
	var ps []*plot.Plot
	if len(run)+len(wait) > 0 {
		p := newPlot("Server requests over time"+suffix+" (scraped /metrics)", "", "requests")
		addSeries(p, hs, series{name: "running", pts: run, color: blue, width: 1.3})
		addSeries(p, hs, series{name: "waiting", pts: wait, color: amber, width: 1.3, dashes: []vg.Length{vg.Points(3), vg.Points(2)}})
		zeroBased(p)
		ps = append(ps, p)
	}
	if len(kv) > 0 {
		p := newPlot("Server KV-cache usage over time"+suffix+" (scraped /metrics)", "", "KV cache used (%)")
		addSeries(p, hs, series{pts: kv, color: dark, width: 1.3})
		zeroBased(p)
		p.Y.Max = max(p.Y.Max, 100)
		ps = append(ps, p)
	}
	return ps
}
