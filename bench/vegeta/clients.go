package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// ---- the simulator ----

type simProc struct {
	cmd    *exec.Cmd
	url    string
	stderr *lockedWriter
	done   chan struct{}
}

// startSim runs `wirebench sim --listen 127.0.0.1:0 ARGS` in its own process group and reads
// its base URL, the first line on stdout.
func startSim(ctx context.Context, wb string, args []string) (*simProc, error) {
	cmd := exec.Command(wb, append([]string{"sim", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s := &simProc{cmd: cmd, stderr: &lockedWriter{w: &bytes.Buffer{}}, done: make(chan struct{})}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	go func() { _ = cmd.Wait(); close(s.done) }()
	first := make(chan string, 1)
	go func() {
		br := bufio.NewReader(stdout)
		line, _ := br.ReadString('\n')
		first <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, br)
	}()
	select {
	case s.url = <-first:
	case <-time.After(10 * time.Second):
	case <-ctx.Done():
	}
	if !strings.HasPrefix(s.url, "http://") {
		s.stop()
		return nil, fmt.Errorf("sim printed no base URL (%q); stderr: %s", s.url, lastLines(s.stderr.String(), 5))
	}
	return s, nil
}

// cpuNs is the simulator's CPU so far: the sum of its threads' on-CPU time (the first field of
// /proc/PID/task/TID/schedstat, in ns; the Go runtime's threads do not exit). 0 where the
// kernel has no schedstat.
func (s *simProc) cpuNs() int64 {
	dir := fmt.Sprintf("/proc/%d/task", s.cmd.Process.Pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, t.Name(), "schedstat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) > 0 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			sum += n
		}
	}
	return sum
}

// stop sends SIGINT (the simulator drains for its --shutdown-grace, 3 s by default), waits, and
// kills the process group when it is not gone after 15 s.
func (s *simProc) stop() {
	pid := s.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		<-s.done
	}
}

// ---- vegeta ----

// runVegeta attacks base at the case's rate for the duration, with vegeta's defaults (keep-alive,
// its connection pool) and a 30 s timeout; scrapeBefore runs just before the attack. Its CPU is
// this process's over the attack and the reading of its results.
func runVegeta(ctx context.Context, o options, k caseKey, base string, scrapeBefore func() error, r *result) error {
	body, err := json.Marshal(map[string]any{
		"model": "sim", "prompt": prompt, "max_tokens": k.tokens, "ignore_eos": true,
		"stream": true, "stream_options": map[string]any{"include_usage": true},
	})
	if err != nil {
		return err
	}
	hdr := http.Header{}
	hdr.Set("Content-Type", "application/json")
	target := vegeta.Target{Method: "POST", URL: base + "/v1/completions", Body: body, Header: hdr}
	atk := vegeta.NewAttacker(vegeta.Timeout(30 * time.Second))
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-ctx.Done():
			atk.Stop() // stops issuing; requests in flight end by their 30 s timeout
		case <-stopped:
		}
	}()
	if err := scrapeBefore(); err != nil {
		return err
	}
	cpu0 := selfCPU()
	kinds := map[string]int64{}
	for res := range atk.Attack(vegeta.NewStaticTargeter(target), vegeta.ConstantPacer{Freq: k.rate, Per: time.Second}, o.duration, "side-by-side") {
		r.sent = append(r.sent, res.Timestamp.UnixNano())
		if res.Code != 200 || res.Error != "" || !bytes.HasSuffix(res.Body, []byte("data: [DONE]\n\n")) {
			kinds[errorKind(res)]++
		}
	}
	r.cpuNs = selfCPU() - cpu0
	slices.Sort(r.sent)
	r.note = kindsNote(kinds)
	return nil
}

// selfCPU is this process's user + system CPU so far.
func selfCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// errorKind shortens a vegeta result's error to its kind: the last part of the Go error chain
// (`Post "http://...": dial tcp ...: connect: connection refused` → `connection refused`).
func errorKind(res *vegeta.Result) string {
	e := res.Error
	switch {
	case e == "" && res.Code == 200:
		return "incomplete stream"
	case e == "":
		return fmt.Sprintf("HTTP %d", res.Code)
	}
	if i := strings.LastIndex(e, ": "); i >= 0 {
		e = e[i+2:]
	}
	return e
}

func kindsNote(kinds map[string]int64) string {
	if len(kinds) == 0 {
		return ""
	}
	var parts []string
	for k, n := range kinds {
		parts = append(parts, fmt.Sprintf("%s ×%s", k, fmtInt(n)))
	}
	return "errors: " + strings.Join(parts, ", ")
}

// ---- wirebench ----

const configTemplate = `# bench/vegeta: one constant-rate stage against a fresh wirebench sim.
name: vegeta-side-by-side-%[1]d
seed: 1
target:
  url: %[2]s
  api: completions
  model: sim
  ignore_eos: true
  timeout: 30s
load:
  stages:
    - {rate: %[1]d, duration: %[3]s, arrival: constant}
workload:
  synthetic:
    input: {kind: fixed, value: 16}
    output: {kind: fixed, value: %[4]d}
tokenizer: whitespace
`

