// Command vegeta drives the simulator with vegeta (github.com/tsenart/vegeta/v12, as a library)
// and with wirebench, at the same open-loop rates, and judges the two clients by the server: the
// simulator's own /metrics, scraped before and after each run, give the latencies it served
// (wirebench_sim:served_ttft_seconds and served_e2e_seconds: from reading a request to writing
// its first token and its last event, every delay inside the server included), the requests it
// completed and the connections it accepted. A client that takes the server's CPUs on a shared
// machine, or makes it accept a storm of connections, shows there as a slower server.
//
// It is its own module so that vegeta and its dependencies stay out of wirebench's go.mod, and
// it does not import wirebench: it runs the wirebench binary (`wirebench sim`, `replay`,
// `capture`, `aggregate`) as subprocesses. Every run gets a fresh simulator, so one client's
// backlog never reaches the next. `make bench-vegeta` builds bin/wirebench and runs this with
// the defaults: the simulator with no CPU cost and with 100 µs of CPU per request, at 1,000,
// 2,000 and 5,000 req/s, 4 and 64 output tokens, both clients with their defaults.
//
//	go run . -wirebench ../../bin/wirebench -rates 1000,2000,5000 -tokens 4,64 -duration 6s
//
// Per case and client:
//
//   - server TTFT and E2E p50/p99: quantiles of the simulator's served histograms over the run
//     (linear within a bucket; the buckets are 12% apart), and wirebench's over vegeta's;
//   - served: the simulator's completed requests (vllm:request_success_total);
//   - client CPU per request: user + system CPU of all the client's processes from the first
//     send to the end, per request the simulator completed. vegeta runs in this process (its
//     attack and the reading of its results: getrusage of this process over the attack);
//     wirebench is `wirebench capture`, its coordinator and worker processes from the stage's
//     start to the end of the capture (its manifest's stage_usage client_cpu_ns); start-up,
//     planning and aggregating are not counted for either;
//
// Each case runs -repeat times per client (3 by default), the clients alternating, each run
// against a fresh simulator; the table shows each figure's median over the runs, since single
// runs on a shared machine vary by more than the 1.2× the comparison judges.
//
// At the same rate the two clients do not offer the server the same load: vegeta's constant
// pacer sleeps on Go timers, which fire when the netpoller wakes, so its sends come in clumps,
// and a server sleeps (and pays a wake-up) less often under clumps. With -at-vegeta-times (on
// by default) a third client runs after each vegeta run: wirebench replaying that run's send
// times (its results' timestamps, as an Azure trace). A second table compares it with vegeta:
// the same load, sent by the two clients.
//
//   - server CPU per request: the simulator's own CPU (the sum of its threads' on-CPU time,
//     /proc/PID/task/*/schedstat) over the same window as its metrics, per request it completed;
//   - connections: accepted by the simulator during the run (wirebench's warm-up included);
//   - TCP segments per request: the host's TCP segments sent over the same window (/proc/net/snmp
//     OutSegs: on loopback both ends', so the server's data and the client's ACKs), per request
//     served. A client that reads each event as it comes acknowledges each one.
//
// packets.sh, beside this file, takes one case apart: the loopback packets by direction and the
// simulator's sleeps and preemptions under the same three clients.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// prompt is 16 whitespace tokens (the simulator and wirebench's whitespace tokenizer count a
// token as a maximal run of non-space characters), the length wirebench's config asks for.
const prompt = "My design in this book is not to explain the properties of light by hypotheses but"

type options struct {
	wirebench string
	rates     []int
	tokens    []int
	sims      [][]string
	wbArgs    []string // extra `wirebench capture` flags (none: its defaults)
	duration  time.Duration
	keep      bool
	grace     time.Duration
	repeat    int  // runs of each case per client, alternating; the table shows their medians
	atVegeta  bool // also run wirebench at the send times of each vegeta run (clientAtVegeta)
}

// The clients of a case: vegeta, wirebench at the constant rate, and wirebench replaying the
// send times of the vegeta run just before it (vegeta's pacer sends in clumps, and a server
// sleeps less often under clumps: this client offers the server vegeta's load exactly).
const (
	clientVegeta    = "vegeta"
	clientWirebench = "wirebench"
	clientAtVegeta  = "wirebench at vegeta's send times"
)

// caseKey is one offered load against one simulator.
type caseKey struct {
	sim    int // index into options.sims
	rate   int
	tokens int
}

// result is one client's run of one case.
type result struct {
	served      serverDelta
	cpuNs       int64   // user + system CPU of the client's processes
	serverCPUNs int64   // the simulator's CPU over the same window (its threads' schedstat)
	segments    int64   // TCP segments the host sent over the same window (both ends, on loopback)
	trust, note string  // wirebench's trust level; what went wrong or stands out
	sent        []int64 // vegeta's send times (its results' timestamps, Unix ns, sorted)
	failed      error
}

