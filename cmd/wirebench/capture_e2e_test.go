package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirebench/wirebench/internal/construn"
	"github.com/wirebench/wirebench/schemas"
)

// captureRun writes a constant-rate run against url.
func captureRun(t *testing.T, url string, stages ...construn.Stage) string {
	t.Helper()
	run := t.TempDir()
	if err := construn.Write(run, schemas.Target{URL: url, API: "completions", Model: "sim"}, stages); err != nil {
		t.Fatal(err)
	}
	return run
}

// rawFiles opens every raw part present on disk and in the manifest: each must validate.
func rawFiles(t *testing.T, run string) (*schemas.Manifest, []schemas.RawRequest, []schemas.RawChunk) {
	t.Helper()
	m, err := schemas.ReadManifest(filepath.Join(run, schemas.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]int64{}
	for _, f := range m.Files {
		listed[f.Path] = f.Rows
	}
	var reqs []schemas.RawRequest
	var chunks []schemas.RawChunk
	paths, _ := filepath.Glob(filepath.Join(run, "raw", "*.parquet"))
	for _, p := range paths {
		rel := "raw/" + filepath.Base(p)
		var n int
		switch {
		case strings.HasPrefix(filepath.Base(p), "requests-"):
			rows, err := schemas.ReadFile[schemas.RawRequest](p)
			if err != nil {
				t.Fatalf("finished part does not validate: %v", err)
			}
			n, reqs = len(rows), append(reqs, rows...)
		case strings.HasPrefix(filepath.Base(p), "chunks-"):
			rows, err := schemas.ReadFile[schemas.RawChunk](p)
			if err != nil {
				t.Fatalf("finished part does not validate: %v", err)
			}
			n, chunks = len(rows), append(chunks, rows...)
		default:
			continue
		}
		if rows, ok := listed[rel]; ok && rows != int64(n) {
			t.Errorf("%s has %d rows; manifest says %d", rel, n, rows)
		}
	}
	for path := range listed {
		if _, err := os.Stat(filepath.Join(run, path)); err != nil {
			t.Errorf("manifest lists %s, which is not on disk: %v", path, err)
		}
	}
	return m, reqs, chunks
}

func median(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return v[len(v)/2]
}

func chunkTime(c *schemas.RawChunk) int64 {
	if c.RxKernelNs != 0 {
		return c.RxKernelNs
	}
	return c.RxUserNs
}

func TestCaptureAgainstSimMatchesFixedTiming(t *testing.T) {
	url := startSim(t, "--ttft", "20ms", "--itl", "5ms")
	const maxTokens = 8
	run := captureRun(t, url, construn.Stage{Rate: 50, Duration: 2 * time.Second, InputTokens: 16, MaxTokens: maxTokens})
	// --keep-awake: on a VM whose idle CPUs halt, the simulator's own wake-ups (reading the
	// request, emitting the first chunk) add 0.3-0.5 ms to its 20 ms and crowd the ±0.5 ms
	// check; the client's own error is checked against the simulator's stamps below.
	if _, stderr, err := wirebench(t, 20*time.Second, "capture", run, "--workers", "2", "--quiet", "--keep-awake"); err != nil {
		t.Fatalf("capture: %v\n%s", err, stderr)
	}
	m, reqs, chunks := rawFiles(t, run)
	if m.Status != schemas.StatusComplete {
		t.Errorf("manifest status %q (missing %q); want complete", m.Status, m.Missing)
	}
	seen := map[int64]int{}
	sent := map[int64]int64{}
	workers := map[int32]bool{}
	for _, r := range reqs {
		seen[r.Seq]++
		sent[r.Seq] = r.SentNs
		workers[r.Worker] = true
		if r.ErrorKind != "" {
			t.Errorf("seq %d: %s: %s", r.Seq, r.ErrorKind, r.ErrorMessage)
		}
	}
	for seq := range int64(100) {
		if seen[seq] != 1 {
			t.Errorf("seq %d appears %d times across shards; want exactly once", seq, seen[seq])
		}
	}
	if len(seen) != 100 || len(workers) != 2 {
		t.Errorf("%d distinct seqs from workers %v; want 100 from 2 workers", len(seen), workers)
	}
	bySeq := map[int64][]schemas.RawChunk{}
	for _, c := range chunks {
		if c.Kind == "content" {
			bySeq[c.Seq] = append(bySeq[c.Seq], c)
		}
	}
	var ttft, gaps, server, lag []int64
	exact := 0
	for seq, cs := range bySeq {
		if len(cs) != maxTokens {
			t.Errorf("seq %d: %d content chunks; want max_tokens %d", seq, len(cs), maxTokens)
		}
		sort.Slice(cs, func(i, j int) bool { return cs[i].Index < cs[j].Index })
		ttft = append(ttft, chunkTime(&cs[0])-sent[seq])
		if cs[0].ServerSentNs != 0 {
			server = append(server, cs[0].ServerSentNs-sent[seq])
			lag = append(lag, chunkTime(&cs[0])-cs[0].ServerSentNs)
		}
		for i := 1; i < len(cs); i++ {
			gaps = append(gaps, chunkTime(&cs[i])-chunkTime(&cs[i-1]))
		}
		for _, c := range cs {
			if c.Quality == "exact" {
				exact++
			}
		}
	}
	t.Logf("median TTFT %v (the simulator's first chunk %v after sent_ns), median gap %v", time.Duration(median(ttft)), time.Duration(median(server)), time.Duration(median(gaps)))
	if d := time.Duration(median(ttft)) - 20*time.Millisecond; d < -500*time.Microsecond || d > 500*time.Microsecond {
		// The simulator's own send time of the first chunk tells a late server from a late client.
		t.Errorf("median TTFT %v; want 20ms ± 0.5ms (the simulator stamped its first chunk a median %v after sent_ns)",
			time.Duration(median(ttft)), time.Duration(median(server)))
	}
	// The client's part (lag): from the simulator's own send time of the first chunk to its
	// kernel receive time, which is loopback delivery only.
	if len(lag) == 0 || median(lag) < 0 || median(lag) > int64(200*time.Microsecond) {
		t.Errorf("first chunk received a median %v after the simulator sent it (%d with server stamps); want 0 to 200µs", time.Duration(median(lag)), len(lag))
	}
	if d := time.Duration(median(gaps)) - 5*time.Millisecond; d < -500*time.Microsecond || d > 500*time.Microsecond {
		t.Errorf("median inter-chunk gap %v; want 5ms ± 0.5ms", time.Duration(median(gaps)))
	}
	if exact == 0 {
		t.Error("no chunk has quality exact; want kernel timestamps on plain HTTP")
	}
}

// startWirebench starts the binary with args in the background, collecting its output; it is
// killed if the test ends first.
func startWirebench(t *testing.T, args ...string) (cmd *exec.Cmd, stdout, stderr *strings.Builder) {
	t.Helper()
	cmd = exec.Command(binary, args...)
	stdout, stderr = new(strings.Builder), new(strings.Builder)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Workers inherit stderr: a worker that outlives a killed coordinator (stopped, or still
	// closing its parts) holds the pipe open, and Wait would wait for it rather than for the
	// process the test signalled.
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return cmd, stdout, stderr
}

// startCapture starts `wirebench capture` in the background.
func startCapture(t *testing.T, args ...string) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	cmd, _, errb := startWirebench(t, append([]string{"capture"}, args...)...)
	return cmd, errb
}

// children returns the pids whose parent is pid and that run the wirebench subcommand sub.
func children(pid int, sub string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if args, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err != nil || !bytes.Contains(args, []byte("\x00"+sub+"\x00")) {
			continue
		}
		// pid (comm) state ppid ...
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	sort.Ints(out)
	return out
}

// waitWorkers waits until the workers have started (and loaded) and sending is under way.
func waitWorkers(t *testing.T, pid, n int) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c := children(pid, "worker"); len(c) == n {
			time.Sleep(1500 * time.Millisecond) // ready, started, a part or more finished
			return c
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("capture %d did not start %d workers in 10s", pid, n)
	return nil
}

// waitExit waits up to limit for the started cmd to end and returns Wait's error; a cmd still
// running then is killed and fails the test, with its stderr.
func waitExit(t *testing.T, cmd *exec.Cmd, limit time.Duration, stderr fmt.Stringer) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		cmd.Process.Kill()
		<-done
		t.Fatalf("%v still running after %v; stderr:\n%s", cmd.Args[1:2], limit, stderr.String())
	}
	return nil
}

