package main

import (
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirebench/wirebench/calibrate"
	"github.com/wirebench/wirebench/internal/construn"
	"github.com/wirebench/wirebench/internal/simproc"
	"github.com/wirebench/wirebench/schemas"
)

// coverage is what one run's bounds did against the simulator's ground truth.
type coverage struct {
	calibrate.TTFTCoverage
	stage schemas.Stage
}

// boundsCoverage aggregates run (one stage) and checks its TTFT intervals against the
// simulator's send times (calibrate.CoverTTFT).
func boundsCoverage(t *testing.T, run string) coverage {
	t.Helper()
	if _, stderr, err := wirebench(t, 60*time.Second, "aggregate", run); err != nil {
		t.Fatalf("aggregate: %v\n%s", err, stderr)
	}
	_, _, chunks := rawFiles(t, run)
	rows, err := schemas.ReadFile[schemas.MetricRequest](filepath.Join(run, "metrics", "requests.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	stages, err := schemas.ReadFile[schemas.Stage](filepath.Join(run, "metrics", "stages.parquet"))
	if err != nil || len(stages) != 1 {
		t.Fatalf("stages.parquet: %d rows, %v; want 1", len(stages), err)
	}
	cv := coverage{stage: stages[0]}
	if c := calibrate.CoverTTFT(rows, chunks)[stages[0].Stage]; c != nil {
		cv.TTFTCoverage = *c
	}
	return cv
}

func (cv coverage) String() string {
	s := cv.stage
	return fmt.Sprintf("%d of %d covered; exact share %.3f; uncertainty %v (%s); ttft p99 [%v, %v]; client_bound %v %s; load_delivered %v %s",
		cv.Covered, cv.Requests, val(s.ExactShare), time.Duration(val(s.UncertaintyNs)), s.UncertaintyFigure,
		time.Duration(val(s.TTFT.P99Lo)), time.Duration(val(s.TTFT.P99Hi)), s.ClientBound, s.ClientBoundReason, s.LoadDelivered, s.LoadReason)
}

// TestBoundsCoverGroundTruth runs capture against the simulator at rising rates, with the tap
// off (socket-read times) and on: every request's TTFT interval meets the simulator's write of
// its first content event both ways, and with the tap a client that is not starved is not
// client-bound. Without the tap it may be, rightly: on this VM a worker now and then wakes
// milliseconds late, reads two events together, and that request's bounds widen; at 20 req/s
// one such request in a hundred is the p99 (seen at 500 req/s too: a 0.63 ms TTFT p99 bound).
func TestBoundsCoverGroundTruth(t *testing.T) {
	url := startSim(t, "--ttft", "20ms", "--itl", "5ms")
	for _, tt := range []struct {
		rate float64
		dur  time.Duration
		tap  string
	}{{20, 5 * time.Second, "off"}, {500, 4 * time.Second, "off"}, {2000, 3 * time.Second, "off"},
		{20, 5 * time.Second, "on"}, {500, 4 * time.Second, "on"}} {
		t.Run(fmt.Sprintf("%g/tap-%s", tt.rate, tt.tap), func(t *testing.T) {
			if tt.tap == "on" {
				needTap(t)
			}
			run := captureRun(t, url, construn.Stage{Rate: tt.rate, Duration: tt.dur, InputTokens: 16, MaxTokens: 16})
			if _, stderr, err := wirebench(t, 60*time.Second, "capture", run, "--quiet", "--tap", tt.tap); err != nil {
				t.Fatalf("capture: %v\n%s", err, stderr)
			}
			cv := boundsCoverage(t, run)
			t.Logf("rate %g, tap %s: %v", tt.rate, tt.tap, cv)
			if cv.Requests < int(tt.rate*tt.dur.Seconds())*99/100 {
				t.Errorf("%d ok requests with a first content event; want about %g", cv.Requests, tt.rate*tt.dur.Seconds())
			}
			if miss := cv.Requests - cv.Covered; miss > allowedMisses {
				t.Errorf("coverage %d of %d: %d misses (%d early, %d late), over %d: %s", cv.Covered, cv.Requests, miss, cv.Early, cv.Late,
					allowedMisses, strings.Join(cv.Misses, "; "))
			}
			if cv.stage.ClientBound && tt.tap == "on" {
				t.Errorf("client_bound with the tap and a client not starved: %s", cv.stage.ClientBoundReason)
			}
		})
	}
}

// TestBoundsMeetTruthOfDelayedWrite: a simulator that stamps each event and then waits 2 ms
// before writing it (--stamp-lead, a simulator descheduled between its stamp and its write made
// certain) still has every TTFT interval meet its truth, since the stamp after the write
// bounds the arrival from above; and the interval lies well above the stamp before the write,
// which alone (as it once was) made every request a miss.
func TestBoundsMeetTruthOfDelayedWrite(t *testing.T) {
	const lead = 2 * time.Millisecond
	url := startSim(t, "--ttft", "20ms", "--itl", "5ms", "--stamp-lead", lead.String())
	const rate, dur = 20, 3 * time.Second
	run := captureRun(t, url, construn.Stage{Rate: rate, Duration: dur, InputTokens: 16, MaxTokens: 4})
	if _, stderr, err := wirebench(t, 60*time.Second, "capture", run, "--quiet", "--tap", "off"); err != nil {
		t.Fatalf("capture: %v\n%s", err, stderr)
	}
	cv := boundsCoverage(t, run)
	t.Logf("stamp lead %v: %v", lead, cv)
	if cv.Requests < rate*int(dur.Seconds())*99/100 || cv.Covered != cv.Requests {
		t.Errorf("coverage %d of %d (%d early, %d late); want all of about %d: %s", cv.Covered, cv.Requests, cv.Early, cv.Late,
			rate*int(dur.Seconds()), strings.Join(cv.Misses, "; "))
	}
	_, _, chunks := rawFiles(t, run)
	for _, ch := range chunks {
		tr, ok := calibrate.TruthOf(&ch)
		if ch.Kind != schemas.ChunkContent {
			continue
		}
		if !ok || tr.Post == 0 {
			t.Fatalf("seq %d event %d: server_sent_ns %v, server_sent_end_ns %v; want both (every event has its own write)", ch.Seq, ch.Index, ch.ServerSentNs, ch.ServerSentEndNs)
		}
		if ch.RxKernelNs == 0 || ch.Quality != schemas.QualityExact {
			continue
		}
		if k := ch.RxKernelNs; k-tr.Pre < int64(lead) || tr.Outside(k) != 0 {
			t.Errorf("seq %d event %d: kernel stamp %d; want at least %v after the stamp before the write (%d) and by the one after it (%d)",
				ch.Seq, ch.Index, k, lead, tr.Pre, tr.Post)
		}
	}
}

// allowedMisses is how many TTFT intervals of a stage may miss the simulator's truth: none. On
// loopback the kernel stamps the event's segment inside the simulator's write, so its arrival
// lies in [server_sent_ns, server_sent_end_ns] however long the simulator was held up between
// its stamp and its write (with the stamp alone, that let 2 of 100 intervals on a quiet machine,
// and 0.5% where other processes held the CPUs, miss it). A late miss needs a first content
// event held back by TCP, which the request just before it on the connection rules out: it
// acknowledged all earlier data, and a response's prelude is a few segments, inside any window
// (docs/design/calibration.md). An early miss is always the client's error.
const allowedMisses = 0

// TestBoundsWidenWhenClientStarved starves the one worker (tap off, GOMAXPROCS 1, a CPU hog on its CPU,
// the simulator on the other CPU): events queue unread and coalesce, the bounds widen and still
// hold the truth, and the stage is client-bound.
func TestBoundsWidenWhenClientStarved(t *testing.T) {
	run := starvedCapture(t, "5ms", "off")
	ws, err := schemas.ReadFile[schemas.Worker](filepath.Join(run, "raw", "workers.parquet"))
	if err != nil || len(ws) == 0 || ws[0].CPU != 0 {
		t.Fatalf("workers.parquet: %+v, %v; want the worker on CPU 0, beside the hog", ws, err)
	}
	cv := boundsCoverage(t, run)
	t.Logf("starved: %v", cv)
	if miss := cv.Requests - cv.Covered; cv.Requests == 0 || miss > allowedMisses {
		t.Errorf("coverage %d of %d: %d misses (%d early, %d late), over %d: %s", cv.Covered, cv.Requests, miss, cv.Early, cv.Late,
			allowedMisses, strings.Join(cv.Misses, "; "))
	}
	if !cv.stage.ClientBound || val(cv.stage.UncertaintyNs) <= int64(500*time.Microsecond) {
		t.Errorf("starved client: client_bound %v, uncertainty %v; want client-bound with a bound wider than 0.5 ms", cv.stage.ClientBound, time.Duration(val(cv.stage.UncertaintyNs)))
	}
}

// starvedCapture runs a 500 req/s × 16-token capture (tap as given) of one worker with
// GOMAXPROCS 1 on CPU 0 beside three spinning threads, against a simulator (ITL itl) pinned to
// CPU 1, and returns the run directory. It skips without CPUs 0 and 1.
func starvedCapture(t *testing.T, itl, tapMode string) string {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil || set.Count() < 2 || !set.IsSet(0) || !set.IsSet(1) {
		t.Skipf("needs CPUs 0 and 1 (affinity %v, %v)", set, err)
	}
	var errb syncBuffer
	url, stop, err := simproc.Start(binary, []string{"sim", "--listen", "127.0.0.1:0", "--ttft", "20ms", "--itl", itl}, 1, &errb, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("%v; stderr:\n%s", err, errb.String())
	}
	t.Cleanup(stop)
	run := captureRun(t, url, construn.Stage{Rate: 500, Duration: 3 * time.Second, InputTokens: 16, MaxTokens: 16})
	var quit atomic.Bool
	const hogs = 3
	done := make(chan struct{}, hogs)
	for range hogs {
		go hog(0, &quit, done)
	}
	_, stderr, err := wirebench(t, 60*time.Second, "capture", run, "--quiet", "--workers", "1", "--gomaxprocs", "1", "--tap", tapMode)
	quit.Store(true)
	for range hogs {
		<-done
	}
	if err != nil {
		t.Fatalf("capture: %v\n%s", err, stderr)
	}
	return run
}

// hog spins on cpu until quit, then signals done. Its thread stays locked, so it ends with the
// goroutine: unlocked, it would go back to the runtime pinned to cpu, and a later test (or a
// process it starts) would run there alone.
func hog(cpu int, quit *atomic.Bool, done chan<- struct{}) {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	_ = unix.SchedSetaffinity(0, &set)
	for !quit.Load() {
	}
	done <- struct{}{}
}

// TestPoissonSentAsPlannedIsDelivered plans a Poisson stage whose sample rate is at least 5%
// off its nominal rate and sends it: the load verdict compares sends with the schedule, so the
// fidelity is about 1, the verdict has no rate clause, and the stage is not client-bound.
// The verdict's other clause, send lag p99 against a tenth of the mean gap (2.4 ms here), is
// not this test's subject and may rightly go red on a machine that wakes the pacer late: CI's
// VM once kept the pacer 3.5 ms late for 1% of 212 sends with the machine 14% busy. The test
// then checks that the lag is the only reason and that it names the pacer.
func TestPoissonSentAsPlannedIsDelivered(t *testing.T) {
	url := startSim(t, "--ttft", "20ms", "--itl", "5ms")
	const rate, dur = 40, 5 * time.Second
	var run string
	var planned float64
	for seed := 1; seed <= 40 && run == ""; seed++ {
		dir := filepath.Join(t.TempDir(), fmt.Sprint(seed))
		cfg := filepath.Join(t.TempDir(), "poisson.yaml")
		body := fmt.Sprintf("name: poisson\nseed: %d\ntarget: {url: %q, api: completions, model: sim, ignore_eos: true}\n"+
			"load:\n  stages:\n    - {rate: %d, duration: %s, arrival: poisson}\n"+
			"workload:\n  synthetic: {input: {kind: fixed, value: 16}, output: {kind: fixed, value: 32}}\ntokenizer: whitespace\n", seed, url, rate, dur)
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, stderr, err := wirebench(t, 30*time.Second, "replay", cfg, "-o", dir); err != nil {
			t.Fatalf("replay: %v\n%s", err, stderr)
		}
		sched, err := schemas.ReadFile[schemas.ScheduleRequest](filepath.Join(dir, "schedule", "requests.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		first, last := sched[0].PlannedOffsetNs, sched[0].PlannedOffsetNs
		for _, r := range sched {
			first, last = min(first, r.PlannedOffsetNs), max(last, r.PlannedOffsetNs)
		}
		planned = float64(len(sched)-1) / (float64(last-first) / 1e9)
		if math.Abs(planned/rate-1) >= 0.05 {
			run = dir
		}
	}
	if run == "" {
		t.Fatal("no seed in 1..40 plans a Poisson sample 5% off its rate")
	}
	if _, stderr, err := wirebench(t, 60*time.Second, "capture", run, "--quiet"); err != nil {
		t.Fatalf("capture: %v\n%s", err, stderr)
	}
	cv := boundsCoverage(t, run)
	s := cv.stage
	t.Logf("nominal %d/s, planned %.2f/s: %v; fidelity %.4f", rate, planned, cv, val(s.RateFidelity))
	if math.Abs(val(s.PlannedRate)-planned) > 1e-6*planned {
		t.Errorf("planned_rate %.4f; want the schedule's %.4f", val(s.PlannedRate), planned)
	}
	// Where other processes held the CPUs (othersHeldCPUs: the stage's own machine_busy and
	// client_cpus), the sends go out late and the verdict rightly says so: the fidelity must
	// then still be nearer the schedule's rate than the nominal one (half the way at most).
	tol, busy := 0.02, othersHeldCPUs(s)
	if busy {
		tol = math.Abs(planned/rate-1) / 2
	}
	lagOnly := strings.HasPrefix(s.LoadReason, "send lag p99 ") && strings.Contains(s.LoadReason, "before the worker began the request")
	if (!s.LoadDelivered && !busy && !lagOnly) || math.Abs(val(s.RateFidelity)-1) > tol || (s.ClientBound && !busy) {
		t.Errorf("load_delivered %v (%s), fidelity %.4f, client_bound %v (%s), machine %.0f%% busy, wirebench using %.2f CPUs; want delivered (or late sends its only reason), fidelity within %.1f%%, not client-bound",
			s.LoadDelivered, s.LoadReason, val(s.RateFidelity), s.ClientBound, s.ClientBoundReason, 100*s.MachineBusy, s.ClientCPUs, 100*tol)
	}
}

// TestServerAcceptingSlowlyIsBlamed: a server with a short accept queue that accepts slowly
// (--listen-backlog 4, --accept-pace 10ms), answers in 300 ms and gets 400 req/s with one warm
// connection per worker: the client must dial faster than the server accepts, SYNs are dropped,
// and the stage says the load was not delivered because the server did not accept connections
// fast enough, with the waits recorded as connection waits.
func TestServerAcceptingSlowlyIsBlamed(t *testing.T) {
	url := startSim(t, "--ttft", "300ms", "--itl", "1ms", "--listen-backlog", "4", "--accept-pace", "10ms")
	run := captureRun(t, url, construn.Stage{Rate: 400, Duration: 3 * time.Second, InputTokens: 16, MaxTokens: 4})
	if _, stderr, err := wirebench(t, 90*time.Second, "capture", run, "--quiet", "--connections", "1"); err != nil {
		t.Fatalf("capture: %v\n%s", err, stderr)
	}
	if _, stderr, err := wirebench(t, 60*time.Second, "aggregate", run); err != nil {
		t.Fatalf("aggregate: %v\n%s", err, stderr)
	}
	stages, err := schemas.ReadFile[schemas.Stage](filepath.Join(run, "metrics", "stages.parquet"))
	if err != nil || len(stages) != 1 {
		t.Fatalf("stages.parquet: %d rows, %v", len(stages), err)
	}
	s := stages[0]
	t.Logf("load_delivered %v: %s; syn_retrans %d, conn_wait p50/p99 %v/%v, connect p99 %v over %d",
		s.LoadDelivered, s.LoadReason, s.SynRetrans, time.Duration(val(s.ConnWait.P50)), time.Duration(val(s.ConnWait.P99)), time.Duration(val(s.Connect.P99)), s.Connect.Count)
	if s.LoadDelivered || !strings.Contains(s.LoadReason, "the server was not accepting connections fast enough") {
		t.Errorf("load_delivered %v, reason %q; want the server blamed for accepting too slowly", s.LoadDelivered, s.LoadReason)
	}
	if s.SynRetrans == 0 || val(s.ConnWait.P99) < int64(500*time.Millisecond) {
		t.Errorf("syn_retrans %d, conn_wait p99 %v; want dropped SYNs and connection waits of the order of the 1 s retransmission", s.SynRetrans, time.Duration(val(s.ConnWait.P99)))
	}
	if s.Errors != 0 {
		t.Errorf("%d errors (%s); want every request answered in the end", s.Errors, s.ErrorsByKind)
	}
}
