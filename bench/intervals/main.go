// Command intervals proves the percentile intervals of `wirebench aggregate`: it runs one config
// many times (different seeds) against `wirebench sim` (a fresh simulator each run, or with
// -one-sim one for all the runs of a load), at a light and a near-saturation load, and prints,
// for p50 and p99 of TTFT and ITL, the share of runs whose 95% interval holds the pooled
// percentile (all runs' values together) and the median interval width, as a Markdown table on
// stdout (progress on stderr). Its last column asks whether the runs differ because the machine
// did (drift.go). `make bench-intervals` runs it; figures in docs/measurements.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/wirebench/wirebench/aggregate"
	"github.com/wirebench/wirebench/internal/simproc"
	"github.com/wirebench/wirebench/schemas"
)

func main() {
	bin := flag.String("wirebench", "bin/wirebench", "the wirebench binary")
	simCfg := flag.String("sim", "bench/intervals/engine.yaml", "simulator config (engine.yaml with 32 output tokens completes at most about 234 requests/s; fast.yaml with 16 about 930)")
	runs := flag.Int("runs", 20, "runs per load")
	loads := flag.String("loads", "140:120s,190:120s", "loads, comma-separated, each a Poisson rate in requests/s and the length of its runs (RATE:DURATION): light and near saturation (60% and 81% of engine.yaml's capacity; at 190 its TTFT p99, about 44 ms, is over 3 times that at 140; a TTFT p99 interval there needs about 100,000 requests, see fast.yaml)")
	output := flag.Int("output", 32, "output tokens per request (32: about 84 ms of decode at a full batch of engine.yaml)")
	dir := flag.String("dir", filepath.Join(os.TempDir(), "wirebench-intervals"), "where the runs are written (removed unless -keep)")
	keep := flag.Bool("keep", false, "keep the runs")
	reuse := flag.Bool("reuse", false, "read the runs already in -dir (kept with -keep) instead of running them again: to re-analyse a bench offline")
	parallel := flag.Int("parallel", 1, "runs at once, each with its own simulator and an unpinned client: only for loads the machine carries N times over (near saturation the runs compete and are no longer alike)")
	simCPU := flag.Int("sim-cpu", -1, "pin each simulator to this CPU (-1: leave it to the scheduler)")
	clientCPU := flag.Int("client-cpu", -1, "run each `wirebench capture` (its coordinator and workers) on this CPU alone, with taskset (-1: leave it to its defaults)")
	firstSeed := flag.Int("first-seed", 1, "seed of run 0 (run i has seed first-seed+i and is kept as r<rate>-<first-seed-1+i>): to add runs to a kept set")
	keepAwake := flag.Bool("keep-awake", false, "keep every CPU from halting for the whole bench (`wirebench keep-awake`: a SCHED_IDLE spinner a CPU, which gives way at once to any other thread): a halted vCPU wakes as late as its host decides, which varies from run to run; the stages' machine busy share then includes the spinners")
	haltPoll := flag.Duration("halt-poll", 0, "for the whole bench, let an idle vCPU poll this long before it halts (the haltpoll cpuidle driver's guest_halt_poll_ns, restored at the end; only where that driver is the one in use, which the bench checks): like -keep-awake, it spares the runs the host's varying wake-up of a halted vCPU, but only while a CPU is idle and without a thread to preempt; the kernel's default is 200µs, some hosts boot with 0")
	oneSim := flag.Bool("one-sim", false, "one simulator for all the runs of a load, started before the first (default: a fresh one each run): the runs then share one server process; on the 2-vCPU project machine they still differed by more than sampling (docs/measurements.md)")
	flag.Parse()
	log.SetFlags(0)
	lds, err := parseLoads(*loads)
	if err != nil {
		log.Fatal(err)
	}
	if *firstSeed < 1 {
		log.Fatalf("-first-seed %d: seeds start at 1", *firstSeed)
	}
	if *oneSim && *parallel > 1 {
		log.Fatal("-one-sim runs one run at a time: the runs would share the simulator (-parallel 1)")
	}
	// What the bench changed on the machine, undone (last first) when it ends, also on failure.
	var cleanups []func()
	fatal := func(err error) {
		for _, c := range slices.Backward(cleanups) {
			c()
		}
		log.Fatal(err)
	}
	defer func() {
		for _, c := range slices.Backward(cleanups) {
			c()
		}
	}()
	if *reuse {
		fmt.Printf("Re-analysed %s (-reuse) at %s: the runs' own config, machine and time are those they were made with\n\n",
			*dir, time.Now().UTC().Format(time.RFC3339))
	} else {
		pin, undo, err := setUp(*bin, *simCPU, *clientCPU, *oneSim, *keepAwake, *haltPoll)
		cleanups = append(cleanups, undo...)
		if err != nil {
			fatal(err)
		}
		fmt.Printf("Machine: %d CPUs, %s, %s; %d runs per load (%s; seeds %d-%d), %d output tokens, simulator config %s (%s)\n\n",
			runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format(time.RFC3339), *runs, *loads, *firstSeed, *firstSeed+*runs-1, *output, *simCfg, pin)
	}
	fmt.Println("| load | figure | runs with an interval | pooled percentile | coverage | median width | median width / pooled | runs' spread / intervals' | with the machine's busy share: r; coverage; spread |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, l := range lds {
		p := plan{bin: *bin, simCfg: *simCfg, dir: *dir, rate: l.rate, d: l.d, output: *output, simCPU: *simCPU, clientCPU: *clientCPU, first: *firstSeed}
		stop := func() {}
		if *oneSim && !*reuse {
			if p.url, stop, err = startSim(p); err != nil {
				fatal(err)
			}
		}
		res, err := runAll(p, *runs, *parallel, *keep, *reuse)
		stop()
		if err != nil {
			fatal(err)
		}
		for _, f := range figures {
			row(l.rate, f, res)
		}
	}
}

