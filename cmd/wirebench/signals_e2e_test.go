package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/construn"
	"github.com/wirebench/wirebench/internal/synthrun"
	"github.com/wirebench/wirebench/schemas"
)

// SIGTERM (what Kubernetes, systemd and timeout(1) send) to `capture` and to `run` is the first
// Ctrl-C: sending stops, requests in flight drain and end ok, the manifest says interrupted and
// what was not sent, the process exits 130; `run` still aggregates and reports what it has.
func TestSIGTERMIsTheFirstCtrlC(t *testing.T) {
	url := startSim(t, "--ttft", "20ms", "--itl", "5ms")
	for _, cmdName := range []string{"capture", "run"} {
		t.Run(cmdName, func(t *testing.T) {
			run := captureRun(t, url, construn.Stage{Rate: 50, Duration: 10 * time.Second, MaxTokens: 8})
			dir := run
			args := []string{"capture", run}
			if cmdName == "run" {
				dir = filepath.Join(t.TempDir(), "run")
				args = []string{"run", filepath.Join(run, "constant.yaml"), "-o", dir}
			}
			cmd, stdout, stderr := startWirebench(t, append(args, "--workers", "1", "--tap", "off", "--quiet")...)
			waitSending(t, dir, time.Second)
			stopAndExpect130(t, cmd, stderr, 30*time.Second)
			if !strings.Contains(stderr.String(), "interrupt: stopping and draining") {
				t.Errorf("%s logged no drain after SIGTERM:\n%s", cmdName, stderr.String())
			}
			m, reqs, _ := rawFiles(t, dir)
			if m.Status != schemas.StatusInterrupted || !strings.Contains(strings.Join(m.Missing, "\n"), "planned requests were not sent") {
				t.Errorf("manifest status %q missing %q; want interrupted, the unsent requests counted", m.Status, m.Missing)
			}
			if len(reqs) == 0 || len(reqs) >= 500 {
				t.Errorf("%d requests recorded; want some of the 500 planned", len(reqs))
			}
			for _, r := range reqs {
				if r.ErrorKind != "" {
					t.Errorf("seq %d: %s after the drain: %s; want every request in flight to end ok", r.Seq, r.ErrorKind, r.ErrorMessage)
				}
			}
			if cmdName == "run" {
				for _, f := range []string{"metrics/requests.parquet", "report/index.html"} {
					if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
						t.Errorf("run interrupted by SIGTERM wrote no %s: %v", f, err)
					}
				}
				if !strings.Contains(stdout.String(), "interrupted") {
					t.Errorf("run summary does not say interrupted:\n%s", stdout.String())
				}
			}
		})
	}
}

// A second SIGTERM exits at once (130) without the drain: the manifest still says running and
// what may be missing, the workers close their parts, and every file under its final name is
// whole.
func TestSecondSIGTERMExitsAtOnce(t *testing.T) {
	url := startSim(t, "--ttft", "20ms", "--itl", "50ms")
	run := captureRun(t, url, construn.Stage{Rate: 50, Duration: 10 * time.Second, MaxTokens: 100})
	cmd, errb := startCapture(t, run, "--workers", "1", "--tap", "off", "--quiet", "--part-interval", "500ms")
	kids := waitWorkers(t, cmd.Process.Pid, 1)
	cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(200 * time.Millisecond) // the drain waits for 5 s streams
	t0 := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	err := waitExit(t, cmd, 15*time.Second, errb)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || time.Since(t0) > 2*time.Second {
		t.Errorf("capture after a second SIGTERM: %v after %v; want exit status 130 at once\n%s", err, time.Since(t0), errb.String())
	}
	for deadline := time.Now().Add(10 * time.Second); syscall.Kill(kids[0], 0) == nil && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	m, err := schemas.ReadManifest(filepath.Join(run, schemas.ManifestName))
	if err != nil || m.Status != schemas.StatusRunning || len(m.Missing) == 0 {
		t.Errorf("manifest (err %v) status %q missing %q; want running, saying what may be missing", err, m.Status, m.Missing)
	}
	checkFinalFiles(t, run)
}

// TestSIGTERMStopsReplay: SIGTERM to `replay` planning millions of requests stops it at once
// (before, it was logged and ignored until the plan was written): exit 130, and the run
// directory it created is gone, no schedule or temporary file left.
func TestSIGTERMStopsReplay(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "big.yaml")
	yaml := "target: {url: http://127.0.0.1:9, api: completions, model: sim}\n" +
		"load: {stages: [{rate: 20000, duration: 600s, arrival: poisson}]}\n" +
		"workload: {synthetic: {input: {kind: fixed, value: 64}, output: {kind: fixed, value: 16}}}\n" +
		"tokenizer: whitespace\n"
	if err := os.WriteFile(config, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	cmd, _, stderr := startWirebench(t, "replay", config, "-o", run)
	time.Sleep(1500 * time.Millisecond) // 12 million requests take longer than this to plan
	stopAndExpect130(t, cmd, stderr, 5*time.Second)
	if _, err := os.Stat(run); !os.IsNotExist(err) {
		ents, _ := os.ReadDir(filepath.Join(run, "schedule"))
		t.Errorf("%s left behind (%v, schedule holds %d files); want it removed", run, err, len(ents))
	}
}

// TestSIGTERMStopsAggregate: SIGTERM to `aggregate` while it reads a large run stops it
// within a batch: exit 130, no metrics file half-replaced, no temporary file or spill left, the
// step recorded as interrupted.
func TestSIGTERMStopsAggregate(t *testing.T) {
	res, err := synthrun.Write(synthrun.Config{Dir: t.TempDir(), Hosts: 1, Workers: 2, Rate: 2000, Duration: time.Minute, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	run := res.Dirs[0]
	cmd := exec.Command(binary, "aggregate", run)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stderr.String(), "aggregate: reading parts"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("aggregate did not start reading in 30s:\n%s", stderr.String())
		}
	}
	stopAndExpect130(t, cmd, &stderr, 10*time.Second)
	ents, err := os.ReadDir(filepath.Join(run, "metrics"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("metrics/%s left by the interrupted aggregate; want nothing", e.Name())
	}
	m, err := schemas.ReadManifest(filepath.Join(run, schemas.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	if st := m.Steps[len(m.Steps)-1]; st.Name != "aggregate" || st.Status != schemas.StatusInterrupted {
		t.Errorf("last step %s %s (%s); want the aggregate step recorded as interrupted", st.Name, st.Status, st.Error)
	}
}

// stopAndExpect130 sends SIGTERM to cmd and checks that it exits with status 130 within limit.
func stopAndExpect130(t *testing.T, cmd *exec.Cmd, stderr fmt.Stringer, limit time.Duration) {
	t.Helper()
	t0 := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	err := waitExit(t, cmd, limit, stderr)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("%v after SIGTERM: %v after %v; want exit status 130\n%s", cmd.Args[1:2], err, time.Since(t0).Round(time.Millisecond), stderr.String())
	}
}
