package main

// Overwrites: a command never replaces another run unless told (--force), and --force never
// destroys a run it then fails to replace.

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// smallRun runs a one-second run (20 requests) of cfg into run and returns its manifest.
func smallRun(t *testing.T, cfg, run, url string, extra ...string) *schemas.Manifest {
	t.Helper()
	args := append([]string{"run", cfg, "-o", run, "--target", url, "--workers", "1", "--quiet"}, extra...)
	if _, stderr, err := wirebench(t, 60*time.Second, args...); err != nil {
		t.Fatalf("wirebench %v: %v\n%s", args, err, stderr)
	}
	return readManifest(t, run)
}

// snapshot maps every file under dir to its bytes.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == schemas.LockName {
			return err
		}
		b, err := os.ReadFile(p)
		files[strings.TrimPrefix(p, dir+"/")] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// sameFiles reports the differences between two snapshots.
func sameFiles(t *testing.T, what string, before, after map[string][]byte) {
	t.Helper()
	for p, b := range before {
		if a, ok := after[p]; !ok {
			t.Errorf("%s: %s was removed", what, p)
		} else if !bytes.Equal(a, b) {
			t.Errorf("%s: %s was changed", what, p)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("%s: %s appeared", what, p)
		}
	}
}

func metricRows(t *testing.T, run string) int {
	t.Helper()
	rows, err := schemas.ReadFile[schemas.MetricRequest](filepath.Join(run, "metrics", "requests.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	return len(rows)
}

// TestAggregateOutRefusesAnotherRun: `aggregate A -o B` with B another captured run is refused
// and B is left as it was; with --force B's run is replaced whole by A's metrics.
func TestAggregateOutRefusesAnotherRun(t *testing.T) {
	url := startSim(t, "--ttft", "5ms", "--itl", "2ms")
	dir := t.TempDir()
	cfg := smallConfig(t, dir, "small", 20, time.Second, "")
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	ma, mb := smallRun(t, cfg, a, url), smallRun(t, cfg, b, url)
	before := snapshot(t, b)

	_, stderr, err := wirebench(t, 60*time.Second, "aggregate", a, "-o", b)
	if err == nil || !strings.Contains(stderr, b+" holds another run (run "+mb.RunID) || !strings.Contains(stderr, "--force") {
		t.Errorf("aggregate A -o B: err %v, stderr:\n%s\nwant a refusal naming B's run and --force", err, stderr)
	}
	sameFiles(t, "B after a refused aggregate -o", before, snapshot(t, b))

	if _, stderr, err := wirebench(t, 60*time.Second, "aggregate", a, "-o", b, "--force"); err != nil {
		t.Fatalf("aggregate A -o B --force: %v\n%s", err, stderr)
	}
	if m := readManifest(t, b); m.RunID != ma.RunID {
		t.Errorf("B's manifest after --force is run %s; want A's, %s", m.RunID, ma.RunID)
	}
	for _, d := range []string{"schedule", "raw", "report"} {
		if _, err := os.Stat(filepath.Join(b, d)); !os.IsNotExist(err) {
			t.Errorf("B/%s after aggregate -o B --force: %v; want the replaced run's %s removed", d, err, d)
		}
	}
	if got, want := metricRows(t, b), metricRows(t, a); got != want {
		t.Errorf("B's metrics hold %d requests; want A's %d", got, want)
	}
}

// TestRunForceChecksFirst: `run --force` into an earlier run with a config or a capture option
// that capture refuses fails and leaves the earlier run as it was; with a good config it
// replaces the run whole.
func TestRunForceChecksFirst(t *testing.T) {
	url := startSim(t, "--ttft", "5ms", "--itl", "2ms")
	dir := t.TempDir()
	cfg := smallConfig(t, dir, "small", 20, time.Second, "")
	run := filepath.Join(dir, "run")
	old := smallRun(t, cfg, run, url)
	before := snapshot(t, run)

	sharded := smallConfig(t, dir, "sharded", 20, time.Second, "capture: {shards: 2}\n")
	for _, tc := range []struct {
		name, cfg, want string
		extra           []string
	}{
		{"capture.shards 2 without --shard", sharded, "the config's capture.shards is 2", nil},
		{"a bad --start-at", cfg, "start", []string{"--start-at", "soon"}},
	} {
		args := append([]string{"run", tc.cfg, "-o", run, "--force", "--target", url, "--workers", "1", "--quiet"}, tc.extra...)
		_, stderr, err := wirebench(t, 60*time.Second, args...)
		if err == nil || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: run --force: err %v, stderr:\n%s\nwant a failure naming %q", tc.name, err, stderr, tc.want)
		}
		sameFiles(t, tc.name, before, snapshot(t, run))
	}

	m := smallRun(t, cfg, run, url, "--force")
	var steps []string
	for _, s := range m.Steps {
		steps = append(steps, s.Name)
	}
	if m.RunID == old.RunID || m.Status != schemas.StatusComplete || strings.Join(steps, ",") != "replay,capture,aggregate,report" {
		t.Errorf("run --force: run id %s (old %s), status %s, steps %v; want a new complete run of its own", m.RunID, old.RunID, m.Status, steps)
	}
	if got := metricRows(t, run); got != 20 {
		t.Errorf("metrics after run --force hold %d requests; want the new run's 20", got)
	}
}

// TestReplayForceThenAggregate: `replay --force` into a captured run removes its results, so a
// later aggregate cannot turn the old capture into results under the new config.
func TestReplayForceThenAggregate(t *testing.T) {
	url := startSim(t, "--ttft", "5ms", "--itl", "2ms")
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	smallRun(t, smallConfig(t, dir, "small", 20, time.Second, ""), run, url)

	other := smallConfig(t, dir, "other", 5, 2*time.Second, "slo: {ttft: 1ms}\n")
	_, stderr, err := wirebench(t, 60*time.Second, "replay", other, "-o", run, "--target", url)
	if err == nil || !strings.Contains(stderr, "already holds a run") || !strings.Contains(stderr, "raw/") {
		t.Errorf("replay into a captured run without --force: err %v, stderr:\n%s\nwant a refusal naming raw/", err, stderr)
	}
	_, stderr, err = wirebench(t, 60*time.Second, "replay", other, "-o", run, "--target", url, "--force")
	if err != nil {
		t.Fatalf("replay --force: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "removed the earlier run's results") {
		t.Errorf("replay --force logged no removal of the old results:\n%s", stderr)
	}
	for _, d := range []string{"raw", "metrics", "report"} {
		if _, err := os.Stat(filepath.Join(run, d)); !os.IsNotExist(err) {
			t.Errorf("%s/ after replay --force: %v; want it removed", d, err)
		}
	}
	_, stderr, err = wirebench(t, 60*time.Second, "aggregate", run)
	if err == nil {
		if n := metricRows(t, run); n != 0 {
			t.Errorf("aggregate after replay --force turned %d old requests into results under the new config\n%s", n, stderr)
		}
	}
}
