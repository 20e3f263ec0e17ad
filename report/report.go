// Package report draws the latency profiles of one or more runs from their metrics
// (RUN/metrics/*.parquet, RUN/manifest.json) into RUN/report/: a self-contained index.html
// (inline SVG charts, no network), summary.md with PNG charts, profile.json and stages.csv.
// With several runs the profiles are overlaid and a table gives the ratios of run B to run A.
package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// Config is what `wirebench report` does.
type Config struct {
	Runs []string // run directories; the first is the baseline A of comparisons
	Out  string   // report directory; empty: RUN/report of the first run
	Open bool     // open index.html in a browser when one is available
	Args []string // the command line, recorded in the first run's manifest
}

// Files of the report directory, besides the charts (ID.png).
const (
	IndexName   = "index.html"
	SummaryName = "summary.md"
	ProfileName = "profile.json"
	CSVName     = "stages.csv"
)

// Run loads the runs' metrics and writes the report. Every file is written atomically; the
// report step is recorded in the first run's manifest when the report goes to its default
// place.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	started := time.Now()
	if len(cfg.Runs) == 0 {
		return errors.New("no run directory given")
	}
	out := cfg.Out
	if out == "" {
		out = filepath.Join(cfg.Runs[0], "report")
	}
	runs, err := loadRuns(cfg.Runs, log)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	files, err := renderFiles(runs, out)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := schemas.WriteFileAtomic(filepath.Join(out, f.Name), f.Data); err != nil {
			return err
		}
	}
	index := filepath.Join(out, IndexName)
	log.Info("report written", "dir", out, "files", len(files), "runs", len(runs), "took", time.Since(started).Round(time.Millisecond))

	if cfg.Out == "" && runs[0].Manifest != nil {
		m := runs[0].Manifest
		m.Steps = append(m.Steps, schemas.Step{Name: schemas.StepReport, Args: cfg.Args, Started: started.UTC(), Ended: time.Now().UTC(), Status: schemas.StepOK})
		if err := m.Write(filepath.Join(cfg.Runs[0], schemas.ManifestName)); err != nil {
			return fmt.Errorf("record the report step: %w", err)
		}
	}
	if cfg.Open {
		openBrowser(index, log)
	}
	return nil
}

// file is one file of the report directory.
type file struct {
	Name string
	Data []byte
}

// renderFiles builds every report file in memory: index.html, summary.md, profile.json,
// stages.csv and one PNG per chart. out is the report directory (run paths in profile.json
// are relative to it).
func renderFiles(runs []*run, out string) ([]file, error) {
	p := buildProfile(runs, out)
	charts, err := buildCharts(runs)
	if err != nil {
		return nil, err
	}
	pj, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode profile.json: %w", err)
	}
	csvData, err := stagesCSV(p)
	if err != nil {
		return nil, err
	}
	html, err := indexHTML(p, charts)
	if err != nil {
		return nil, err
	}
	files := []file{{ProfileName, append(pj, '\n')}, {CSVName, csvData}, {SummaryName, markdown(p, charts)}}
	for _, c := range charts {
		files = append(files, file{c.ID + ".png", c.PNG})
	}
	// index.html last: a reader that sees it sees every other file too.
	return append(files, file{IndexName, html}), nil
}

// openBrowser opens path with the desktop's opener when there is a display; otherwise it
// logs where the report is.
func openBrowser(path string, log *slog.Logger) {
	abs, _ := filepath.Abs(path)
	var name string
	var args []string
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		name, args = "rundll32", []string{"url.dll,FileProtocolHandler"}
	default:
		if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
			log.Info("no display to open a browser on; open the report yourself", "url", "file://"+abs)
			return
		}
		name = "xdg-open"
	}
	if _, err := exec.LookPath(name); err != nil {
		log.Info("no browser opener found; open the report yourself", "opener", name, "url", "file://"+abs)
		return
	}
	cmd := exec.Command(name, append(args, abs)...)
	if err := cmd.Start(); err != nil {
		log.Warn("could not open a browser", "err", err, "url", "file://"+abs)
		return
	}
	go cmd.Wait() // reap the opener; it exits once the browser has the page
}