func TestCaptureSIGINTDrainsAndMarksInterrupted(t *testing.T) {
	url := startSim(t, "--ttft", "20ms", "--itl", "5ms")
	run := captureRun(t, url, construn.Stage{Rate: 100, Duration: 10 * time.Second, MaxTokens: 8})
	cmd, errb := startCapture(t, run, "--workers", "2", "--part-interval", "500ms", "--quiet")
	waitWorkers(t, cmd.Process.Pid, 2)
	cmd.Process.Signal(os.Interrupt)
	err := waitExit(t, cmd, 15*time.Second, errb)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("capture after SIGINT: %v; want exit status 130\n%s", err, errb.String())
	}
	m, reqs, _ := rawFiles(t, run)
	if m.Status != schemas.StatusInterrupted {
		t.Errorf("manifest status %q; want interrupted", m.Status)
	}
	if !strings.Contains(strings.Join(m.Missing, "\n"), "planned requests were not sent") {
		t.Errorf("manifest missing %q; want the unsent requests counted", m.Missing)
	}
	if len(reqs) == 0 || len(reqs) >= 1000 {
		t.Errorf("%d requests recorded; want some, fewer than the 1000 planned", len(reqs))
	}
	for _, r := range reqs {
		if r.ErrorKind != "" && r.ErrorKind != "cancelled" {
			t.Errorf("seq %d: error %s after a drain; want none", r.Seq, r.ErrorKind)
		}
	}
}

