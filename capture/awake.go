package capture

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/wirebench/wirebench/internal/cpuset"
	"golang.org/x/sys/unix"
)

// Keeping the workers' CPUs awake.
//
// An idle CPU halts, and a halted CPU is slow to wake: on a virtual machine its timer interrupt
// arrives when the host gets round to running the vCPU again, on bare metal it first leaves a
// sleep state. On the 2-vCPU VM of docs/measurements.md a thread sleeping to absolute times
// woke p99 1.4 ms late while the CPUs were otherwise idle, and 32 µs late with them kept busy;
// the pacer's wake-ups (and the readers') inherit that lateness as send lag.
//
// So with --keep-awake, for the length of a capture, each worker's CPU runs a spinner at
// SCHED_IDLE priority: it runs only when nothing else wants the CPU, and any other thread that
// wakes preempts it at once, so the CPU never halts (for what it still costs, see below). It
// spins with the CPU's
// pause instruction (spinPause), which leaves the core's resources to a hyperthread sibling.
//
// The spinners live in their own process (`wirebench keep-awake`), not in the workers: a Go
// thread spinning inside a worker would hold one of its Ps, and a stop-the-world would then
// wait for a thread the kernel runs only when the CPU is otherwise idle.
//
// A cgroup CPU quota counts SCHED_IDLE time too, so under a quota (a container with a CPU
// limit) the spinner would throttle the workers; the coordinator then does not start it. The
// same holds one level up, where no guest can see it: a VM whose host caps its CPU time, or a
// burstable instance spending CPU credits. So it is opt-in (--keep-awake), for clients with CPUs
// of their own. (A first version without the nap below cut send lag p99 to 0.1-0.4 ms up to
// 2,000 req/s on that VM but stalled for up to seconds at 5,000 req/s.)

// KeepAwake spins on each of cpus at SCHED_IDLE priority until until reaches EOF (the
// coordinator closes the pipe, or dies). It writes "ready\n" to ready once every spinner is in
// place, or returns the error that stopped one; it returns once every spinner has stopped.
func KeepAwake(cpus []int, until io.Reader, ready io.Writer) error {
	if len(cpus) == 0 {
		return errors.New("keep-awake: no CPUs given")
	}
	runtime.GOMAXPROCS(len(cpus) + 1)
	rq, err := openRunQueue("/proc/loadavg", len(cpus))
	if err != nil {
		return err
	}
	defer rq.close()
	var quit atomic.Bool
	var wg sync.WaitGroup
	defer wg.Wait()
	defer quit.Store(true)
	errs := make(chan error, len(cpus))
	for _, cpu := range cpus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Never unlocked: the thread, now pinned and at idle priority, ends with the goroutine.
			runtime.LockOSThread()
			if err := idleOn(cpu); err != nil {
				errs <- err
				return
			}
			errs <- nil
			rq.spin(&quit)
		}()
	}
	for range cpus {
		if err := <-errs; err != nil {
			return err
		}
	}
	if _, err := io.WriteString(ready, "ready\n"); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, until)
	return nil
}

// A CPU that always has a runnable task never looks for waiting threads to pull from a busier
// CPU, as an idle one does; the periodic balancer was seen to leave a CPU running only its
// spinner for 600 ms while the other had the simulator's threads and a worker queued on it. So
// a spinner looks at the machine's run queues every spinWindow and, when more threads are
// runnable than there are CPUs to run them, sleeps for crowdedNap: its CPU goes idle and pulls.
const (
	spinWindow = 100 * time.Microsecond
	crowdedNap = 2 * time.Millisecond
)

// runQueue reads how many threads are runnable on the whole machine (/proc/loadavg).
type runQueue struct {
	f        *os.File
	cpus     int          // online CPUs
	spinners int32        // spinners in this process
	napping  atomic.Int32 // spinners asleep in crowdedNap
}

func openRunQueue(path string, spinners int) (*runQueue, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("keep-awake: %w", err)
	}
	rq := &runQueue{f: f, cpus: runtime.NumCPU(), spinners: int32(spinners)}
	if b, err := os.ReadFile("/sys/devices/system/cpu/online"); err == nil {
		if n, ok := countCPUList(string(b)); ok {
			rq.cpus = n
		}
	}
	if _, err := rq.runnable(make([]byte, 128)); err != nil {
		f.Close()
		return nil, fmt.Errorf("keep-awake: %s: %w", path, err)
	}
	return rq, nil
}

func (rq *runQueue) close() { rq.f.Close() }

