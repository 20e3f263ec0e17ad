package capture

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/wirebench/wirebench/internal/construn"
	"github.com/wirebench/wirebench/internal/cpuset"
	"github.com/wirebench/wirebench/schemas"
)

// idleThreads lists the threads of process pid that run with the SCHED_IDLE policy, with the
// CPUs each may run on.
func idleThreads(t *testing.T, pid int) map[int][]int {
	t.Helper()
	out := map[int][]int{}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return out // the process is gone
	}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		attr, err := unix.SchedGetAttr(tid, 0)
		if err != nil || attr.Policy != unix.SCHED_IDLE {
			continue
		}
		var set unix.CPUSet
		if unix.SchedGetaffinity(tid, &set) != nil {
			continue
		}
		out[tid] = cpuset.List(&set)
	}
	return out
}

// runningIdle lists the SCHED_IDLE threads of process pid that are runnable (state R).
func runningIdle(t *testing.T, pid int) (tids []int) {
	t.Helper()
	for tid := range idleThreads(t, pid) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
		if err == nil && strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))[0] == "R" {
			tids = append(tids, tid)
		}
	}
	return tids
}

// startKeepAwake starts this test binary as `keep-awake --cpus cpus` (see TestMain).
func startKeepAwake(t *testing.T, cpus string) (cmd *exec.Cmd, stdin io.WriteCloser, stdout *bufio.Reader, stderr *bytes.Buffer) {
	t.Helper()
	cmd = exec.Command(testExe(t), "keep-awake", "--cpus", cpus)
	stderr = new(bytes.Buffer)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, stdin, bufio.NewReader(out), stderr
}

func TestKeepAwakeSpinsAtIdlePriorityUntilEOF(t *testing.T) {
	cpus, _, err := cpuset.Allowed()
	if err != nil {
		t.Fatal(err)
	}
	cpu := cpus[len(cpus)-1]
	cmd, stdin, stdout, stderr := startKeepAwake(t, strconv.Itoa(cpu))
	if line, err := stdout.ReadString('\n'); line != "ready\n" {
		t.Fatalf("keep-awake wrote %q (%v, stderr %q); want ready", line, err, stderr)
	}
	pid := cmd.Process.Pid
	// A spinner is runnable (state R) nearly all the time, at SCHED_IDLE, pinned to cpu: the
	// runtime's preemption every 10 ms parks it briefly, so look a few times. (Threads the
	// runtime starts from it inherit its policy and mask; they sleep like any idle thread.)
	running := false
	for end := time.Now().Add(2 * time.Second); !running && time.Now().Before(end); time.Sleep(time.Millisecond) {
		running = len(runningIdle(t, pid)) > 0
	}
	if !running {
		t.Errorf("no running SCHED_IDLE thread in keep-awake within 2 s of ready")
	}
	for tid, on := range idleThreads(t, pid) {
		if !slices.Equal(on, []int{cpu}) {
			t.Errorf("SCHED_IDLE thread %d may run on CPUs %v; want only %d", tid, on, cpu)
		}
	}
	stdin.Close() // EOF: what the coordinator's end (or death) gives the spinner process
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("keep-awake exited with %v after EOF (stderr %q); want 0", err, stderr)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("keep-awake still running 5 s after EOF")
	}
}

func TestKeepAwakeNamesABadCPU(t *testing.T) {
	cmd, _, stdout, stderr := startKeepAwake(t, "4095")
	line, _ := stdout.ReadString('\n')
	err := cmd.Wait()
	if line != "" || err == nil || !strings.Contains(stderr.String(), "CPU 4095") {
		t.Fatalf("keep-awake on CPU 4095: wrote %q, exit %v, stderr %q; want nothing, a failure, an error naming CPU 4095", line, err, stderr)
	}
}

