// Command vegeta drives the same saturating simulator with vegeta (github.com/tsenart/vegeta/v12,
// as a library) and with wirebench, at the same open-loop rates, and prints one Markdown table:
// per rate and client the send rate, completed requests, errors and E2E p50/p99.
//
// It is its own module so that vegeta and its dependencies stay out of wirebench's go.mod, and
// it does not import wirebench: it runs the wirebench binary (`wirebench sim`, `wirebench run`)
// as subprocesses. Every run gets a fresh simulator, so one client's backlog never reaches the
// next. `make bench-vegeta` builds bin/wirebench and runs this with the defaults.
//
//	go run . -wirebench ../../bin/wirebench -rates 1000,2000,5000 -duration 6s -tokens 4
//
// What the columns mean for each client:
//
//   - issued/s: requests begun per second, before any wait for a connection: vegeta's
//     Metrics.Rate (a worker took the pacer's tick and stamped the request's timestamp),
//     wirebench's issued_rate (send_start_ns). On the wire/s: wirebench's achieved_rate (the
//     write that took the request's last byte); vegeta does not record it.
//   - completed: vegeta: status 200, the body read to its end without error and ending with the
//     stream's `data: [DONE]`; wirebench: ok requests (status 200, stream ended).
//   - E2E: vegeta: from the issue (before dialling or waiting for a connection) to the body's
//     last byte, over every result, failures included (vegeta's Latencies); wirebench: from the
//     send S (after any connection wait) to the final event, over ok requests. "from planned"
//     is the end minus the planned send time (the pacer's i-th tick for vegeta, P for
//     wirebench), over completed requests: it includes every wait the schedule did not plan.
//   - note: requests issued or sent against planned (vegeta stops issuing at -duration, so
//     ticks its pacer could not hand to a worker, at most 10,000 of them busy, are never sent);
//     completions per second from the first send to the last end; wirebench's load verdict and
//     trust level; error kinds; the kernel's TCP counters over the run (system-wide: connections
//     accepted, SYNs retransmitted, listen-queue overflows); and the simulator's own count of
//     completed requests (vllm:request_success_total).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// prompt is 16 whitespace tokens (the simulator and wirebench's whitespace tokenizer count a
// token as a maximal run of non-space characters), the length wirebench's config asks for.
const prompt = "My design in this book is not to explain the properties of light by hypotheses but"

type options struct {
	wirebench string
	rates     []int
	duration  time.Duration
	tokens    int
	simArgs   []string
	keep      bool
	grace     time.Duration
}

// row is one line of the table.
type row struct {
	rate        int
	client      string
	sentRate    float64 // requests on the wire per second (wirebench's achieved_rate); 0 = unknown
	issuedRate  float64 // requests begun per second (vegeta's Metrics.Rate, wirebench's issued_rate)
	issued      int64   // requests issued (vegeta) or sent (wirebench)
	planned     int64
	completed   int64
	errors      int64
	p50, p99    time.Duration
	p99Planned  time.Duration // E2E from the planned send time, p99
	serverOK    int64         // the simulator's vllm:request_success_total; -1 when unknown
	exact       string        // vegeta: nearest-rank p50/p99 of the same latencies, beside Metrics' t-digest
	note        string
	failed      error
	elapsedWall time.Duration
}