func main() {
	o := parseFlags()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	host, _ := os.Hostname()
	start := time.Now()
	loadBefore := loadavg()
	var keys []caseKey
	results := map[caseKey]map[string][]result{}
	for si := range o.sims {
		for _, tok := range o.tokens {
			for _, rate := range o.rates {
				k := caseKey{si, rate, tok}
				keys = append(keys, k)
				results[k] = map[string][]result{}
				for i := 0; i < o.repeat && ctx.Err() == nil; i++ {
					v := runLogged(ctx, o, k, clientVegeta, i, nil)
					results[k][clientVegeta] = append(results[k][clientVegeta], v)
					results[k][clientWirebench] = append(results[k][clientWirebench], runLogged(ctx, o, k, clientWirebench, i, nil))
					if o.atVegeta && v.failed == nil {
						results[k][clientAtVegeta] = append(results[k][clientAtVegeta], runLogged(ctx, o, k, clientAtVegeta, i, v.sent))
					}
				}
			}
		}
	}
	fmt.Printf("Machine: %s, %d CPUs (%s), %s/%s, %s; load average before %s, after %s.\n",
		host, runtime.NumCPU(), cpuModel(), runtime.GOOS, runtime.GOARCH, runtime.Version(), loadBefore, loadavg())
	fmt.Printf("Date: %s (%s wall). Each run: a fresh `wirebench sim --listen 127.0.0.1:0 ARGS`, %s at a constant rate, 16-token prompts.\n\n",
		start.UTC().Format("2006-01-02 15:04 MST"), time.Since(start).Round(time.Second), o.duration)
	writeTable(os.Stdout, o, keys, results, clientWirebench)
	if o.atVegeta {
		fmt.Println()
		writeTable(os.Stdout, o, keys, results, clientAtVegeta)
	}
	if ctx.Err() != nil {
		os.Exit(130)
	}
}

// runLogged runs one client's i-th run of case k and logs its figures to stderr; sent is the
// vegeta run's send times for clientAtVegeta.
func runLogged(ctx context.Context, o options, k caseKey, client string, i int, sent []int64) result {
	fmt.Fprintf(os.Stderr, "%s  %s, %d req/s, %d tokens: %s, run %d of %d ...\n", time.Now().Format("15:04:05"), simName(o.sims[k.sim]), k.rate, k.tokens, client, i+1, o.repeat)
	r := runOne(ctx, o, k, client, sent)
	if r.failed != nil {
		fmt.Fprintf(os.Stderr, "  failed: %v\n", r.failed)
		return r
	}
	f := r.figures()
	fmt.Fprintf(os.Stderr, "  served %d, E2E p50 %s p99 %s, client CPU %s and server CPU %s per request, %d connections %s\n", f.ok,
		fmtDur(f.e2e50), fmtDur(f.e2e99), fmtDur(f.cpu), fmtDur(f.serverCPU), f.conns, r.note)
	return r
}

func parseFlags() options {
	var o options
	var rates, tokens, sims, wbArgs string
	flag.StringVar(&o.wirebench, "wirebench", "../../bin/wirebench", "path of the wirebench binary")
	flag.StringVar(&rates, "rates", "1000,2000,5000", "comma-separated request rates (req/s)")
	flag.StringVar(&tokens, "tokens", "4,64", "comma-separated output tokens per request (max_tokens, ignore_eos)")
	flag.StringVar(&sims, "sims", "--mode fixed --ttft 0 --itl 0|--mode fixed --ttft 0 --itl 0 --cpu-per-request 100us",
		"|-separated argument lists of `wirebench sim` (after --listen 127.0.0.1:0), one simulator each")
	flag.StringVar(&wbArgs, "capture-args", "", "extra flags of `wirebench capture` (default: none, its defaults)")
	flag.DurationVar(&o.duration, "duration", 6*time.Second, "length of each constant-rate run")
	flag.BoolVar(&o.keep, "keep", false, "keep the wirebench run directories (their paths are printed)")
	flag.IntVar(&o.repeat, "repeat", 3, "runs of each case per client, alternating (the table shows each figure's median)")
	flag.DurationVar(&o.grace, "grace", 90*time.Second, "time allowed per run beyond -duration before it is stopped")
	flag.BoolVar(&o.atVegeta, "at-vegeta-times", true, "also run wirebench at the send times of each vegeta run (a second table): vegeta's pacer sends in clumps, so at the same rate the two clients do not offer the server the same load")
	flag.Parse()
	var err error
	if o.rates, err = positiveInts(rates); err != nil {
		fatalf("-rates: %v", err)
	}
	if o.tokens, err = positiveInts(tokens); err != nil {
		fatalf("-tokens: %v", err)
	}
	if o.repeat < 1 {
		fatalf("-repeat %d: want at least 1", o.repeat)
	}
	o.wbArgs = strings.Fields(wbArgs)
	for _, s := range strings.Split(sims, "|") {
		o.sims = append(o.sims, strings.Fields(s))
	}
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
	return o
}

func positiveInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// runOne starts a fresh simulator, scrapes its /metrics, runs one client against it, scrapes
// again and stops it. The whole run is bounded by duration + grace.
func runOne(parent context.Context, o options, k caseKey, client string, sent []int64) (r result) {
	ctx, cancel := context.WithTimeout(parent, o.duration+o.grace)
	defer cancel()
	sim, err := startSim(ctx, o.wirebench, o.sims[k.sim])
	if err != nil {
		r.failed = err
		return r
	}
	defer sim.stop()
	var before serverMetrics
	var cpu0, segs0 int64
	scrapeBefore := func() error {
		var err error
		if before, err = scrape(sim.url); err != nil {
			return err
		}
		cpu0 = sim.cpuNs()
		segs0, err = tcpOutSegs()
		return err
	}
	switch client {
	case clientVegeta:
		err = runVegeta(ctx, o, k, sim.url, scrapeBefore, &r)
	default:
		err = runWirebench(ctx, o, k, sim.url, scrapeBefore, &r, sent)
	}
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("stopped after %s: %w", o.duration+o.grace, context.Cause(ctx))
	}
	if err == nil {
		var after serverMetrics
		var segs1 int64
		r.serverCPUNs = sim.cpuNs() - cpu0
		if segs1, err = tcpOutSegs(); err == nil {
			r.segments = segs1 - segs0
			after, err = scrape(sim.url)
		}
		if err == nil {
			r.served = after.since(before)
		}
	}
	r.failed = err
	return r
}

// figures are what the table shows of one run: the server's latencies, what it served and
// accepted, and each side's CPU per request the server completed. The simulator's CPU is its own
// work and the kernel's done in its threads (this kernel charges softirq time to the task it
// interrupts), so a client that makes the server's sends or receives dearer shows there.
type figures struct {
	ttft50, ttft99, e2e50, e2e99 time.Duration
	cpu, serverCPU               time.Duration
	ok, conns                    int64
	segments                     float64 // TCP segments per request served, both directions
}

func (r result) figures() figures {
	f := figures{ttft50: r.served.ttft.quantile(0.5), ttft99: r.served.ttft.quantile(0.99),
		e2e50: r.served.e2e.quantile(0.5), e2e99: r.served.e2e.quantile(0.99), ok: r.served.ok, conns: r.served.conns}
	if r.served.ok > 0 {
		f.cpu, f.serverCPU = time.Duration(r.cpuNs/r.served.ok), time.Duration(r.serverCPUNs/r.served.ok)
		f.segments = float64(r.segments) / float64(r.served.ok)
	}
	return f
}

// medianFigures is each figure's median over the runs (the upper one of an even count).
func medianFigures(rs []result) figures {
	fs := make([]figures, len(rs))
	for i, r := range rs {
		fs[i] = r.figures()
	}
	med := func(get func(figures) int64) int64 {
		v := make([]int64, len(fs))
		for i, f := range fs {
			v[i] = get(f)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	d := func(get func(figures) time.Duration) time.Duration {
		return time.Duration(med(func(f figures) int64 { return int64(get(f)) }))
	}
	return figures{
		ttft50: d(func(f figures) time.Duration { return f.ttft50 }), ttft99: d(func(f figures) time.Duration { return f.ttft99 }),
		e2e50: d(func(f figures) time.Duration { return f.e2e50 }), e2e99: d(func(f figures) time.Duration { return f.e2e99 }),
		cpu: d(func(f figures) time.Duration { return f.cpu }), serverCPU: d(func(f figures) time.Duration { return f.serverCPU }),
		ok: med(func(f figures) int64 { return f.ok }), conns: med(func(f figures) int64 { return f.conns }),
		segments: float64(med(func(f figures) int64 { return int64(math.Round(10 * f.segments)) })) / 10,
	}
}

func simName(args []string) string {
	s := strings.Join(args, " ")
	for i, a := range args {
		if a == "--cpu-per-request" && i+1 < len(args) {
			return args[i+1] + " CPU per request"
		}
	}
	if s == "--mode fixed --ttft 0 --itl 0" {
		return "no CPU cost"
	}
	return "sim " + s
}

func fatalf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "vegeta: "+format+"\n", a...)
	os.Exit(2)
}
