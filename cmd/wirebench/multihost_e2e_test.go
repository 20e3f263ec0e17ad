package main

// A distributed run on one machine: one `wirebench replay`, three capture "hosts" (separate
// `wirebench capture` processes, each in a copy of the run directory of its own, pinned to a CPU
// of its own where there are enough, with --shard i/3 and one --start-at, as examples/k8s does)
// against one `wirebench sim`, then `wirebench aggregate host0 host1 host2 -o merged` and
// `wirebench report merged`.

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/cpuset"
	"github.com/wirebench/wirebench/internal/simproc"
	"github.com/wirebench/wirebench/schemas"
)

// multiHostConfig is the run's config: two constant-rate stages, 40/s for 2 s and 80/s for 3 s
// (80 + 240 requests), 4 output tokens.
const multiHostConfig = `name: multihost
seed: 7
target: {url: %s, api: completions, model: sim, ignore_eos: true, timeout: 30s}
load:
  stages:
    - {rate: 40, duration: 2s, arrival: constant}
    - {rate: 80, duration: 3s, arrival: constant}
workload:
  synthetic:
    input: {kind: fixed, value: 16}
    output: {kind: fixed, value: 4}
`

const hosts = 3

// startLead is how far ahead the hosts' common start is put: each host must have started its
// worker, loaded the schedule and warmed its connections by then (about 0.3 s on an idle 2-CPU
// machine; ten times that under load).
const startLead = 3 * time.Second