func main() {
	var o options
	var rates, simArgs string
	flag.StringVar(&o.wirebench, "wirebench", "../../bin/wirebench", "path of the wirebench binary")
	flag.StringVar(&rates, "rates", "1000,2000,5000", "comma-separated request rates (req/s)")
	flag.DurationVar(&o.duration, "duration", 6*time.Second, "length of each constant-rate run")
	flag.IntVar(&o.tokens, "tokens", 4, "output tokens per request (max_tokens, ignore_eos)")
	flag.StringVar(&simArgs, "sim-args", "--mode fixed --ttft 0 --itl 0 --cpu-per-request 400us",
		"arguments of `wirebench sim` after --listen 127.0.0.1:0")
	flag.BoolVar(&o.keep, "keep", false, "keep the wirebench run directories (their paths are printed)")
	flag.DurationVar(&o.grace, "grace", 90*time.Second, "time allowed per run beyond -duration before it is stopped")
	flag.Parse()
	for _, f := range strings.Split(rates, ",") {
		r, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || r <= 0 {
			fatalf("-rates: %q is not a positive integer", f)
		}
		o.rates = append(o.rates, r)
	}
	o.simArgs = strings.Fields(simArgs)
	if n := len(strings.Fields(prompt)); n != 16 {
		fatalf("the prompt has %d tokens, not 16", n)
	}
	wb, err := filepath.Abs(o.wirebench)
	if err != nil {
		fatalf("-wirebench: %v", err)
	}
	if _, err := os.Stat(wb); err != nil {
		fatalf("-wirebench: %v (make build first)", err)
	}
	o.wirebench = wb

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	host, _ := os.Hostname()
	start := time.Now()
	loadBefore := loadavg()
	var rows []row
	for _, rate := range o.rates {
		for _, client := range []string{"vegeta", "wirebench"} {
			if ctx.Err() != nil {
				break
			}
			fmt.Fprintf(os.Stderr, "%s  %d req/s  %s ...\n", time.Now().Format("15:04:05"), rate, client)
			r := runOne(ctx, o, rate, client)
			if r.failed != nil {
				fmt.Fprintf(os.Stderr, "  failed: %v\n", r.failed)
			} else {
				fmt.Fprintf(os.Stderr, "  %.0f/s issued, %.0f/s on the wire, %d completed, %d errors, E2E p50 %s, p99 %s %s(%.0f s)\n",
					r.issuedRate, r.sentRate, r.completed, r.errors, fmtDur(r.p50), fmtDur(r.p99), paren(r.exact), r.elapsedWall.Seconds())
			}
			rows = append(rows, r)
		}
	}
	loadAfter := loadavg()

	fmt.Printf("Machine: %s, %d CPUs (%s), %s/%s, %s; load average before %s, after %s.\n",
		host, runtime.NumCPU(), cpuModel(), runtime.GOOS, runtime.GOARCH, runtime.Version(), loadBefore, loadAfter)
	fmt.Printf("Date: %s (%s wall).\n", start.UTC().Format("2006-01-02 15:04 MST"), time.Since(start).Round(time.Second))
	fmt.Printf("Simulator: `wirebench sim %s`, fresh per run; %s per run, %d output tokens, 16-token prompts.\n\n",
		strings.Join(o.simArgs, " "), o.duration, o.tokens)
	fmt.Println("| rate/s | client | issued/s | on the wire/s | completed | errors | E2E p50 | E2E p99 | E2E p99 from planned | note |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		if r.failed != nil {
			fmt.Printf("| %s | %s | – | – | – | – | – | – | – | run failed: %s |\n", fmtInt(int64(r.rate)), r.client, mdEscape(r.failed.Error()))
			continue
		}
		wire := "–" // vegeta does not say when a request went on the wire
		if r.sentRate > 0 {
			wire = fmtInt(int64(r.sentRate + 0.5))
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", fmtInt(int64(r.rate)), r.client,
			fmtInt(int64(r.issuedRate+0.5)), wire, fmtInt(r.completed), fmtInt(r.errors),
			fmtDur(r.p50), fmtDur(r.p99), fmtDur(r.p99Planned), mdEscape(r.note))
	}
	if ctx.Err() != nil {
		os.Exit(130)
	}
}

// runOne starts a fresh simulator, runs one client against it at the rate and stops it. The
// whole run is bounded by duration + grace.
func runOne(parent context.Context, o options, rate int, client string) (r row) {
	r = row{rate: rate, client: client, serverOK: -1}
	began := time.Now()
	defer func() { r.elapsedWall = time.Since(began) }()
	ctx, cancel := context.WithTimeout(parent, o.duration+o.grace)
	defer cancel()
	sim, err := startSim(ctx, o.wirebench, o.simArgs)
	if err != nil {
		r.failed = err
		return r
	}
	defer sim.stop()
	before := tcpCounters()
	switch client {
	case "vegeta":
		err = runVegeta(ctx, o, rate, sim.url, &r)
	default:
		err = runWirebench(ctx, o, rate, sim.url, &r)
	}
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("stopped after %s: %w", time.Since(began).Round(time.Second), context.Cause(ctx))
	}
	r.failed = err
	if after := tcpCounters(); before != nil && after != nil {
		r.note += fmt.Sprintf("; TCP (system-wide): %s connections accepted, %s SYNs retransmitted, %s listen overflows",
			fmtInt(after["PassiveOpens"]-before["PassiveOpens"]), fmtInt(after["TCPSynRetrans"]-before["TCPSynRetrans"]),
			fmtInt(after["ListenOverflows"]-before["ListenOverflows"]))
	}
	if n, err := sim.successTotal(); err == nil {
		r.serverOK = n
		r.note = strings.TrimPrefix(r.note+fmt.Sprintf("; the simulator completed %s", fmtInt(n)), "; ")
	}
	return r
}

// ---- the simulator ----

type simProc struct {
	cmd    *exec.Cmd
	url    string
	stderr *bytes.Buffer
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
	s := &simProc{cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan struct{})}
	cmd.Stderr = &lockedWriter{w: s.stderr}
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

// successTotal reads the simulator's own count of completed requests from /metrics.
func (s *simProc) successTotal() (int64, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(s.url + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "vllm:request_success_total") {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			return int64(v), err
		}
	}
	return 0, errors.New("no vllm:request_success_total")
}