// setUp describes where the runs' processes go and makes the machine changes the flags ask for
// (idle polling, CPUs kept awake); undo reverts those made, also when err is not nil.
func setUp(bin string, simCPU, clientCPU int, oneSim, keepAwake bool, haltPoll time.Duration) (pin string, undo []func(), err error) {
	pin = "simulator unpinned"
	if simCPU >= 0 {
		pin = fmt.Sprintf("simulator on CPU %d", simCPU)
	}
	if clientCPU >= 0 {
		pin += fmt.Sprintf(", client on CPU %d", clientCPU)
	}
	if oneSim {
		pin += ", one simulator a load"
	} else {
		pin += ", a fresh simulator a run"
	}
	if haltPoll > 0 {
		restore, err := setHaltPoll(haltPoll)
		if err != nil {
			return "", undo, err
		}
		undo = append(undo, restore)
		pin += fmt.Sprintf(", idle CPUs polling %v before they halt", haltPoll)
	}
	if keepAwake {
		stop, err := keepCPUsAwake(bin)
		if err != nil {
			return "", undo, err
		}
		undo = append(undo, stop)
		pin += ", every CPU kept awake"
	}
	return pin, undo, nil
}

// keepCPUsAwake starts `wirebench keep-awake` on every CPU this process may use; stop closes its
// stdin, which ends it.
func keepCPUsAwake(bin string) (stop func(), err error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("keep-awake: %w", err)
	}
	var cpus []string
	for c := range 1024 {
		if set.IsSet(c) {
			cpus = append(cpus, strconv.Itoa(c))
		}
	}
	cmd := exec.Command(bin, "keep-awake", "--cpus", strings.Join(cpus, ","))
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("keep-awake: %w", err)
	}
	return func() { in.Close(); cmd.Wait() }, nil
}

// haltPollParam is the haltpoll cpuidle driver's polling limit (Documentation/virt/guest-halt-polling.rst);
// it acts only while that driver is the one in use (idleDriver), which a KVM guest gets when its
// host hints KVM_HINTS_REALTIME or it boots with cpuidle_haltpoll.force=1.
const (
	haltPollParam = "/sys/module/haltpoll/parameters/guest_halt_poll_ns"
	idleDriver    = "/sys/devices/system/cpu/cpuidle/current_driver"
)

