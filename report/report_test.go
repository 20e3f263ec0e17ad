package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"image/png"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(gl) && i < len(wl); i++ {
			if gl[i] != wl[i] {
				t.Fatalf("%s differs at line %d:\n got: %s\nwant: %s\n(run go test ./report -update if the change is intended)", path, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s differs in length: got %d lines; want %d (run go test ./report -update if intended)", path, len(gl), len(wl))
	}
}

// writeReport writes the fixture runs and their report; it returns the report directory.
func writeReport(t *testing.T, fs ...fixtureRun) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	var runs []string
	for _, f := range fs {
		runs = append(runs, f.write(t, dir))
	}
	if err := Run(context.Background(), Config{Runs: runs, Args: []string{"report"}}, quiet()); err != nil {
		t.Fatalf("Run(%v) = %v; want nil", runs, err)
	}
	return filepath.Join(runs[0], "report"), runs
}

func TestGolden(t *testing.T) {
	tests := []struct {
		name string
		runs []fixtureRun
	}{
		{"single", []fixtureRun{fixtureA}},       // one run with a client-bound stage
		{"ab", []fixtureRun{fixtureA, fixtureB}}, // A/B comparison: ratios B / A
		{"interrupted", []fixtureRun{{id: "run-c", capacity: 5, rates: []float64{2, 4, 6}, clientBound: -1, serverLate: -1, missing: []string{"worker 1: signal: killed"}}}},
		// the last stage's requests all failed: its figures are null and –, its trust red
		{"failed", []fixtureRun{{id: "run-d", capacity: 5, rates: []float64{2, 4, 6}, clientBound: -1, serverLate: -1, failedLast: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _ := writeReport(t, tt.runs...)
			for _, f := range []string{ProfileName, SummaryName} {
				got, err := os.ReadFile(filepath.Join(out, f))
				if err != nil {
					t.Fatal(err)
				}
				golden(t, tt.name+"."+f, got)
			}
		})
	}
}

func TestReportFiles(t *testing.T) {
	out, runs := writeReport(t, fixtureA, fixtureB)
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("report dir holds %s; want no temporary file left behind", e.Name())
		}
		names[e.Name()] = true
	}
	want := []string{IndexName, SummaryName, ProfileName, CSVName, "ttft.png", "tpot.png", "itl.png", "ntpot.png", "e2e.png",
		"throughput.png", "tokens.png", "goodput.png", "breakdown-1.png", "breakdown-2.png", "timeline-1.png",
		"timeline-2.png", "quality-1.png", "quality-2.png"}
	for _, n := range want {
		if !names[n] {
			t.Errorf("report dir lacks %s; has %v", n, names)
		}
	}
	// Every PNG decodes and is not tiny.
	for n := range names {
		if !strings.HasSuffix(n, ".png") {
			continue
		}
		f, err := os.Open(filepath.Join(out, n))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Errorf("png.Decode(%s) = %v; want a PNG", n, err)
			continue
		}
		if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 400 {
			t.Errorf("%s is %dx%d; want at least 600x400", n, b.Dx(), b.Dy())
		}
	}
	// The HTML inlines one SVG per chart and references nothing outside itself.
	html, err := os.ReadFile(filepath.Join(out, IndexName))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Count(string(html), "<svg "), len(want)-4; got != want {
		t.Errorf("index.html has %d inline SVGs; want %d", got, want)
	}
	for _, bad := range []string{"http://", "https://", "<script src", "<link", "@import", "url("} {
		if i := strings.Index(string(html), bad); i >= 0 && !strings.Contains(string(html[max(0, i-40):i]), "xmlns") {
			t.Errorf("index.html contains %q near %q; want no external reference", bad, string(html[max(0, i-40):min(len(html), i+60)]))
		}
	}
	// stages.csv: header plus one row per stage of each run, every row as wide as the header.
	b, err := os.ReadFile(filepath.Join(out, CSVName))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatalf("read stages.csv: %v", err)
	}
	if got, want := len(recs), 1+len(fixtureA.rates)+len(fixtureB.rates); got != want {
		t.Errorf("stages.csv has %d records; want %d", got, want)
	}
	if recs[0][0] != "run" || recs[1][0] != "run-a" || recs[len(recs)-1][0] != "run-b" {
		t.Errorf("stages.csv first column = %q, %q, %q; want run, run-a, run-b", recs[0][0], recs[1][0], recs[len(recs)-1][0])
	}
	// The report step is recorded in the first run's manifest.
	m, err := schemas.ReadManifest(filepath.Join(runs[0], schemas.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(m.Steps); n == 0 || m.Steps[n-1].Name != "report" || m.Steps[n-1].Status != schemas.StepOK {
		t.Errorf("manifest steps = %+v; want a last step report/complete", m.Steps)
	}
}

func TestProfileFigures(t *testing.T) {
	dir := t.TempDir()
	runs, err := loadRuns([]string{fixtureA.write(t, dir), fixtureB.write(t, dir)}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	p := buildProfile(runs, dir)
	a := p.Runs[0]
	if a.Headline.SaturationStage == nil || *a.Headline.SaturationStage != 4 {
		t.Errorf("run A saturation stage = %v; want 4 (12/s, the last below capacity 14/s)", a.Headline.SaturationStage)
	}
	if got := a.Headline.ClientBoundStages; len(got) != 1 || got[0] != 7 {
		t.Errorf("run A client-bound stages = %v; want [7]", got)
	}
	if got, want := a.Stages[7].Quality.Advice, "split the load over 2 hosts"; !strings.Contains(got, want) {
		t.Errorf("advice for stage 7 = %q; want it to contain %q (4 workers needed, 2 CPUs)", got, want)
	}
	if got := a.Stages[7].ErrorsByKind["timeout"]; got != a.Stages[7].Errors || got == 0 {
		t.Errorf("stage 7 errors_by_kind[timeout] = %d; want errors = %d > 0", got, a.Stages[7].Errors)
	}
	if a.Path != "run-a" {
		t.Errorf("run A path = %q; want run-a (relative to the report directory)", a.Path)
	}
	if len(p.Comparisons) != 1 {
		t.Fatalf("comparisons = %d; want 1", len(p.Comparisons))
	}
	c := p.Comparisons[0]
	r := c.Headline["max_completion_rate"]
	if want := 19 * 0.97 / (14 * 0.97); r == nil || *r < want-0.001 || *r > want+0.001 {
		t.Errorf("B/A max completion rate ratio = %v; want %.4f", r, want)
	}
	if got := c.Stages[0].Ratios["completion_rate"]; got == nil || *got != 1 {
		t.Errorf("B/A stage 0 completion ratio = %v; want 1 (both keep up at 1/s)", got)
	}
	if got := ratio(5, 0); got != nil {
		t.Errorf("ratio(5, 0) = %v; want nil", *got)
	}
}

func TestSummary(t *testing.T) {
	dir := t.TempDir()
	a, b := fixtureA.write(t, dir), fixtureB.write(t, dir)
	var buf bytes.Buffer
	if err := Summary(&buf, a, b); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	count := func(sub string) int {
		n := 0
		for _, l := range lines {
			if strings.Contains(l, sub) {
				n++
			}
		}
		return n
	}
	tests := []struct {
		sub  string
		want int
	}{
		{"r24", 4},                    // the stage line of both runs, the trust line and the warning of run A
		{"warning: Stage r24", 1},     // one client-bound stage, one warning
		{"<- saturation", 2},          // one saturation stage per run
		{"CLIENT-BOUND", 1},           // marked on its stage line
		{"LOAD NOT DELIVERED", 2},     // A's client-bound stage, B's late stage
		{"trust red: stage r24", 1},   // run A's trust line, before its stages
		{"trust amber: stage r20", 1}, // run B's: the server was late
		{`warning: Stage r20 did not get its planned load (send lag p99`, 1},
		{"--workers", 0},                  // B's stage 6 blames the server: no worker advice
		{"run-b vs run-a: max done/s", 1}, // the comparison line
	}
	for _, tt := range tests {
		if got := count(tt.sub); got != tt.want {
			t.Errorf("Summary: %d lines contain %q; want %d\n%s", got, tt.sub, tt.want, out)
		}
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	good := fixtureA.write(t, dir)
	noMetrics := filepath.Join(dir, "empty")
	if err := os.MkdirAll(noMetrics, 0o755); err != nil {
		t.Fatal(err)
	}
	wrongKind := filepath.Join(dir, "wrong")
	if err := schemas.WriteFile(filepath.Join(wrongKind, "metrics", "stages.parquet"), []schemas.Timeseries{{}}, schemas.Producer{}); err != nil {
		t.Fatal(err)
	}
	emptyStages := filepath.Join(dir, "nostages")
	if err := schemas.WriteFile(filepath.Join(emptyStages, "metrics", "stages.parquet"), []schemas.Stage{}, schemas.Producer{}); err != nil {
		t.Fatal(err)
	}
	badManifest := filepath.Join(dir, "badmanifest")
	fixtureA.write(t, badManifest)
	if err := os.WriteFile(filepath.Join(badManifest, "run-a", schemas.ManifestName), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		runs []string
		want string // substring of the error
		is   error
	}{
		{"no run", nil, "no run directory", nil},
		{"no metrics", []string{noMetrics}, "run `wirebench aggregate", nil},
		{"wrong kind", []string{wrongKind}, "stages.parquet", schemas.ErrKind},
		{"no stages", []string{emptyStages}, "has no rows", nil},
		{"bad manifest", []string{filepath.Join(badManifest, "run-a")}, "manifest.json", nil},
		{"second run bad", []string{good, noMetrics}, "run " + noMetrics, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			err := Run(context.Background(), Config{Runs: tt.runs, Out: out}, quiet())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run(%v) = %v; want an error containing %q", tt.runs, err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("Run(%v) = %v; want it to wrap %v", tt.runs, err, tt.is)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("report dir %s exists after a failed run (stat: %v); want nothing written", out, err)
			}
		})
	}
}

func TestRunWithoutTimeseriesOrManifest(t *testing.T) {
	dir := t.TempDir()
	rd := fixtureA.write(t, dir)
	for _, f := range []string{filepath.Join(rd, "metrics", "timeseries.parquet"), filepath.Join(rd, schemas.ManifestName)} {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "out")
	if err := Run(context.Background(), Config{Runs: []string{rd}, Out: out}, quiet()); err != nil {
		t.Fatalf("Run without timeseries and manifest = %v; want nil", err)
	}
	if _, err := os.Stat(filepath.Join(out, "timeline-1.png")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("timeline-1.png written without a timeseries (stat: %v); want it left out", err)
	}
	var p schemas.Profile
	b, err := os.ReadFile(filepath.Join(out, ProfileName))
	if err == nil {
		err = json.Unmarshal(b, &p)
	}
	if err != nil {
		t.Fatal(err)
	}
	if p.Runs[0].Label != "run-a" || p.Runs[0].Host != "" {
		t.Errorf("label, host = %q, %q; want run-a (the directory name), empty host", p.Runs[0].Label, p.Runs[0].Host)
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		got, want string
	}{
		{fmtDur(0), "0"},
		{fmtDur(850), "850ns"},
		{fmtDur(12_345), "12.3µs"},
		{fmtDur(45_210_000), "45.2ms"},
		{fmtDur(1_234_000_000), "1.23s"},
		{fmtDur(-2_000_000), "-2.00ms"},
		{fmtRate(0.5), "0.500"},
		{fmtRate(12.34), "12.3"},
		{fmtRate(4521.2), "4521"},
		{fmtPct(0.995), "99.5%"},
		{chartID("ttft_ns"), "ttft"},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("case %d = %q; want %q", i, tt.got, tt.want)
		}
	}
}

// TestPreview writes the A/B report to $WIREBENCH_REPORT_PREVIEW for people to look at.
func TestPreview(t *testing.T) {
	dst := os.Getenv("WIREBENCH_REPORT_PREVIEW")
	if dst == "" {
		t.Skip("set WIREBENCH_REPORT_PREVIEW=DIR to write a preview report")
	}
	a, b := fixtureA.write(t, dst), fixtureB.write(t, dst)
	for _, c := range []Config{{Runs: []string{a}}, {Runs: []string{a, b}, Out: filepath.Join(dst, "ab")}} {
		if err := Run(context.Background(), c, quiet()); err != nil {
			t.Fatal(err)
		}
	}
}