// ---- vegeta ----

func runVegeta(ctx context.Context, o options, rate int, base string, r *row) error {
	body, err := json.Marshal(map[string]any{
		"model": "sim", "prompt": prompt, "max_tokens": o.tokens, "ignore_eos": true,
		"stream": true, "stream_options": map[string]any{"include_usage": true},
	})
	if err != nil {
		return err
	}
	hdr := http.Header{}
	hdr.Set("Content-Type", "application/json")
	target := vegeta.Target{Method: "POST", URL: base + "/v1/completions", Body: body, Header: hdr}
	atk := vegeta.NewAttacker(
		vegeta.KeepAlive(true),
		vegeta.MaxWorkers(10000),
		vegeta.Timeout(30*time.Second),
	)
	pacer := vegeta.ConstantPacer{Freq: rate, Per: time.Second}
	r.planned = int64(float64(rate) * o.duration.Seconds())

	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-ctx.Done():
			atk.Stop() // stops issuing; requests in flight end by their 30 s timeout
		case <-stopped:
		}
	}()

	var m vegeta.Metrics
	type done struct {
		seq uint64
		end time.Time
	}
	var ok []done
	kinds := map[string]int64{}
	interval := time.Second / time.Duration(rate)
	var lat []time.Duration
	var began time.Time // estimate of the attack's start (not exported by vegeta), see below
	for res := range atk.Attack(vegeta.NewStaticTargeter(target), pacer, o.duration, "side-by-side") {
		m.Add(res)
		lat = append(lat, res.Latency)
		// The constant pacer plans hit i (its sequence number) at start + (i+1)/rate and never
		// fires early, so start <= Timestamp - (i+1)/rate for every hit: the least late hit gives
		// the start to within its own (microseconds) lateness.
		if b := res.Timestamp.Add(-time.Duration(res.Seq+1) * interval); began.IsZero() || b.Before(began) {
			began = b
		}
		if res.Code == 200 && res.Error == "" && bytes.HasSuffix(res.Body, []byte("data: [DONE]\n\n")) {
			ok = append(ok, done{res.Seq, res.End()})
			continue
		}
		kinds[errorKind(res)]++
	}
	m.Close()

	r.issued = int64(m.Requests)
	r.issuedRate = m.Rate
	r.completed = int64(len(ok))
	r.errors = int64(m.Requests) - r.completed
	r.p50, r.p99 = m.Latencies.P50, m.Latencies.P99
	r.exact = fmt.Sprintf("nearest rank: p50 %s, p99 %s", fmtDur(quantile(lat, 0.5)), fmtDur(quantile(lat, 0.99)))
	fromPlanned := make([]time.Duration, 0, len(ok))
	for _, d := range ok {
		fromPlanned = append(fromPlanned, d.end.Sub(began.Add(time.Duration(d.seq+1)*interval)))
	}
	r.p99Planned = quantile(fromPlanned, 0.99)

	var notes []string
	notes = append(notes, fmt.Sprintf("issued %s of %s planned", fmtInt(r.issued), fmtInt(r.planned)))
	notes = append(notes, fmt.Sprintf("%.0f completed/s from the first send to the last end", m.Throughput))
	if len(kinds) > 0 {
		var parts []string
		for _, k := range sortedKeys(kinds) {
			parts = append(parts, fmt.Sprintf("%s ×%s", k, fmtInt(kinds[k])))
		}
		notes = append(notes, "errors: "+strings.Join(parts, ", "))
	}
	r.note = strings.Join(notes, "; ")
	return nil
}

// errorKind shortens a vegeta result's error to its kind: the last part of the Go error chain
// (`Post "http://...": dial tcp ...: connect: connection refused` → `connection refused`).
func errorKind(res *vegeta.Result) string {
	e := res.Error
	switch {
	case e == "" && res.Code == 200:
		return "incomplete stream"
	case e == "":
		return "HTTP " + strconv.Itoa(int(res.Code))
	}
	if i := strings.LastIndex(e, ": "); i >= 0 {
		e = e[i+2:]
	}
	return e
}

// ---- wirebench ----

// profile is the part of RUN/report/profile.json read here (report/profile.go).
type profile struct {
	Runs []struct {
		Trust struct {
			Level    string `json:"level"`
			Sentence string `json:"sentence"`
		} `json:"trust"`
		Stages []struct {
			DurationNs   int64            `json:"duration_ns"` // first planned send to last completion
			Requests     int64            `json:"requests"`
			Completed    int64            `json:"completed"`
			Errors       int64            `json:"errors"`
			ErrorsByKind map[string]int64 `json:"errors_by_kind"`
			AchievedRate float64          `json:"achieved_rate"`
			IssuedRate   float64          `json:"issued_rate"`
			Latency      map[string]struct {
				Count int64 `json:"count"`
				P50   int64 `json:"p50"`
				P99   int64 `json:"p99"`
			} `json:"latency"`
			Quality struct {
				Trust         string  `json:"trust"`
				PlannedRate   float64 `json:"planned_rate"`
				RateFidelity  float64 `json:"rate_fidelity"`
				LoadDelivered bool    `json:"load_delivered"`
				LoadReason    string  `json:"load_reason"`
			} `json:"quality"`
		} `json:"stages"`
	} `json:"runs"`
}

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