// setHaltPoll lets an idle CPU poll for up to d before it halts, and returns what puts the old
// limit back. The driver grows and shrinks each CPU's polling between 0 and this limit by whether
// polling caught the next wake-up; the polling counts as idle time.
func setHaltPoll(d time.Duration) (restore func(), err error) {
	drv, err := os.ReadFile(idleDriver)
	if err != nil {
		return nil, fmt.Errorf("-halt-poll: %w", err)
	}
	if got := strings.TrimSpace(string(drv)); got != "haltpoll" {
		return nil, fmt.Errorf("-halt-poll: the cpuidle driver in use is %q (%s), not haltpoll: its polling limit would change nothing", got, idleDriver)
	}
	old, err := os.ReadFile(haltPollParam)
	if err != nil {
		return nil, fmt.Errorf("-halt-poll: %w (the haltpoll cpuidle driver of KVM guests is not loaded here)", err)
	}
	if err := os.WriteFile(haltPollParam, []byte(strconv.FormatInt(d.Nanoseconds(), 10)), 0); err != nil {
		return nil, fmt.Errorf("-halt-poll: %w", err)
	}
	was := strings.TrimSpace(string(old))
	log.Printf("halt-poll: %s set to %d (was %s; restored when the bench ends, or by hand after a kill)", haltPollParam, d.Nanoseconds(), was)
	return func() {
		if err := os.WriteFile(haltPollParam, []byte(was), 0); err != nil {
			log.Printf("halt-poll: restore %s to %s: %v", haltPollParam, was, err)
		}
	}, nil
}

// load is one load of the bench: a Poisson rate and the length of its runs.
type load struct {
	rate float64
	d    time.Duration
}

// parseLoads parses -loads: RATE:DURATION pairs separated by commas.
func parseLoads(s string) ([]load, error) {
	var out []load
	for f := range strings.SplitSeq(s, ",") {
		rs, ds, _ := strings.Cut(strings.TrimSpace(f), ":")
		r, rerr := strconv.ParseFloat(rs, 64)
		d, derr := time.ParseDuration(ds)
		if rerr != nil || derr != nil || r <= 0 || d <= 0 {
			return nil, fmt.Errorf("-loads %q: %q is not RATE:DURATION (a positive rate in requests/s and a positive length, e.g. 540:60s)", s, f)
		}
		out = append(out, load{r, d})
	}
	return out, nil
}

// plan is what each run of one load is made of.
type plan struct {
	bin, simCfg, dir  string
	rate              float64
	d                 time.Duration
	output            int
	simCPU, clientCPU int
	url               string // the simulator all runs share (-one-sim); "" for a fresh one each run
	first             int    // seed of run 0
}

// runAll runs n seeded runs of p, parallel at a time, and returns them in seed order.
func runAll(p plan, n, parallel int, keep, reuse bool) ([]result, error) {
	res := make([]result, n)
	errs := make([]error, n)
	var extra []string
	if parallel > 1 {
		extra = []string{"--no-pin"}
	}
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			rd := filepath.Join(p.dir, fmt.Sprintf("r%g-%02d", p.rate, p.first-1+i))
			if reuse {
				res[i], errs[i] = readRun(rd, true)
			} else {
				res[i], errs[i] = oneRun(p, rd, uint64(p.first+i), extra)
			}
			if !keep && !reuse {
				os.RemoveAll(rd)
			}
			if errs[i] == nil {
				log.Printf("rate %g run %d: %d TTFT and %d ITL values", p.rate, i, len(res[i].ttft), len(res[i].itl))
			}
		}()
	}
	wg.Wait()
	return res, errors.Join(errs...)
}

// figure is one percentile of one latency: its point estimate's interval in a run and the
// run's values.
type figure struct {
	name   string
	q      float64
	ci     func(*schemas.Stage) (lo, hi *int64)
	values func(*result) []int64
}

