package main

// The first hour of a newcomer, from README alone: copy examples/my-server.yaml, point it at a
// server, run it, find the report; and the one-line errors of a config that is not there.

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNewcomerPathMyServer copies examples/my-server.yaml as README says, shortens its stages,
// runs it against a simulator with --target, and opens the report path `run` prints last.
func TestNewcomerPathMyServer(t *testing.T) {
	t.Setenv("DISPLAY", "") // --open must not start a browser here
	t.Setenv("WAYLAND_DISPLAY", "")
	url := startSim(t, "--ttft", "10ms", "--itl", "2ms")
	text, err := os.ReadFile("../../examples/my-server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := string(text)
	for _, r := range [][2]string{{"duration: 5s", "duration: 1s"}, {"duration: 30s", "duration: 2s"}, {"max: 4096", "max: 256"}, {"min: 64, max: 256}", "min: 8, max: 32}"}} {
		if !strings.Contains(cfg, r[0]) {
			t.Fatalf("examples/my-server.yaml no longer holds %q: update this test", r[0])
		}
		cfg = strings.ReplaceAll(cfg, r[0], r[1])
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "my-server.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "runs", "my-server")
	out, stderr, err := wirebench(t, 90*time.Second, "run", path, "-o", run, "--target", url, "--quiet", "--open")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	report, ok := strings.CutPrefix(last, "report: ")
	if !ok {
		t.Fatalf("run's last line on stdout is %q; want \"report: PATH\"\n%s", last, out)
	}
	if want := filepath.Join(run, "report", "index.html"); report != want {
		t.Errorf("run printed report path %q; want %q", report, want)
	}
	if st, err := os.Stat(report); err != nil || st.Size() == 0 {
		t.Errorf("printed report %s: %v; want a non-empty file", report, err)
	}
	// --open on a machine without a display says where the report is, as `report --open` does.
	if !strings.Contains(stderr, "open the report yourself") {
		t.Errorf("run --open without a display does not say so; stderr:\n%s", stderr)
	}
}

// TestMissingConfigIsOneLine: a config that is not there, or not a file, is one line naming the
// file and the reason (exit 1, a bad config), not the command's whole help (kong's exit 80).
func TestMissingConfigIsOneLine(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "my-config.yaml")
	for _, tc := range []struct {
		args   []string
		path   string
		reason string
	}{
		{[]string{"run", missing, "-o", filepath.Join(dir, "run1")}, missing, "no such file or directory"},
		{[]string{"replay", missing, "-o", filepath.Join(dir, "run2")}, missing, "no such file or directory"},
		{[]string{"replay", dir, "--dry-run"}, dir, "is a directory"},
	} {
		_, stderr, err := wirebench(t, 30*time.Second, tc.args...)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("%v: err %v; want exit status 1", tc.args, err)
		}
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], tc.path+": "+tc.reason) {
			t.Errorf("%v: stderr is %d lines:\n%s\nwant one line with %q", tc.args, len(lines), stderr, tc.path+": "+tc.reason)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "run1")); !os.IsNotExist(err) {
		t.Errorf("run with a missing config left %s/run1 behind (stat: %v)", dir, err)
	}
}

// TestConfigErrorsNameFileLineField: an unknown key, a duration without its unit and a file the
// config names that is not there are each one error naming the file, the line and the field
// (and, for a typo, the key it most likely meant).
// TestTooManyWorkersRefused: a worker count past four a CPU stops capture before any worker
// starts, with an error naming the limit.
func TestTooManyWorkersRefused(t *testing.T) {
	dir := t.TempDir()
	cfg, run := filepath.Join(dir, "c.yaml"), filepath.Join(dir, "run")
	yaml := "target: {url: \"http://127.0.0.1:9\", model: m}\nload:\n  stages:\n    - {rate: 5, duration: 2s}\n" +
		"workload:\n  synthetic:\n    input: {kind: fixed, value: 8}\n    output: {kind: fixed, value: 8}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := wirebench(t, 30*time.Second, "replay", cfg, "-o", run); err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	_, stderr, err := wirebench(t, 30*time.Second, "capture", run, "--workers", "100000", "--cpus", "0")
	if err == nil || !strings.Contains(stderr, "workers 100000: at most 4 here") {
		t.Errorf("capture --workers 100000 --cpus 0: err %v, stderr:\n%s\nwant an error naming the limit of 4", err, stderr)
	}
	if _, err := os.Stat(filepath.Join(run, "raw")); err == nil {
		t.Error("raw/ exists; want no worker started")
	}
}

func TestConfigErrorsNameFileLineField(t *testing.T) {
	const head = "target: {url: \"http://127.0.0.1:8000\", model: m}\n"
	const stages = "load:\n  stages:\n    - {rate: 5, duration: 2s}\n"
	const synth = "workload:\n  synthetic:\n    input: {kind: fixed, value: 8}\n    output: {kind: fixed, value: 8}\n"
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"typo", head + "load:\n  stages:\n    - {rate: 5, duration: 2s, arival: poisson}\n" + synth,
			`c.yaml:4:31: load.stages[0].arival: unknown key "arival" (did you mean arrival?)`},
		{"no unit", head + "load:\n  stages:\n    - rate: 5\n      duration: 5\n" + synth,
			`c.yaml:5:17: load.stages[0].duration: invalid duration "5": a number needs a unit (5s, 5ms, 5m)`},
		{"dataset", head + stages + "workload:\n  dataset:\n    format: sharegpt\n    file: missing.json\n",
			"c.yaml:8: workload.dataset.file: DIR/missing.json: no such file or directory"},
		{"empirical", head + stages + "workload:\n  synthetic:\n    input: {kind: empirical, file: lengths.csv}\n    output: {kind: fixed, value: 8}\n",
			"c.yaml:7: workload.synthetic.input.file: DIR/lengths.csv: no such file or directory"},
		{"tokenizer", head + stages + synth + "tokenizer: qwen/tokenizer.json\n",
			"c.yaml:9: tokenizer: DIR/qwen/tokenizer.json: no such file or directory"},
		// Sizes past the limits: errors, not hours of planning or the machine's memory.
		{"mistyped rate", head + "load:\n  stages:\n    - {rate: 1000000000, duration: 1h}\n" + synth,
			"c.yaml:4: load.stages[0].rate: 1e+09 requests/s for 1h0m0s plans about 3.6e+12 requests; a stage plans at most 1073741824: lower the rate or shorten the duration"},
		{"mistyped length", head + stages + "workload:\n  synthetic:\n    input: {kind: fixed, value: 2000000000}\n    output: {kind: fixed, value: 8}\n",
			"c.yaml:7: workload.synthetic.input.value: 2e+09: at most 16777216"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "c.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, stderr, err := wirebench(t, 30*time.Second, "replay", path, "--dry-run")
			want := strings.ReplaceAll(tc.want, "DIR", dir)
			want = strings.Replace(want, "c.yaml", path, 1)
			if err == nil || strings.TrimSpace(stderr) != "wirebench replay <config>: "+want {
				t.Errorf("replay --dry-run: err %v, stderr:\n%s\nwant the one line %q", err, stderr, want)
			}
		})
	}
}