// runnable returns the fourth field's numerator of /proc/loadavg ("0.50 0.40 0.30 3/345 123"):
// the threads running or waiting for a CPU right now.
func (rq *runQueue) runnable(buf []byte) (int, error) {
	n, err := rq.f.ReadAt(buf, 0)
	if n == 0 {
		return 0, err
	}
	f := strings.Fields(string(buf[:n]))
	if len(f) < 4 {
		return 0, fmt.Errorf("unexpected %q", buf[:n])
	}
	r, _, _ := strings.Cut(f[3], "/")
	return strconv.Atoi(r)
}

// spin keeps the calling (idle-priority, pinned) thread busy until quit, napping while threads
// wait for a CPU elsewhere. Its own CPU is free whenever it runs, so more runnable threads
// (not counting running spinners) than the other CPUs can hold means one of them is waiting.
func (rq *runQueue) spin(quit *atomic.Bool) {
	buf := make([]byte, 128)
	nap := unix.NsecToTimespec(int64(crowdedNap))
	for !quit.Load() {
		for end := time.Now().Add(spinWindow); time.Now().Before(end); {
			spinPause()
		}
		r, err := rq.runnable(buf)
		if err != nil || !crowded(r, int(rq.spinners-rq.napping.Load()), rq.cpus) {
			continue
		}
		rq.napping.Add(1)
		_ = unix.Nanosleep(&nap, nil)
		rq.napping.Add(-1)
	}
}

// crowded reports whether a thread waits for a CPU, seen from a spinner that is running (so
// its own CPU is free): runnable threads on the machine, less the running spinners, are more
// than the other CPUs can hold.
func crowded(runnable, spinning, cpus int) bool { return runnable-spinning > cpus-1 }

// countCPUList counts the CPUs in a kernel CPU list ("0-3,6\n" is 5).
func countCPUList(s string) (int, bool) {
	n := 0
	for _, r := range strings.Split(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, false
		}
		z := a
		if isRange {
			if z, err = strconv.Atoi(hi); err != nil || z < a {
				return 0, false
			}
		}
		n += z - a + 1
	}
	return n, n > 0
}

// idleOn pins the calling thread to cpu and gives it the SCHED_IDLE policy (allowed without
// privileges: it only lowers the thread's priority).
func idleOn(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("keep-awake: pin to CPU %d: %w", cpu, err)
	}
	if err := unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_IDLE}, 0); err != nil {
		return fmt.Errorf("keep-awake: SCHED_IDLE on CPU %d: %w", cpu, err)
	}
	return nil
}

// awake is a running keep-awake process.
type awake struct {
	cmd   *exec.Cmd
	stdin io.Closer
}

// startAwake starts `exe keep-awake` on cpus and waits until its spinners are in place.
func startAwake(exe string, cpus []int) (*awake, error) {
	list := make([]string, len(cpus))
	for i, c := range cpus {
		list[i] = strconv.Itoa(c)
	}
	cmd := exec.Command(exe, "keep-awake", "--cpus", strings.Join(list, ","))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // stopped by us, not by a terminal's Ctrl-C
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	a := &awake{cmd: cmd, stdin: stdin}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case s := <-line:
		if s == "ready\n" {
			return a, nil
		}
	case <-time.After(5 * time.Second):
	}
	a.stop()
	return nil, errors.New("keep-awake process did not start (see its error above)")
}

// stop ends the spinners: EOF on their stdin.
func (a *awake) stop() {
	_ = a.stdin.Close()
	done := make(chan struct{})
	go func() { _ = a.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		_ = a.cmd.Process.Kill()
		<-done
	}
}

// keepAwake starts spinners on the CPUs workers are pinned to, unless a cgroup CPU quota
// applies. It returns nil (and says why) when it does not.
func keepAwake(exe string, pinned []int, log *slog.Logger) *awake {
	cpus := slices.Clone(pinned)
	slices.Sort(cpus)
	cpus = slices.Compact(cpus)
	if len(cpus) == 0 {
		return nil
	}
	if q, ok := cpuset.CgroupQuota(); ok {
		log.Info("worker CPUs not kept awake: a cgroup CPU quota applies and the spinners' time would count against it", "quota_cpus", q)
		return nil
	}
	a, err := startAwake(exe, cpus)
	if err != nil {
		log.Warn("worker CPUs not kept awake: send lag may be higher on an otherwise idle machine", "err", err)
		return nil
	}
	log.Info("worker CPUs kept awake (SCHED_IDLE spinner, --keep-awake)", "cpus", cpus)
	return a
}