func TestCaptureSIGKILLOneWorkerOthersGoOn(t *testing.T) {
	url := startSim(t, "--ttft", "5ms", "--itl", "2ms")
	run := captureRun(t, url, construn.Stage{Rate: 100, Duration: 3 * time.Second, MaxTokens: 4})
	cmd, errb := startCapture(t, run, "--workers", "2", "--part-interval", "500ms", "--quiet")
	kids := waitWorkers(t, cmd.Process.Pid, 2)
	syscall.Kill(kids[1], syscall.SIGKILL)
	err := waitExit(t, cmd, 15*time.Second, errb)
	if err == nil || !strings.Contains(errb.String(), "worker died") {
		t.Errorf("capture after a worker was killed: %v; want a failure naming the dead worker\n%s", err, errb.String())
	}
	m, reqs, _ := rawFiles(t, run)
	if m.Status != schemas.StatusFailed {
		t.Errorf("manifest status %q; want failed", m.Status)
	}
	killed := 0
	for _, w := range m.Workers {
		if w.Exit == "signal: killed" {
			killed++
		}
	}
	if killed != 1 || !strings.Contains(strings.Join(m.Missing, "\n"), "signal: killed") {
		t.Errorf("manifest workers %+v missing %q; want one worker recorded as signal: killed", m.Workers, m.Missing)
	}
	perWorker := map[int32]int{}
	for _, r := range reqs {
		perWorker[r.Worker]++
	}
	// The survivor sent its whole half (150) to the end.
	if perWorker[0]+perWorker[1] < 150 {
		t.Errorf("requests per worker %v; want the surviving worker's 150 all recorded", perWorker)
	}
}

