package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/construn"
	"github.com/wirebench/wirebench/internal/cpuset"
	"github.com/wirebench/wirebench/schemas"
)

// footprintRun captures the run with args, aggregates and reports it, and returns the manifest,
// the stages, aggregate's stdout and the report's summary.md, profile.json and index.html by name.
func footprintRun(t *testing.T, run string, args ...string) (*schemas.Manifest, []schemas.Stage, string, map[string]string) {
	t.Helper()
	if _, stderr, err := wirebench(t, 2*time.Minute, append([]string{"capture", run, "--quiet"}, args...)...); err != nil {
		t.Fatalf("capture: %v\n%s", err, stderr)
	}
	out, stderr, err := wirebench(t, time.Minute, "aggregate", run)
	if err != nil {
		t.Fatalf("aggregate: %v\n%s", err, stderr)
	}
	if _, stderr, err := wirebench(t, time.Minute, "report", run, "--quiet"); err != nil {
		t.Fatalf("report: %v\n%s", err, stderr)
	}
	m, err := schemas.ReadManifest(filepath.Join(run, schemas.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	st, err := schemas.ReadFile[schemas.Stage](filepath.Join(run, "metrics", "stages.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	rep := map[string]string{}
	for _, f := range []string{"summary.md", "profile.json", "index.html"} {
		b, err := os.ReadFile(filepath.Join(run, "report", f))
		if err != nil {
			t.Fatal(err)
		}
		rep[f] = string(b)
	}
	return m, st, out, rep
}

// TestServerDisturbedVerdict: the simulator on this machine burns 200 µs of CPU per request and
// a deliberately heavy client (two unpinned workers, 4,000 req/s × 64 tokens) saturates the
// machine: the stage is "server disturbed", with the figures, in stages.parquet, the terminal,
// summary.md, profile.json and index.html. At a light load with capture's co-located defaults
// (half the CPUs: one worker on two) it is not. Judged by the recorded figures (the machine's
// busy share and the client's CPUs), so a machine loaded by other work does not change the
// outcome: it only adds to the busy share, never to the client's.
func TestServerDisturbedVerdict(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	url := startSim(t, "--mode", "fixed", "--ttft", "0", "--itl", "0", "--cpu-per-request", "200us")

	heavy := t.TempDir()
	target := schemas.Target{URL: url, API: "completions", Model: "sim"}
	if err := construn.Write(heavy, target, []construn.Stage{
		{Rate: 4000, Duration: 3 * time.Second, InputTokens: 64, MaxTokens: 64},
		{Rate: 10, Duration: time.Second, InputTokens: 64, MaxTokens: 64}, // the drain falls here, not in stage 0
	}); err != nil {
		t.Fatal(err)
	}
	m, st, out, rep := footprintRun(t, heavy, "--workers", "2", "--no-pin")
	if m.Colocation == nil || !m.Colocation.TargetLocal || !strings.Contains(m.Colocation.Rule, "loopback") {
		t.Fatalf("manifest colocation %+v; want the loopback target co-located", m.Colocation)
	}
	if srv := m.Colocation.Server; srv == nil || srv.CPUCount < 1 {
		t.Errorf("manifest colocation.server %+v; want the simulator's process and CPUs", srv)
	}
	s := st[0]
	t.Logf("heavy: client %.2f of %d CPUs, machine %.0f%% busy; %s", s.ClientCPUs, s.MachineCPUs, 100*s.MachineBusy, s.ServerDisturbedReason)
	if !s.TargetLocal || s.MachineCPUs < 1 || s.MachineBusy < schemas.MachineSaturated || s.ClientCPUs <= schemas.DisturbShare*float64(s.MachineCPUs) {
		t.Fatalf("heavy stage: target_local %v, client %.2f of %d CPUs, machine %.2f busy; want a co-located, saturated machine with the client over %.0f%% of it",
			s.TargetLocal, s.ClientCPUs, s.MachineCPUs, s.MachineBusy, 100*schemas.DisturbShare)
	}
	if !s.ServerDisturbed || !strings.Contains(s.ServerDisturbedReason, "CPUs while the machine was") {
		t.Errorf("heavy stage: server_disturbed %v (%q); want it, with the figures", s.ServerDisturbed, s.ServerDisturbedReason)
	}
	if !strings.Contains(out, "SERVER DISTURBED (wirebench used") || strings.Contains(out, "trust green") {
		t.Errorf("aggregate output lacks the verdict:\n%s", out)
	}
	for file, want := range map[string]string{"summary.md": "server disturbed in stage " + s.Name, "index.html": "server disturbed in stage " + s.Name,
		"profile.json": `"server_disturbed": true`} {
		if !strings.Contains(rep[file], want) {
			t.Errorf("report %s lacks %q", file, want)
		}
	}

	light := t.TempDir()
	if err := construn.Write(light, target, []construn.Stage{{Rate: 20, Duration: 2 * time.Second, InputTokens: 16, MaxTokens: 4}}); err != nil {
		t.Fatal(err)
	}
	m, st, out, rep = footprintRun(t, light)
	s = st[0]
	t.Logf("light: client %.2f of %d CPUs, machine %.0f%% busy", s.ClientCPUs, s.MachineCPUs, 100*s.MachineBusy)
	if s.ServerDisturbed || !s.TargetLocal || s.MachineCPUs < 1 || s.ClientCPUs > schemas.DisturbShare*float64(s.MachineCPUs) {
		t.Errorf("light stage: server_disturbed %v, target_local %v, client %.2f of %d CPUs; want a co-located stage, undisturbed, the client under %.0f%% of the CPUs",
			s.ServerDisturbed, s.TargetLocal, s.ClientCPUs, s.MachineCPUs, 100*schemas.DisturbShare)
	}
	if strings.Contains(out, "SERVER DISTURBED") || strings.Contains(rep["profile.json"], `"server_disturbed": true`) {
		t.Errorf("light run reports a disturbed server:\n%s", out)
	}
	// The co-located defaults: workers on half the usable CPUs (at least one).
	_, usable, err := cpuset.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	want := max(1, usable/2)
	if len(m.Workers) != want || len(m.Colocation.Defaults) == 0 || !strings.Contains(m.Colocation.Defaults[0], "worker(s) of") {
		b, _ := json.Marshal(m.Colocation)
		t.Errorf("co-located capture ran %d workers (colocation %s); want %d of %d usable CPUs by default", len(m.Workers), b, want, usable)
	}
}