var figures = []figure{
	{"TTFT p50", 0.5, func(s *schemas.Stage) (*int64, *int64) { return s.TTFTCI.P50Lo, s.TTFTCI.P50Hi }, func(r *result) []int64 { return r.ttft }},
	{"TTFT p99", 0.99, func(s *schemas.Stage) (*int64, *int64) { return s.TTFTCI.P99Lo, s.TTFTCI.P99Hi }, func(r *result) []int64 { return r.ttft }},
	{"ITL p50", 0.5, func(s *schemas.Stage) (*int64, *int64) { return s.ITLCI.P50Lo, s.ITLCI.P50Hi }, func(r *result) []int64 { return r.itl }},
	{"ITL p99", 0.99, func(s *schemas.Stage) (*int64, *int64) { return s.ITLCI.P99Lo, s.ITLCI.P99Hi }, func(r *result) []int64 { return r.itl }},
}

// result is one run's stage row and its values.
type result struct {
	stage     schemas.Stage
	ttft, itl []int64
}

// row prints the coverage of figure f over the runs res against the pooled percentile.
func row(rate float64, f figure, res []result) {
	var pooled []int64
	for i := range res {
		pooled = append(pooled, f.values(&res[i])...)
	}
	if len(pooled) == 0 {
		fmt.Printf("| %g/s | %s | 0 of %d | — | — | — | — | — | — |\n", rate, f.name, len(res))
		return
	}
	slices.Sort(pooled)
	truth := pooled[aggregate.NearestRank(f.q, int64(len(pooled)))-1]
	with, hold, over := 0, 0, 0
	var widths, los, his []int64
	var points, busy []float64
	for i := range res {
		lo, hi := f.ci(&res[i].stage)
		if res[i].stage.Overloaded {
			over++
		}
		if lo == nil || hi == nil {
			continue
		}
		with++
		if *lo <= truth && truth <= *hi {
			hold++
		}
		widths, los, his = append(widths, *hi-*lo), append(los, *lo), append(his, *hi)
		busy = append(busy, res[i].stage.MachineBusy)
		vs := slices.Sorted(slices.Values(f.values(&res[i])))
		points = append(points, float64(vs[aggregate.NearestRank(f.q, int64(len(vs)))-1]))
	}
	runs := fmt.Sprintf("%d of %d", with, len(res))
	switch {
	case over > 0:
		runs += fmt.Sprintf(" (%d overloaded)", over)
	case with == 0:
		runs += " (n too small)"
	}
	if with == 0 {
		fmt.Printf("| %g/s | %s | %s | %s | — | — | — | — | — |\n", rate, f.name, runs, ms(truth))
		return
	}
	w := slices.Sorted(slices.Values(widths))[len(widths)/2]
	machine := "—"
	if d, ok := machineDrift(points, busy, los, his, intervalSD(widths), truth); ok {
		machine = d.String()
	}
	clo, chi := coverageCI(hold, with)
	fmt.Printf("| %g/s | %s | %s | %s | %d/%d = %.0f%% (%.0f–%.0f%%) | %s | %.1f%% | %s | %s |\n", rate, f.name, runs, ms(truth),
		hold, with, 100*float64(hold)/float64(with), 100*clo, 100*chi, ms(w), 100*float64(w)/float64(truth), spread(points, widths), machine)
}

// coverageCI is the exact (Clopper–Pearson) 95% interval of a coverage of k held in n: the
// shares at which k or more (its lower end) or k or fewer (its upper end) would be seen with
// probability 2.5%, the quantiles of beta distributions. It says how far from 95% a count of
// 20 runs falls by chance alone: 17 of 19 (89%) is within it.
func coverageCI(k, n int) (lo, hi float64) {
	lo, hi = 0, 1
	if k > 0 {
		lo = distuv.Beta{Alpha: float64(k), Beta: float64(n - k + 1)}.Quantile(0.025)
	}
	if k < n {
		hi = distuv.Beta{Alpha: float64(k + 1), Beta: float64(n - k)}.Quantile(0.975)
	}
	return lo, hi
}

// spread compares how far apart the runs' own percentiles are with what their intervals say a
// run's sampling moves it: the standard deviation of the points over the mean of the intervals'
// widths / 3.92 (a 95% interval's width in standard deviations, were it normal). About 1 when
// the runs are samples of one distribution; well over 1 when they differ by more than sampling
// (then coverage says more about the runs than about the intervals). "—" with fewer than 3 runs.
func spread(points []float64, widths []int64) string {
	if len(points) < 3 {
		return "—"
	}
	var m, v float64
	for _, p := range points {
		m += p
	}
	m /= float64(len(points))
	for _, p := range points {
		v += (p - m) * (p - m)
	}
	return strconv.FormatFloat(math.Sqrt(v/float64(len(points)-1))/intervalSD(widths), 'f', 2, 64)
}