// traceTemplate replays the send times of a vegeta run (trace.csv, written by writeTrace).
const traceTemplate = `# bench/vegeta: the send times of vegeta's run against a fresh wirebench sim.
name: vegeta-side-by-side-%[1]d-at-vegeta-times
seed: 1
target:
  url: %[2]s
  api: completions
  model: sim
  ignore_eos: true
  timeout: 30s
workload:
  trace: {format: azure, file: trace.csv}
tokenizer: whitespace
`

// writeTrace writes sent (Unix ns, sorted) as an Azure trace of 16-token prompts and the case's
// output tokens, from 2026-01-01 00:00:00 (only the offsets matter).
func writeTrace(path string, sent []int64, tokens int) error {
	var b bytes.Buffer
	b.WriteString("TIMESTAMP,ContextTokens,GeneratedTokens\n")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, ns := range sent {
		fmt.Fprintf(&b, "%s,16,%d\n", t0.Add(time.Duration(ns-sent[0])).Format("2006-01-02 15:04:05.000000000"), tokens)
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// runWirebench plans the case with `wirebench replay`, runs `wirebench capture` with its
// defaults (scrapeBefore runs just before it) and aggregates; its CPU is what the capture
// recorded of its coordinator and workers (clientCPU). With sent (a vegeta run's send times),
// it sends at those times instead of the constant rate.
func runWirebench(ctx context.Context, o options, k caseKey, base string, scrapeBefore func() error, r *result, sent []int64) error {
	dir, err := os.MkdirTemp("", fmt.Sprintf("wirebench-vegeta-%d-", k.rate))
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintf(os.Stderr, "  run directory: %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	cfg := filepath.Join(dir, "config.yaml")
	text := fmt.Appendf(nil, configTemplate, k.rate, base, o.duration, k.tokens)
	if sent != nil {
		if len(sent) == 0 {
			return fmt.Errorf("vegeta's run sent nothing to replay")
		}
		if err := writeTrace(filepath.Join(dir, "trace.csv"), sent, k.tokens); err != nil {
			return err
		}
		text = fmt.Appendf(nil, traceTemplate, k.rate, base)
	}
	if err := os.WriteFile(cfg, text, 0o644); err != nil {
		return err
	}
	run := filepath.Join(dir, "run")
	if _, err := wirebench(ctx, o.wirebench, "replay", cfg, "-o", run); err != nil {
		return err
	}
	if err := scrapeBefore(); err != nil {
		return err
	}
	if _, err := wirebench(ctx, o.wirebench, append([]string{"capture", run, "--quiet"}, o.wbArgs...)...); err != nil {
		return err
	}
	if r.cpuNs, err = clientCPU(run); err != nil {
		return err
	}
	out, err := wirebench(ctx, o.wirebench, "aggregate", run)
	if err != nil {
		return err
	}
	if level, _, ok := strings.Cut(strings.TrimPrefix(out, "trust "), ":"); ok && strings.HasPrefix(out, "trust ") {
		r.trust = level
	}
	for _, mark := range []string{"LOAD NOT DELIVERED", "CLIENT-BOUND", "SERVER DISTURBED", "CONNECTION SPIRAL"} {
		if strings.Contains(out, mark) {
			r.note = strings.TrimPrefix(r.note+", "+strings.ToLower(mark), ", ")
		}
	}
	return nil
}

// clientCPU reads the capture's CPU from its manifest: coordinator and workers over the stage,
// from its start to the end of the capture (the drain included; start-up and warm-up not, as
// for vegeta, whose attack is timed).
func clientCPU(run string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(run, "manifest.json"))
	if err != nil {
		return 0, err
	}
	var m struct {
		StageUsage []struct {
			ClientCPUNs int64 `json:"client_cpu_ns"`
		} `json:"stage_usage"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return 0, fmt.Errorf("%s/manifest.json: %w", run, err)
	}
	if len(m.StageUsage) != 1 || m.StageUsage[0].ClientCPUNs <= 0 {
		return 0, fmt.Errorf("%s/manifest.json: no stage_usage client_cpu_ns for its one stage (a wirebench older than it?)", run)
	}
	return m.StageUsage[0].ClientCPUNs, nil
}

// wirebench runs the binary in its own process group (a Ctrl-C reaches the bench, which stops it
// with SIGINT: drain, then the group) and returns its stdout.
func wirebench(ctx context.Context, bin string, args ...string) (string, error) {
	var out lockedWriter
	out.w = &bytes.Buffer{}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var errb lockedWriter
	errb.w = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("wirebench %s: %w", args[0], err)
	}
	pid := cmd.Process.Pid
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-ctx.Done():
		_ = syscall.Kill(pid, syscall.SIGINT)
		select {
		case err = <-waited:
		case <-time.After(40 * time.Second):
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			err = <-waited
		}
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL) // stragglers of the group, if any (ESRCH otherwise)
	if err != nil {
		return out.String(), fmt.Errorf("wirebench %s: %v: %s", args[0], err, lastLines(errb.String(), 5))
	}
	return out.String(), nil
}

// ---- helpers ----

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}