func TestCaptureSIGKILLCoordinatorKeepsParts(t *testing.T) {
	url := startSim(t, "--ttft", "5ms", "--itl", "2ms")
	run := captureRun(t, url, construn.Stage{Rate: 100, Duration: 10 * time.Second, MaxTokens: 4})
	cmd, errb := startCapture(t, run, "--workers", "2", "--part-interval", "500ms", "--quiet", "--keep-awake")
	kids := waitWorkers(t, cmd.Process.Pid, 2)
	// The spinner process too (absent only under a cgroup CPU quota; capture's own tests check
	// that it starts).
	kids = append(kids, children(cmd.Process.Pid, "keep-awake")...)
	// Kill the coordinator once the first parts are finished (parts roll every 500 ms).
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if parts, _ := filepath.Glob(filepath.Join(run, "raw", "requests-w*.parquet")); len(parts) > 0 {
			break
		}
	}
	cmd.Process.Kill()
	waitExit(t, cmd, 15*time.Second, errb)
	// The orphaned workers see their stdin close, close their open parts and exit; so does the
	// keep-awake spinner.
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range kids {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("child %d still running 10s after its coordinator died", pid)
		}
	}
	m, reqs, _ := rawFiles(t, run)
	if m.Status != schemas.StatusRunning || len(m.Missing) == 0 {
		t.Errorf("manifest status %q missing %q; want running with what may be missing", m.Status, m.Missing)
	}
	var rawListed int
	for _, f := range m.Files {
		if strings.HasPrefix(f.Path, "raw/") {
			rawListed++
		}
	}
	if rawListed == 0 || len(reqs) == 0 {
		t.Errorf("manifest lists %d raw files, %d requests on disk; want the parts finished before the kill", rawListed, len(reqs))
	}
}

// BenchmarkCapture runs capture against the zero-latency simulator at rising rates and reports
// what the bias checks look at: achieved rate, send lag p50/p99, exact-timestamp share, read lag
// p99, worker utilisation and CPU per request. `make bench` runs it; each case is a 3 s stage.
func BenchmarkCapture(b *testing.B) {
	for _, tc := range []struct {
		rate   float64
		tokens int32
	}{{500, 4}, {1000, 4}, {2000, 4}, {4000, 4}, {5000, 4}, {500, 16}, {1000, 16}, {2000, 16}, {4000, 16}, {5000, 16}} {
		b.Run(fmt.Sprintf("rate=%g/tokens=%d", tc.rate, tc.tokens), func(b *testing.B) {
			for b.Loop() {
				benchCapture(b, tc.rate, tc.tokens)
			}
		})
	}
}

func benchCapture(b *testing.B, rate float64, tokens int32) {
	sim := exec.Command(binary, "sim", "--listen", "127.0.0.1:0", "--mode", "fixed", "--ttft", "0", "--itl", "0", "--max-num-seqs", "0")
	out, err := sim.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := sim.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { sim.Process.Signal(os.Interrupt); sim.Wait() }()
	buf := make([]byte, 256)
	n, _ := out.Read(buf)
	url := strings.TrimSpace(strings.SplitN(string(buf[:n]), "\n", 2)[0])
	go io.Copy(io.Discard, out)
	measureCapture(b, schemas.Target{URL: url, Model: "sim"}, rate, tokens)
}