func runWirebench(ctx context.Context, o options, rate int, base string, r *row) error {
	dir, err := os.MkdirTemp("", fmt.Sprintf("wirebench-vegeta-%d-", rate))
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintf(os.Stderr, "  run directory: %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, configTemplate, rate, base, o.duration, o.tokens), 0o644); err != nil {
		return err
	}
	runDir := filepath.Join(dir, "run")
	var out lockedWriter
	out.w = &bytes.Buffer{}
	cmd := exec.Command(o.wirebench, "run", cfg, "-o", runDir, "--quiet")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("wirebench run: %w", err)
	}
	pid := cmd.Process.Pid
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-ctx.Done():
		// First Ctrl-C: stop sending and drain; then the whole group (workers included).
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
		return fmt.Errorf("wirebench run: %v: %s", err, lastLines(out.String(), 5))
	}

	raw, err := os.ReadFile(filepath.Join(runDir, "report", "profile.json"))
	if err != nil {
		return err
	}
	var p profile
	if err := json.Unmarshal(raw, &p); err != nil {
		return fmt.Errorf("profile.json: %w", err)
	}
	if len(p.Runs) != 1 || len(p.Runs[0].Stages) != 1 {
		return fmt.Errorf("profile.json: want one run with one stage")
	}
	s := p.Runs[0].Stages[0]
	r.planned = int64(float64(rate) * o.duration.Seconds())
	r.issued = s.Requests
	r.sentRate, r.issuedRate = s.AchievedRate, s.IssuedRate
	r.completed = s.Completed
	r.errors = s.Errors
	r.p50 = time.Duration(s.Latency["e2e_ns"].P50)
	r.p99 = time.Duration(s.Latency["e2e_ns"].P99)
	r.p99Planned = time.Duration(s.Latency["e2e_from_planned_ns"].P99)

	notes := []string{fmt.Sprintf("sent %s of %s planned", fmtInt(r.issued), fmtInt(r.planned))}
	if s.DurationNs > 0 {
		notes = append(notes, fmt.Sprintf("%.0f completed/s from the first send to the last end", float64(s.Completed)/(float64(s.DurationNs)/1e9)))
	}
	if s.Quality.LoadDelivered {
		notes = append(notes, "load sent as planned")
	} else {
		notes = append(notes, "load not delivered: "+s.Quality.LoadReason)
	}
	notes = append(notes, "trust "+p.Runs[0].Trust.Level)
	if len(s.ErrorsByKind) > 0 {
		var parts []string
		for _, k := range sortedKeys(s.ErrorsByKind) {
			parts = append(parts, fmt.Sprintf("%s ×%s", k, fmtInt(s.ErrorsByKind[k])))
		}
		notes = append(notes, "errors: "+strings.Join(parts, ", "))
	}
	r.note = strings.Join(notes, "; ")
	return nil
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

// quantile is the nearest-rank q-quantile (rank ceil(q·n)), as wirebench computes its own.
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := int(float64(len(d))*q+0.999999999) - 1
	return d[max(0, min(i, len(d)-1))]
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return int(m[b] - m[a])
		}
		return strings.Compare(a, b)
	})
	return keys
}

// tcpCounters reads the kernel's TCP counters (/proc/net/snmp Tcp:, /proc/net/netstat TcpExt:):
// system-wide, so they count this run's connections only when nothing else opens many.
func tcpCounters() map[string]int64 {
	c := map[string]int64{}
	for _, file := range []string{"/proc/net/snmp", "/proc/net/netstat"} {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil
		}
		lines := strings.Split(string(b), "\n")
		for i := 0; i+1 < len(lines); i += 2 {
			names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
			if len(names) != len(values) || len(names) == 0 || names[0] != values[0] {
				continue
			}
			for j := 1; j < len(names); j++ {
				if v, err := strconv.ParseInt(values[j], 10, 64); err == nil {
					c[names[j]] = v
				}
			}
		}
	}
	return c
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown model"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown model"
}

func fmtDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "–"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/1e3)
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
}

// fmtInt writes n with thousands separators (1,000).
func fmtInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ") "
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}

func fatalf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "vegeta: "+format+"\n", a...)
	os.Exit(2)
}