// replayRun writes the config for url and plans it with `wirebench replay` into root/run.
func replayRun(t *testing.T, root, url string) string {
	t.Helper()
	cfg := filepath.Join(root, "multihost.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(multiHostConfig, url)), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(root, "run")
	if _, stderr, err := wirebench(t, 30*time.Second, "replay", cfg, "-o", run); err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	return run
}

// hostCopy makes dir a copy of replay's output (manifest and schedule), as each host of
// examples/k8s copies the run before its capture.
func hostCopy(t *testing.T, run, dir string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "schedule"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{schemas.ManifestName, "schedule/requests.parquet", "schedule/prompts.parquet"} {
		b, err := os.ReadFile(filepath.Join(run, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// host is one running capture.
type host struct {
	dir  string
	cmd  *exec.Cmd
	errb *syncBuffer
}

// hostCmd makes host i's command from wirebench's arguments.
type hostCmd func(i int, args []string) *exec.Cmd

// onLoopback runs every host's capture here, against the run's target.
func onLoopback(_ int, args []string) *exec.Cmd { return exec.Command(binary, args...) }

// startHosts copies run into dir/host0..2 and starts a capture in each (made by mk): shard i/3,
// one worker pinned to CPU i (mod the CPUs this test may use), all at one start time. It
// returns the hosts and the start.
func startHosts(t *testing.T, run, dir string, mk hostCmd) ([]*host, time.Time) {
	t.Helper()
	cpus, _, err := cpuset.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(startLead)
	var hs []*host
	for i := range hosts {
		h := &host{dir: hostCopy(t, run, filepath.Join(dir, fmt.Sprintf("host%d", i))), errb: &syncBuffer{}}
		h.cmd = mk(i, []string{"capture", h.dir, "--shard", fmt.Sprintf("%d/%d", i, hosts), "--start-at", strconv.FormatInt(start.UnixNano(), 10),
			"--workers", "1", "--cpus", strconv.Itoa(cpus[i%len(cpus)]), "--connections", "8", "--part-interval", "500ms", "--quiet"})
		h.cmd.Stderr = h.errb
		if err := h.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if h.cmd.ProcessState == nil {
				h.cmd.Process.Kill()
				h.cmd.Wait()
			}
		})
		hs = append(hs, h)
	}
	return hs, start
}

// wait waits for the host's capture to end (bounded) and returns its error.
func (h *host) wait(t *testing.T) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- h.cmd.Wait() }()
	select {
	case err := <-done:
		if strings.Contains(h.errb.String(), "start time is in the past") {
			t.Errorf("%s started after the common start (%v ahead was not enough on this machine):\n%s", h.dir, startLead, h.errb.String())
		}
		return err
	case <-time.After(30 * time.Second):
		h.cmd.Process.Kill()
		t.Fatalf("capture of %s did not end in 30 s; stderr:\n%s", h.dir, h.errb.String())
	}
	return nil
}

// mergeAndReport runs `wirebench aggregate DIRS... -o out` and `wirebench report out`, and returns
// the merged manifest, its stages and aggregate's stdout.
func mergeAndReport(t *testing.T, out string, dirs ...string) (*schemas.Manifest, []schemas.Stage, string) {
	t.Helper()
	stdout, stderr, err := wirebench(t, 60*time.Second, append(append([]string{"aggregate"}, dirs...), "-o", out)...)
	if err != nil {
		t.Fatalf("aggregate %v: %v\n%s", dirs, err, stderr)
	}
	if _, stderr, err := wirebench(t, 60*time.Second, "report", out, "--quiet"); err != nil {
		t.Fatalf("report %s: %v\n%s", out, err, stderr)
	}
	m, err := schemas.ReadManifest(filepath.Join(out, schemas.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	stages, err := schemas.ReadFile[schemas.Stage](filepath.Join(out, "metrics", "stages.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	return m, stages, stdout
}

// plannedSeqs reads the schedule's seqs with their stages.
func plannedSeqs(t *testing.T, run string) map[int64]int32 {
	t.Helper()
	rows, err := schemas.ReadFile[schemas.ScheduleRequest](filepath.Join(run, "schedule", "requests.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]int32{}
	for _, r := range rows {
		out[r.Seq] = r.Stage
	}
	return out
}

// mergedCounts counts the merged metrics rows per seq.
func mergedCounts(t *testing.T, out string) (map[int64]int, []schemas.MetricRequest) {
	t.Helper()
	rows, err := schemas.ReadFile[schemas.MetricRequest](filepath.Join(out, "metrics", "requests.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	n := map[int64]int{}
	for _, r := range rows {
		n[r.Seq]++
	}
	return n, rows
}

// saveArtifact copies the report's index.html and summary.md to $WIREBENCH_ARTIFACTS/name and,
// where Chromium is installed, adds a full-page screenshot of index.html (screenshot.png).
func saveArtifact(t *testing.T, out, name string) {
	t.Helper()
	dir := os.Getenv("WIREBENCH_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "wirebench-artifacts")
	}
	dst := filepath.Join(dir, name)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatalf("artifact dir: %v", err)
	}
	for _, f := range []string{"index.html", "summary.md"} {
		b, err := os.ReadFile(filepath.Join(out, "report", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	screenshot(t, filepath.Join(out, "report", "index.html"), filepath.Join(dst, "screenshot.png"))
	t.Logf("merged report artifact: %s", dst)
}

// screenshot has headless Chromium draw page at 1280 px wide into png; without Chromium it
// says so and leaves the page alone (the page itself is the artifact then).
func screenshot(t *testing.T, page, png string) {
	t.Helper()
	exe, err := exec.LookPath("chromium")
	if err != nil {
		t.Logf("no chromium: %s has no screenshot", page)
		return
	}
	abs, _ := filepath.Abs(page)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--window-size=1280,6000", "--screenshot="+png, "file://"+abs)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("chromium screenshot of %s: %v\n%s", page, err, out)
	} else if fi, err := os.Stat(png); err != nil || fi.Size() == 0 {
		t.Errorf("chromium wrote no screenshot to %s", png)
	}
}

// checkClocks checks that every host's manifest records its clock and that the merged manifest
// carries each host's: one machine's hosts read one clock, so nothing is uncertain between them.
func checkClocks(t *testing.T, m *schemas.Manifest) {
	t.Helper()
	if m.ClockUncertaintyNs != 0 {
		t.Errorf("merged clock_uncertainty_ns %d; want 0 (the hosts share one kernel's clock)", m.ClockUncertaintyNs)
	}
	for _, h := range m.Hosts {
		hm, err := schemas.ReadManifest(filepath.Join(h.Dir, schemas.ManifestName))
		if err != nil {
			t.Fatal(err)
		}
		if h.Clock == nil || hm.Clock == nil || hm.Clock.Source != "adjtimex" || (hm.Clock.Error == "" && hm.Clock.BootID == "") || h.Clock.BootID != hm.Clock.BootID {
			t.Errorf("host %s: clock %+v in its manifest, %+v in the merged one; want the adjtimex reading with a boot id in both", h.Dir, hm.Clock, h.Clock)
		}
	}
}

// captureAll runs the three hosts' captures of run to their end and merges and reports them
// into root/merged; it checks the merged run (checkFullRun) and returns the host directories.
func captureAll(t *testing.T, run, root string, mk hostCmd) []string {
	t.Helper()
	hs, _ := startHosts(t, run, filepath.Join(root, "full"), mk)
	var dirs []string
	for _, h := range hs {
		if err := h.wait(t); err != nil {
			t.Fatalf("capture %s: %v\n%s", h.dir, err, h.errb.String())
		}
		dirs = append(dirs, h.dir)
	}
	merged := filepath.Join(root, "merged")
	m, stages, _ := mergeAndReport(t, merged, dirs...)
	checkFullRun(t, run, merged, m, stages)
	return dirs
}

// checkFullRun checks a merged run of every host: every planned request exactly once, from
// every host, and the stage rates on target.
func checkFullRun(t *testing.T, run, merged string, m *schemas.Manifest, stages []schemas.Stage) {
	t.Helper()
	planned := plannedSeqs(t, run)
	counts, rows := mergedCounts(t, merged)
	for seq := range planned {
		if counts[seq] != 1 {
			t.Errorf("seq %d appears %d times in the merged metrics; want once", seq, counts[seq])
		}
	}
	perShard := map[int32]int{}
	for _, r := range rows {
		if _, ok := planned[r.Seq]; !ok {
			t.Errorf("seq %d in the merged metrics was not planned", r.Seq)
		}
		if !r.OK {
			t.Errorf("seq %d failed: %s (status %d)", r.Seq, r.ErrorKind, r.Status)
		}
		perShard[r.Shard]++
	}
	if len(perShard) != hosts {
		t.Errorf("requests per shard %v; want every one of the %d hosts", perShard, hosts)
	}
	// Rates: a constant stage's planned sends are evenly spaced, so its planned rate is the
	// target. The achieved rate (sends − 1) / (last S − first S) errs by the difference between
	// the last and the first send's lateness over the window: 2% of the 2 s stage is 39 ms, far
	// more than a worker's lateness even on a loaded 2-CPU machine (a few ms), and a third of
	// the load missing or counted twice would move it by 33%.
	for i, want := range []struct {
		n    int64
		rate float64
	}{{80, 40}, {240, 80}} {
		s := stages[i]
		if s.Requests != want.n || s.Missing != "" || s.LoadBlame == schemas.BlameMissing {
			t.Errorf("stage %d: %d requests, missing %q, blame %q; want %d, nothing missing", i, s.Requests, s.Missing, s.LoadBlame, want.n)
		}
		if d := val(s.PlannedRate)/want.rate - 1; d > 1e-3 || d < -1e-3 {
			t.Errorf("stage %d: planned rate %.3f/s; want the target %.0f/s", i, val(s.PlannedRate), want.rate)
		}
		if d := val(s.AchievedRate)/want.rate - 1; d > 0.02 || d < -0.02 {
			t.Errorf("stage %d: merged achieved rate %.3f/s; want %.0f/s within 2%%", i, val(s.AchievedRate), want.rate)
		}
		if s.ClockUncertaintyNs != 0 {
			t.Errorf("stage %d: clock_uncertainty_ns %d; want 0 on one machine", i, s.ClockUncertaintyNs)
		}
	}
	if m.Status != schemas.StatusComplete || len(m.Missing) != 0 || len(m.Hosts) != hosts {
		t.Errorf("merged manifest: status %q, missing %q, %d hosts; want complete, none, %d", m.Status, m.Missing, len(m.Hosts), hosts)
	}
	checkClocks(t, m)
	html, err := os.ReadFile(filepath.Join(merged, "report", "index.html"))
	if err != nil || !strings.Contains(string(html), fmt.Sprintf("(%d hosts)", hosts)) {
		t.Errorf("merged report: %v; want index.html naming the %d hosts", err, hosts)
	}
}

func TestMultiHostEndToEnd(t *testing.T) {
	url := startSim(t, "--ttft", "10ms", "--itl", "2ms")
	root := t.TempDir()
	run := replayRun(t, root, url)
	if m, err := schemas.ReadManifest(filepath.Join(run, schemas.ManifestName)); err != nil || m.Clock == nil {
		t.Fatalf("replay's manifest: %v, clock %+v; want its clock state", err, m)
	}
	planned := plannedSeqs(t, run)
	dirs := captureAll(t, run, root, onLoopback)
	saveArtifact(t, filepath.Join(root, "merged"), "multihost-report")

	// A host that never started: only two of the three directories, or a third that holds only
	// replay's output.
	replayOnly := hostCopy(t, run, filepath.Join(root, "never"))
	for _, tc := range []struct {
		name string
		dirs []string
		miss []string
	}{
		{"two of three", dirs[:2], []string{"shard 2/3: no host directory given"}},
		{"replay output only", []string{dirs[0], dirs[1], replayOnly}, []string{replayOnly + ": never captured", "shard 2/3: no host directory given"}},
	} {
		out := filepath.Join(root, strings.ReplaceAll(tc.name, " ", "-"))
		m, stages, stdout := mergeAndReport(t, out, tc.dirs...)
		all := strings.Join(m.Missing, "\n")
		for _, want := range tc.miss {
			if !strings.Contains(all, want) {
				t.Errorf("%s: merged missing %q; want %q named", tc.name, m.Missing, want)
			}
		}
		if m.Status != schemas.StatusFailed {
			t.Errorf("%s: merged status %q; want failed", tc.name, m.Status)
		}
		counts, _ := mergedCounts(t, out)
		for i, s := range stages {
			var lost int64
			for seq, st := range planned {
				if st == s.Stage && counts[seq] == 0 {
					lost++
				}
			}
			want := fmt.Sprintf("shard 2/3 not captured by any host given: its %d planned requests are missing", lost)
			if lost == 0 || !strings.Contains(s.Missing, want) || s.LoadDelivered || s.LoadBlame != schemas.BlameMissing {
				t.Errorf("%s: stage %d missing %q, delivered %v, blame %q; want %q, not delivered, blamed on missing", tc.name, i, s.Missing, s.LoadDelivered, s.LoadBlame, want)
			}
		}
		if !strings.Contains(stdout, "LOAD NOT DELIVERED (part of the planned load is missing: shard 2/3") {
			t.Errorf("%s: aggregate's stage lines do not flag the missing shard:\n%s", tc.name, stdout)
		}
		summary, _ := os.ReadFile(filepath.Join(out, "report", "summary.md"))
		if !strings.Contains(string(summary), "shard 2/3") {
			t.Errorf("%s: summary.md does not name shard 2/3:\n%s", tc.name, summary)
		}
	}
	if _, _, err := wirebench(t, 60*time.Second, "aggregate", dirs[0], dirs[1], "-o", filepath.Join(root, "strict"), "--strict"); err == nil {
		t.Error("aggregate --strict with a host missing: want an error")
	}
}

// TestMultiHostKilledHost kills one host's capture (kill -9 of its coordinator) in the second
// stage: the merged run names it in missing and flags the second stage, not the first.
func TestMultiHostKilledHost(t *testing.T) {
	url := startSim(t, "--ttft", "10ms", "--itl", "2ms")
	root := t.TempDir()
	run := replayRun(t, root, url)
	planned := plannedSeqs(t, run)
	hs, start := startHosts(t, run, root, onLoopback)
	// Half a second into stage 1 (stage 0 is 2 s): host 1 has sent all of stage 0 and a sixth
	// of stage 1.
	time.Sleep(time.Until(start.Add(2500 * time.Millisecond)))
	victim := hs[1]
	workers := children(victim.cmd.Process.Pid, "worker")
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	victim.wait(t)
	// Its orphaned worker sees its stdin close, closes its open part and exits.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		alive := 0
		for _, pid := range workers {
			if syscall.Kill(pid, 0) == nil {
				alive++
			}
		}
		if alive == 0 {
			break
		}
	}
	dirs := []string{hs[0].dir, victim.dir, hs[2].dir}
	for _, h := range []*host{hs[0], hs[2]} {
		if err := h.wait(t); err != nil {
			t.Fatalf("capture %s: %v\n%s", h.dir, err, h.errb.String())
		}
	}
	merged := filepath.Join(root, "merged")
	m, stages, _ := mergeAndReport(t, merged, dirs...)
	want := fmt.Sprintf("host %s (shard 1/3): capture did not finish", victim.dir)
	if !strings.Contains(strings.Join(m.Missing, "\n"), want) || m.Status != schemas.StatusFailed {
		t.Errorf("merged manifest: status %q, missing %q; want failed, with %q", m.Status, m.Missing, want)
	}
	counts, _ := mergedCounts(t, merged)
	for seq, n := range counts {
		if n != 1 {
			t.Errorf("seq %d appears %d times; want once", seq, n)
		}
	}
	var lost [2]int
	for seq, st := range planned {
		if counts[seq] == 0 {
			lost[st]++
		}
	}
	if lost[0] != 0 || stages[0].Missing != "" {
		t.Errorf("stage 0: %d planned requests not recorded, missing %q; want all there (host 1 was killed in stage 1)", lost[0], stages[0].Missing)
	}
	if lost[1] == 0 || !strings.Contains(stages[1].Missing, victim.dir+" (shard 1/3): capture did not finish") || stages[1].LoadDelivered {
		t.Errorf("stage 1: %d planned requests not recorded, missing %q, delivered %v; want some lost, host 1 named, not delivered", lost[1], stages[1].Missing, stages[1].LoadDelivered)
	}
	summary, _ := os.ReadFile(filepath.Join(merged, "report", "summary.md"))
	if !strings.Contains(string(summary), "capture did not finish") {
		t.Errorf("summary.md does not name the killed host:\n%s", summary)
	}
	saveArtifact(t, merged, "multihost-killed-report")
}

// netnsHosts makes a network namespace for the simulator and one for each host, host i joined
// to the simulator's by a veth pair of its own: 10.77.i.2 in the host, 10.77.i.1 on the
// simulator's side. Every address lives inside namespaces the test creates (and deletes); the
// machine's own network is not touched. It returns the namespaces' names.
func netnsHosts(t *testing.T) (srv string, hostNS []string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root (CAP_SYS_ADMIN): skipping the variant where each host has an address of its own; TestMultiHostEndToEnd runs the same hosts on loopback")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("iproute2's ip is not installed: skipping the network-namespace variant (Debian: apt-get install iproute2)")
	}
	ip := func(args ...string) error {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	prefix := fmt.Sprintf("wb%d", os.Getpid())
	srv = prefix + "-srv"
	if err := ip("netns", "add", srv); err != nil {
		t.Skipf("cannot create a network namespace here (%v): skipping the network-namespace variant", err)
	}
	t.Cleanup(func() { ip("netns", "del", srv) })
	for i := range hosts {
		ns := fmt.Sprintf("%s-h%d", prefix, i)
		if err := ip("netns", "add", ns); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ip("netns", "del", ns) })
		hostNS = append(hostNS, ns)
		side := fmt.Sprintf("h%d", i)
		for _, args := range [][]string{
			{"link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", side, "netns", srv},
			{"-n", ns, "addr", "add", fmt.Sprintf("10.77.%d.2/24", i), "dev", "eth0"},
			{"-n", srv, "addr", "add", fmt.Sprintf("10.77.%d.1/24", i), "dev", side},
			{"-n", ns, "link", "set", "eth0", "up"},
			{"-n", ns, "link", "set", "lo", "up"},
			{"-n", srv, "link", "set", side, "up"},
		} {
			if err := ip(args...); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := ip("-n", srv, "link", "set", "lo", "up"); err != nil {
		t.Fatal(err)
	}
	return srv, hostNS
}

// TestMultiHostNetns is TestMultiHostEndToEnd's full run with each host in a network namespace
// of its own, reaching the simulator over its own veth link from its own address.
func TestMultiHostNetns(t *testing.T) {
	srv, hostNS := netnsHosts(t)
	var errb syncBuffer
	_, stop, err := simproc.Start("ip", []string{"netns", "exec", srv, binary, "sim", "--listen", "0.0.0.0:8000", "--ttft", "10ms", "--itl", "2ms"}, -1, &errb, slog.Default())
	if err != nil {
		t.Fatalf("%v; stderr:\n%s", err, errb.String())
	}
	t.Cleanup(stop)
	root := t.TempDir()
	run := replayRun(t, root, "http://10.77.0.1:8000")
	inNetns := func(i int, args []string) *exec.Cmd {
		// Host i reaches the simulator only over its own link.
		args = append(args, "--target", fmt.Sprintf("http://10.77.%d.1:8000", i))
		return exec.Command("ip", append([]string{"netns", "exec", hostNS[i], binary}, args...)...)
	}
	captureAll(t, run, root, inNetns)
	for i := range hosts {
		m, err := schemas.ReadManifest(filepath.Join(root, "full", fmt.Sprintf("host%d", i), schemas.ManifestName))
		if err != nil {
			t.Fatal(err)
		}
		// Root has CAP_NET_RAW: each host's tap runs on its own namespace's link.
		if m.Tap == nil || !m.Tap.On || m.Tap.Packets == 0 {
			t.Errorf("host %d: packet tap %+v; want it on in its namespace, with packets", i, m.Tap)
		}
	}
}