// awakeChildren returns the keep-awake processes whose parent is this process.
func awakeChildren() []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmd, []byte("\x00keep-awake\x00")) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestRunKeepsPinnedCPUsAwake(t *testing.T) {
	if _, ok := cpuset.CgroupQuota(); ok {
		t.Skip("a cgroup CPU quota applies here: capture does not keep CPUs awake under one")
	}
	srv := sseServer(t, time.Millisecond)
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("keep-awake=%v", !off), func(t *testing.T) {
			run := t.TempDir()
			if err := construn.Write(run, schemas.Target{URL: srv.URL, API: "completions", Model: "m"},
				[]construn.Stage{{Rate: 50, Duration: 1500 * time.Millisecond, MaxTokens: 2}}); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				done <- Run(context.Background(), Config{Run: run, Workers: 2, Exe: testExe(t), CoordOptions: CoordOptions{Quiet: true, KeepAwake: !off}}, testLog(t))
			}()
			seen := map[int][]int{} // spinner process -> CPUs of its SCHED_IDLE threads
			for running := true; running; {
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("Run = %v", err)
					}
					running = false
				case <-time.After(20 * time.Millisecond):
					for _, pid := range awakeChildren() {
						for _, on := range idleThreads(t, pid) {
							seen[pid] = append(seen[pid], on...)
						}
					}
				}
			}
			if off {
				if len(seen) != 0 {
					t.Errorf("keep-awake processes %v without KeepAwake; want none", seen)
				}
				return
			}
			cpus, _, err := cpuset.Allowed()
			if err != nil {
				t.Fatal(err)
			}
			want := slices.Compact(slices.Sorted(slices.Values([]int{cpus[0], cpus[1%len(cpus)]})))
			if len(seen) != 1 {
				t.Fatalf("saw keep-awake processes %v during the run; want one", seen)
			}
			for pid, on := range seen {
				got := slices.Compact(slices.Sorted(slices.Values(on)))
				if !slices.Equal(got, want) {
					t.Errorf("keep-awake %d spun on CPUs %v; want the workers' CPUs %v", pid, got, want)
				}
			}
			if left := awakeChildren(); len(left) != 0 {
				t.Errorf("keep-awake processes %v still running after Run returned; want none", left)
			}
		})
	}
}

func TestCountCPUList(t *testing.T) {
	for in, want := range map[string]int{"0\n": 1, "0-1\n": 2, "0-3,6": 5, "0-3,8-11\n": 8} {
		if n, ok := countCPUList(in); !ok || n != want {
			t.Errorf("countCPUList(%q) = %d, %v; want %d", in, n, ok, want)
		}
	}
	for _, in := range []string{"", "x", "3-1", "0-"} {
		if n, ok := countCPUList(in); ok {
			t.Errorf("countCPUList(%q) = %d, ok; want not ok", in, n)
		}
	}
}

func TestCrowded(t *testing.T) {
	// Two CPUs, both spinners running: only they are runnable (2), or one more thread, which the
	// other CPU holds (3): nobody waits. A fourth runnable thread waits for a CPU.
	for _, c := range []struct {
		runnable, spinning, cpus int
		want                     bool
	}{{2, 2, 2, false}, {3, 2, 2, false}, {4, 2, 2, true}, {2, 1, 2, false}, {3, 1, 2, true}, {1, 1, 1, false}, {2, 1, 1, true}} {
		if got := crowded(c.runnable, c.spinning, c.cpus); got != c.want {
			t.Errorf("crowded(runnable %d, spinning %d, cpus %d) = %v; want %v", c.runnable, c.spinning, c.cpus, got, c.want)
		}
	}
}

func TestRunQueueReadsLoadavg(t *testing.T) {
	path := filepath.Join(t.TempDir(), "loadavg")
	if err := os.WriteFile(path, []byte("0.50 0.40 0.30 3/345 12345\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rq, err := openRunQueue(path, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer rq.close()
	if n, err := rq.runnable(make([]byte, 128)); err != nil || n != 3 {
		t.Errorf("runnable = %d, %v; want 3", n, err)
	}
	bad := filepath.Join(t.TempDir(), "loadavg")
	if err := os.WriteFile(bad, []byte("0.50 0.40\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openRunQueue(bad, 1); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("openRunQueue(%s) = %v; want an error naming the file", bad, err)
	}
}