// measureCapture runs capture for a 3 s constant stage against tgt and reports its metrics.
func measureCapture(b *testing.B, tgt schemas.Target, rate float64, tokens int32) {
	run := b.TempDir()
	const dur = 3 * time.Second
	if err := construn.Write(run, tgt, []construn.Stage{{Rate: rate, Duration: dur, InputTokens: 16, MaxTokens: tokens}}); err != nil {
		b.Fatal(err)
	}
	// WIREBENCH_BENCH_CAPTURE_FLAGS adds capture flags, to compare settings (e.g. --keep-awake).
	c := exec.Command(binary, append([]string{"capture", run, "--quiet"}, strings.Fields(os.Getenv("WIREBENCH_BENCH_CAPTURE_FLAGS"))...)...)
	var errb strings.Builder
	c.Stderr = &errb
	steal0, total0 := cpuSteal()
	stopProbe := make(chan struct{})
	probe := make(chan []int64)
	go func() { probe <- wakeProbe(stopProbe) }()
	if err := c.Run(); err != nil {
		b.Fatalf("capture: %v\n%s", err, errb.String())
	}
	close(stopProbe)
	wakeLate := <-probe
	steal1, total1 := cpuSteal()
	m, err := schemas.ReadManifest(filepath.Join(run, schemas.ManifestName))
	if err != nil {
		b.Fatal(err)
	}
	var lags, readLags []int64
	var first, last int64 = 1 << 62, 0
	exact, all := 0, 0
	for _, f := range m.Files {
		p := filepath.Join(run, f.Path)
		switch f.Kind {
		case "raw-requests":
			rows, _ := schemas.ReadFile[schemas.RawRequest](p)
			for _, r := range rows {
				lags = append(lags, r.SentNs-r.PlannedNs)
				first, last = min(first, r.SentNs), max(last, r.SentNs)
			}
		case "raw-chunks":
			rows, _ := schemas.ReadFile[schemas.RawChunk](p)
			for _, c := range rows {
				all++
				if c.Quality == "exact" {
					exact++
				}
				if c.RxKernelNs != 0 {
					readLags = append(readLags, c.RxUserNs-c.RxKernelNs)
				}
			}
		}
	}
	wrows, _ := schemas.ReadFile[schemas.Worker](filepath.Join(run, "raw", "workers.parquet"))
	var cpu, wall int64
	util := 0.0
	for _, w := range wrows {
		cpu += w.CPUUserNs + w.CPUSysNs
		wall += w.WallNs
		util = max(util, float64(w.CPUUserNs+w.CPUSysNs)/float64(w.WallNs))
	}
	q := func(v []int64, p float64) float64 {
		if len(v) == 0 {
			return 0
		}
		sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
		return float64(v[min(int(p*float64(len(v))), len(v)-1)]) / 1e3
	}
	planned := int(rate * dur.Seconds())
	b.ReportMetric(100*float64(len(lags))/float64(planned), "sent_%")
	b.ReportMetric(float64(len(lags)-1)/(float64(last-first)/1e9), "achieved_qps")
	b.ReportMetric(q(lags, 0.5), "send_lag_p50_us")
	b.ReportMetric(q(lags, 0.99), "send_lag_p99_us")
	b.ReportMetric(float64(exact)/float64(max(all, 1)), "exact_share")
	b.ReportMetric(q(readLags, 0.99), "read_lag_p99_us")
	b.ReportMetric(util, "worker_util_max")
	b.ReportMetric(float64(cpu)/1e3/float64(max(len(lags), 1)), "cpu_us/req")
	// CPU time the hypervisor gave to others while the vCPUs wanted to run: on a shared VM the
	// send-lag tail follows it.
	if total1 > total0 {
		b.ReportMetric(100*float64(steal1-steal0)/float64(total1-total0), "steal_%")
	}
	// The machine's own wake-up jitter over the same time: a bare thread that does nothing but
	// sleep to absolute times. A send lag near it is the machine's, not the client's.
	b.ReportMetric(q(wakeLate, 0.99), "machine_wake_p99_us")
}

// wakeProbe sleeps to absolute times 500 µs apart on a locked thread at nice -20 (when
// permitted), as a capture worker's pacer does, until stop, and returns how late each wake-up was.
// The thread stays locked: when the goroutine returns the runtime ends it, so its priority and
// timer slack do not go back to the pool with it.
func wakeProbe(stop <-chan struct{}) []int64 {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1000, 0, 0, 0)
	_ = unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_NORMAL, Nice: -20}, 0)
	var late []int64
	next := time.Now().UnixNano()
	for {
		select {
		case <-stop:
			return late
		default:
		}
		next += int64(500 * time.Microsecond)
		ts := unix.NsecToTimespec(next)
		for unix.ClockNanosleep(unix.CLOCK_REALTIME, unix.TIMER_ABSTIME, &ts, nil) == unix.EINTR {
		}
		l := time.Now().UnixNano() - next
		late = append(late, l)
		if l > int64(500*time.Microsecond) {
			next = time.Now().UnixNano() // start afresh after a long stall rather than catch up
		}
	}
}

// cpuSteal returns the steal and total jiffies of /proc/stat's cpu line (0, 0 off Linux).
func cpuSteal() (steal, total int64) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0
	}
	for i, v := range f[1:] {
		n, _ := strconv.ParseInt(v, 10, 64)
		total += n
		if i == 7 {
			steal = n
		}
	}
	return steal, total
}