// intervalSD is the standard deviation the intervals imply for a run's point: their mean width
// over 3.92 (a 95% interval's width in standard deviations, were it normal).
func intervalSD(widths []int64) float64 {
	var w float64
	for _, x := range widths {
		w += float64(x)
	}
	return w / 3.92 / float64(len(widths))
}

func ms(ns int64) string { return strconv.FormatFloat(float64(ns)/1e6, 'f', 2, 64) + " ms" }

// startSim starts a simulator for p and returns its URL and its stop.
func startSim(p plan) (string, func(), error) {
	url, stop, err := simproc.Start(p.bin, []string{"sim", "--listen", "127.0.0.1:0", "--config", p.simCfg}, p.simCPU, io.Discard, slog.New(slog.DiscardHandler))
	if err != nil {
		return "", nil, fmt.Errorf("start the simulator: %w", err)
	}
	return url, stop, nil
}

// oneRun runs one seeded Poisson stage of p into dir against p's simulator (a fresh one when
// p.url is empty) and reads its figures.
func oneRun(p plan, dir string, seed uint64, extra []string) (result, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return result{}, err
	}
	os.RemoveAll(dir)
	url := p.url
	if url == "" {
		u, stop, err := startSim(p)
		if err != nil {
			return result{}, err
		}
		defer stop()
		url = u
	}
	cfg := dir + ".yaml"
	defer os.Remove(cfg)
	text := fmt.Sprintf(`name: intervals
seed: %d
target: {url: %s, api: completions, model: sim, ignore_eos: true, timeout: 60s}
load:
  stages:
    - {rate: %g, duration: %s, arrival: poisson}
workload:
  synthetic:
    input: {kind: fixed, value: 64}
    output: {kind: fixed, value: %d}
tokenizer: whitespace
`, seed, url, p.rate, p.d, p.output)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		return result{}, err
	}
	// Replay and capture here, aggregate in readRun: `wirebench run` would aggregate the run a
	// second time (and draw its report).
	for _, args := range [][]string{{"replay", cfg, "-o", dir}, append([]string{"capture", dir, "--quiet"}, extra...)} {
		cmd := exec.Command(p.bin, args...)
		if p.clientCPU >= 0 && args[0] == "capture" {
			cmd = exec.Command("taskset", append([]string{"-c", strconv.Itoa(p.clientCPU)}, cmd.Args...)...)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return result{}, fmt.Errorf("wirebench %s %s: %w\n%s", args[0], cfg, err, out)
		}
	}
	return readRun(dir, false)
}

// readRun aggregates the run in dir (into the run itself, or with again into a scratch
// directory: a kept run is left as it is) and returns its stage row and the values its TTFT and
// ITL intervals were drawn from, so that the pooled percentile is of the very values the
// intervals are about: aggregate's event times (the packet tap's when it saw the segment, else
// the kernel's, else user space's).
// (A second copy of that rule here once took kernel times alone: a read that found several
// events waiting stamps them all with the last one's arrival, and pooled over 20 runs that
// moved the ITL p99 up by 50 µs at 140 requests/s and 230 µs at 190.)
func readRun(dir string, again bool) (result, error) {
	cfg := aggregate.Config{Runs: []string{dir}, KeepSamples: true}
	if again {
		scratch, err := os.MkdirTemp("", "wirebench-intervals-agg-")
		if err != nil {
			return result{}, err
		}
		defer os.RemoveAll(scratch)
		cfg.Out = scratch
	}
	sum, err := aggregate.Run(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return result{}, fmt.Errorf("aggregate %s: %w", dir, err)
	}
	if len(sum.Stages) != 1 {
		return result{}, fmt.Errorf("%s: %d stages, want 1", dir, len(sum.Stages))
	}
	st := sum.Stages[0]
	return result{stage: st, ttft: sum.Samples[st.Stage]["ttft"], itl: sum.Samples[st.Stage]["itl"]}, nil
}
