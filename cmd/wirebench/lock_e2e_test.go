package main

// One writer per run directory: a second command that would write a run being written fails at
// once naming the first; what a killed command leaves behind is removed by the next one.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/construn"
	"github.com/wirebench/wirebench/schemas"
)

// smallConfig writes dir/name.yaml: one constant-rate stage against the simulator (the URL is
// given with --target), 8-token prompts, 4 output tokens; extra is appended as YAML.
func smallConfig(t *testing.T, dir, name string, rate float64, d time.Duration, extra string) string {
	t.Helper()
	path := filepath.Join(dir, name+".yaml")
	cfg := fmt.Sprintf(`name: %s
seed: 1
target: {api: completions, model: sim, ignore_eos: true}
load:
  stages:
    - {rate: %g, duration: %s, arrival: constant}
workload: {synthetic: {input: {kind: fixed, value: 8}, output: {kind: fixed, value: 4}}}
tokenizer: whitespace
%s`, name, rate, d, extra)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readManifest(t *testing.T, run string) *schemas.Manifest {
	t.Helper()
	m, err := schemas.ReadManifest(filepath.Join(run, schemas.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSecondWriterFailsAtOnce runs `wirebench run` into a directory and, while it captures,
// three more commands that would write it: each fails at once naming the first one's pid and
// command. The first, then interrupted, drains, aggregates and reports its own run: its run id,
// one capture.
func TestSecondWriterFailsAtOnce(t *testing.T) {
	url := startSim(t, "--ttft", "5ms", "--itl", "2ms")
	dir := t.TempDir()
	cfg := smallConfig(t, dir, "long", 5, time.Minute, "")
	run := filepath.Join(dir, "run")
	first, _, stderr := startWirebench(t, "run", cfg, "-o", run, "--target", url, "--workers", "1", "--quiet")
	pid := first.Process.Pid
	waitWorkers(t, pid, 1)
	runID := readManifest(t, run).RunID

	for _, args := range [][]string{
		{"run", cfg, "-o", run, "--force", "--target", url, "--workers", "1", "--quiet"},
		{"capture", run, "--workers", "1", "--quiet"},
		{"aggregate", run},
	} {
		_, errb, err := wirebench(t, 30*time.Second, args...)
		if err == nil || !strings.Contains(errb, "run directory in use: pid "+strconv.Itoa(pid)) || !strings.Contains(errb, "(wirebench run "+cfg) {
			t.Errorf("wirebench %s while a run writes %s: err %v, stderr:\n%s\nwant a failure naming pid %d and its command", args[0], run, err, errb, pid)
		}
	}
	first.Process.Signal(os.Interrupt)
	if err := waitExit(t, first, 15*time.Second, stderr); err == nil || first.ProcessState.ExitCode() != 130 {
		t.Fatalf("the first run after Ctrl-C: %v; want exit status 130\n%s", err, stderr)
	}
	m := readManifest(t, run)
	var steps []string
	for _, s := range m.Steps {
		steps = append(steps, s.Name)
	}
	if m.RunID != runID || m.Status != schemas.StatusInterrupted || strings.Join(steps, ",") != "replay,capture,aggregate,report" {
		t.Errorf("first run's manifest: run id %s (was %s), status %s, steps %v; want its own id, interrupted, one replay,capture,aggregate,report", m.RunID, runID, m.Status, steps)
	}
}

// TestLeftoversOfAKilledCaptureRemovedNextTime: a capture's workers write under its lock (each
// holds the coordinator's flock); the capture is then killed whole (SIGKILL, as the OOM killer
// or a lost machine would) and the next command on the run removes the disk reserve, the
// workers' temporary part files and an aggregate's scratch directory, and names them.
func TestLeftoversOfAKilledCaptureRemovedNextTime(t *testing.T) {
	url := startSim(t, "--ttft", "5ms", "--itl", "2ms")
	run := captureRun(t, url, construn.Stage{Rate: 50, Duration: 10 * time.Second, MaxTokens: 4})
	cmd, errb := startCapture(t, run, "--workers", "2", "--part-interval", "500ms", "--quiet")
	kids := waitWorkers(t, cmd.Process.Pid, 2)
	t.Cleanup(func() {
		for _, k := range kids {
			syscall.Kill(k, syscall.SIGKILL)
		}
	})
	for _, k := range kids {
		if info := lockInfo(k, filepath.Join(run, schemas.LockName)); !strings.Contains(info, "FLOCK") {
			t.Errorf("worker %d: the run's lock file %q; want it open with the coordinator's flock on it", k, info)
		}
	}
	_, stderr, err := wirebench(t, 30*time.Second, "aggregate", run)
	if err == nil || !strings.Contains(stderr, fmt.Sprintf("run directory in use: pid %d", cmd.Process.Pid)) {
		t.Errorf("aggregate during the capture: err %v, stderr:\n%s\nwant a failure naming the capture's pid", err, stderr)
	}
	// Stopped first, the workers cannot close their parts when the coordinator dies.
	for _, k := range kids {
		syscall.Kill(k, syscall.SIGSTOP)
	}
	cmd.Process.Kill()
	waitExit(t, cmd, 15*time.Second, errb)
	for _, k := range kids {
		syscall.Kill(k, syscall.SIGKILL)
		waitGone(t, k)
	}

	leftovers := []string{schemas.ReserveName}
	tmps, _ := filepath.Glob(filepath.Join(run, "raw", ".*.tmp-*"))
	if len(tmps) == 0 {
		t.Fatalf("no temporary part in %s/raw after SIGKILL: the test needs the workers' open parts", run)
	}
	for _, p := range tmps {
		leftovers = append(leftovers, filepath.Join("raw", filepath.Base(p)))
	}
	// A killed aggregate's scratch directory (an aggregate is too quick to kill in it reliably).
	spill := filepath.Join("metrics", schemas.SpillPrefix+"123")
	if err := os.MkdirAll(filepath.Join(run, spill), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, spill, "spill-1"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	leftovers = append(leftovers, spill)

	_, stderr, err = wirebench(t, 60*time.Second, "aggregate", run)
	if err != nil {
		t.Fatalf("aggregate after the kill: %v\n%s", err, stderr)
	}
	for _, f := range leftovers {
		if _, err := os.Stat(filepath.Join(run, f)); !os.IsNotExist(err) {
			t.Errorf("%s: %v; want the leftover removed", f, err)
		}
		if !strings.Contains(stderr, f) {
			t.Errorf("aggregate's log does not name the leftover %s:\n%s", f, stderr)
		}
	}
	if !strings.Contains(stderr, "removed what a killed command left in the run directory") {
		t.Errorf("aggregate logged no removal of leftovers:\n%s", stderr)
	}
}

// lockInfo returns /proc/PID/fdinfo of the descriptor process pid has open on path (its locks
// are listed there), or "" when it has none.
func lockInfo(pid int, path string) string {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		if target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); target == path {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd.Name()))
			return string(b)
		}
	}
	return ""
}

// waitGone waits (bounded) until process pid has exited: gone, or a zombie whose files are
// closed.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		s := string(b)
		if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 0 && f[0] == "Z" {
			return
		}
	}
	t.Fatalf("process %d still running 10s after SIGKILL", pid)
}
