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
//   - server CPU per request: the simulator's own CPU (the sum of its threads' on-CPU time,
//     /proc/PID/task/*/schedstat) over the same window as its metrics, per request it completed;
//   - connections: accepted by the simulator during the run (wirebench's warm-up included).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
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
}

// caseKey is one offered load against one simulator.
type caseKey struct {
	sim    int // index into options.sims
	rate   int
	tokens int
}

// result is one client's run of one case.
type result struct {
	served      serverDelta
	cpuNs       int64  // user + system CPU of the client's processes
	serverCPUNs int64  // the simulator's CPU over the same window (its threads' schedstat)
	trust, note string // wirebench's trust level; what went wrong or stands out
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
	results := map[caseKey]map[string]result{}
	for si := range o.sims {
		for _, tok := range o.tokens {
			for _, rate := range o.rates {
				k := caseKey{si, rate, tok}
				keys = append(keys, k)
				results[k] = map[string]result{}
				for _, client := range []string{"vegeta", "wirebench"} {
					if ctx.Err() != nil {
						break
					}
					fmt.Fprintf(os.Stderr, "%s  %s, %d req/s, %d tokens: %s ...\n", time.Now().Format("15:04:05"), simName(o.sims[si]), rate, tok, client)
					r := runOne(ctx, o, k, client)
					if r.failed != nil {
						fmt.Fprintf(os.Stderr, "  failed: %v\n", r.failed)
					} else {
						fmt.Fprintf(os.Stderr, "  served %d, E2E p50 %s p99 %s, %s CPU per request, %d connections %s\n", r.served.ok,
							fmtDur(r.served.e2e.quantile(0.5)), fmtDur(r.served.e2e.quantile(0.99)), fmtDur(r.cpuPerRequest()), r.served.conns, r.note)
						fmt.Fprintf(os.Stderr, "  server CPU per request %s\n", fmtDur(r.serverCPUPerRequest()))
					}
					results[k][client] = r
				}
			}
		}
	}
	fmt.Printf("Machine: %s, %d CPUs (%s), %s/%s, %s; load average before %s, after %s.\n",
		host, runtime.NumCPU(), cpuModel(), runtime.GOOS, runtime.GOARCH, runtime.Version(), loadBefore, loadavg())
	fmt.Printf("Date: %s (%s wall). Each run: a fresh `wirebench sim --listen 127.0.0.1:0 ARGS`, %s at a constant rate, 16-token prompts.\n\n",
		start.UTC().Format("2006-01-02 15:04 MST"), time.Since(start).Round(time.Second), o.duration)
	writeTable(os.Stdout, o, keys, results)
	if ctx.Err() != nil {
		os.Exit(130)
	}
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
	flag.DurationVar(&o.grace, "grace", 90*time.Second, "time allowed per run beyond -duration before it is stopped")
	flag.Parse()
	var err error
	if o.rates, err = positiveInts(rates); err != nil {
		fatalf("-rates: %v", err)
	}
	if o.tokens, err = positiveInts(tokens); err != nil {
		fatalf("-tokens: %v", err)
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
func runOne(parent context.Context, o options, k caseKey, client string) (r result) {
	ctx, cancel := context.WithTimeout(parent, o.duration+o.grace)
	defer cancel()
	sim, err := startSim(ctx, o.wirebench, o.sims[k.sim])
	if err != nil {
		r.failed = err
		return r
	}
	defer sim.stop()
	var before serverMetrics
	var cpu0 int64
	scrapeBefore := func() error {
		var err error
		before, err = scrape(sim.url)
		cpu0 = sim.cpuNs()
		return err
	}
	switch client {
	case "vegeta":
		err = runVegeta(ctx, o, k, sim.url, scrapeBefore, &r)
	default:
		err = runWirebench(ctx, o, k, sim.url, scrapeBefore, &r)
	}
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("stopped after %s: %w", o.duration+o.grace, context.Cause(ctx))
	}
	if err == nil {
		var after serverMetrics
		r.serverCPUNs = sim.cpuNs() - cpu0
		if after, err = scrape(sim.url); err == nil {
			r.served = after.since(before)
		}
	}
	r.failed = err
	return r
}

// cpuPerRequest is the client's CPU per request the server completed.
func (r result) cpuPerRequest() time.Duration { return r.perRequest(r.cpuNs) }

// serverCPUPerRequest is the simulator's CPU per request it completed: its own work and the
// kernel's done in its threads (this kernel charges softirq time to the task it interrupts),
// so a client that makes the server's sends or receives dearer (a packet tap) shows here.
func (r result) serverCPUPerRequest() time.Duration { return r.perRequest(r.serverCPUNs) }

func (r result) perRequest(ns int64) time.Duration {
	if r.served.ok == 0 {
		return 0
	}
	return time.Duration(ns / r.served.ok)
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
