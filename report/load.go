package report

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sort"

	"github.com/wirebench/wirebench/compare"
	"github.com/wirebench/wirebench/schemas"
)

// run is one run directory's metrics, loaded for the report.
type run struct {
	Dir        string
	Label      string            // run id from the manifest, else the directory name
	Manifest   *schemas.Manifest // nil when the run has no readable manifest
	Stages     []schemas.Stage   // sorted by stage index
	Timeseries []schemas.Timeseries
	Server     []serverSample             // the server's scraped gauges while stages ran; nil: none
	Breakdown  []schemas.Breakdown        // metrics/breakdown.parquet: stages by model; nil when absent
	Samples    map[int32]*compare.Samples // latencies per stage for the A/B intervals; nil for one run, or without requests.parquet
	// keyLabels names breakdown keys for people: a LoRA adapter with its base model
	keyLabels map[string]string
}

// metricsPath returns the path of a metrics file kind inside the run directory.
func metricsPath(dir string, kind schemas.Kind) string {
	return filepath.Join(dir, filepath.FromSlash(kind.Path))
}

// loadRun reads RUN/metrics/stages.parquet (required), RUN/metrics/timeseries.parquet,
// RUN/raw/server-metrics.parquet and RUN/manifest.json (optional: a report of an interrupted
// run works on what is there).
func loadRun(dir string, log *slog.Logger) (*run, error) {
	r := &run{Dir: dir, Label: filepath.Base(filepath.Clean(dir))}
	if abs, err := filepath.Abs(dir); err == nil && r.Label == "." {
		r.Label = filepath.Base(abs)
	}
	m, err := schemas.ReadManifest(filepath.Join(dir, schemas.ManifestName))
	switch {
	case err == nil:
		r.Manifest = m
		if m.RunID != "" {
			r.Label = m.RunID
		}
	case errors.Is(err, fs.ErrNotExist):
		log.Warn("run has no manifest; reporting without host and config details", "run", dir)
	default:
		return nil, fmt.Errorf("read manifest: %w", err)
	}

	stagesPath := metricsPath(dir, schemas.KindOf[schemas.Stage]())
	r.Stages, err = schemas.ReadFile[schemas.Stage](stagesPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read stages: %s does not exist: run `wirebench aggregate %s` first", stagesPath, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("read stages: %w", err)
	}
	if len(r.Stages) == 0 {
		return nil, fmt.Errorf("read stages: %s has no rows: the run has no measured stage", stagesPath)
	}
	sort.SliceStable(r.Stages, func(i, j int) bool { return r.Stages[i].Stage < r.Stages[j].Stage })

	tsPath := metricsPath(dir, schemas.KindOf[schemas.Timeseries]())
	r.Timeseries, err = schemas.ReadFile[schemas.Timeseries](tsPath)
	if errors.Is(err, fs.ErrNotExist) {
		log.Warn("run has no timeseries; the latency-over-time chart is left out", "file", tsPath)
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("read timeseries: %w", err)
	}
	if err := r.loadBreakdown(); err != nil {
		return nil, err
	}
	sort.SliceStable(r.Timeseries, func(i, j int) bool {
		a, b := r.Timeseries[i], r.Timeseries[j]
		if a.BucketNs != b.BucketNs {
			return a.BucketNs < b.BucketNs
		}
		return a.Stage < b.Stage
	})
	if r.Server, err = loadServer(dir); err != nil {
		return nil, err
	}
	return r, nil
}

// loadRuns loads every run directory, in order, and gives runs with the same label distinct
// labels (A/B comparisons of two copies of one run).
func loadRuns(dirs []string, log *slog.Logger) ([]*run, error) {
	if len(dirs) == 0 {
		return nil, errors.New("no run directory given")
	}
	runs := make([]*run, 0, len(dirs))
	seen := map[string]int{}
	for _, d := range dirs {
		r, err := loadRun(d, log)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", d, err)
		}
		if len(dirs) > 1 {
			if r.Samples, err = loadSamples(d, log); err != nil {
				return nil, fmt.Errorf("run %s: %w", d, err)
			}
		}
		seen[r.Label]++
		if n := seen[r.Label]; n > 1 {
			r.Label = fmt.Sprintf("%s (%d)", r.Label, n)
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// loadSamples reads RUN/metrics/requests.parquet for the A/B comparison's intervals; without it
// the comparison has ratios only.
func loadSamples(dir string, log *slog.Logger) (map[int32]*compare.Samples, error) {
	path := metricsPath(dir, schemas.KindOf[schemas.MetricRequest]())
	reqs, err := schemas.ReadFile[schemas.MetricRequest](path)
	if errors.Is(err, fs.ErrNotExist) {
		log.Warn("run has no requests.parquet; the comparison's changes have no interval", "file", path)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read requests: %w", err)
	}
	return compare.SamplesOf(reqs), nil
}
