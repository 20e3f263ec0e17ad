// Package simproc runs the built-in simulator (`wirebench sim`) as a child process on loopback,
// optionally pinned to a CPU of its own, and stops it: calibrate, the interval benchmark and the
// end-to-end tests start their simulators with it. It imports internal/cpuset only.
package simproc

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
	"strings"
	"syscall"
	"time"

	"github.com/wirebench/wirebench/internal/cpuset"
	"golang.org/x/sys/unix"
)

// Start runs `exe args...` (args starting a `wirebench sim` that listens on 127.0.0.1:0),
// pinned to cpu when cpu >= 0, and returns the base URL it prints as its first stdout line and
// a function that stops it (SIGINT, then SIGKILL after 5 s). Calibration and the end-to-end
// tests start their simulators with it. The simulator runs with --exit-with-stdin and its
// standard input is a pipe only this process writes: should this process die without stopping
// it (a killed test binary or calibrate), the pipe closes and the simulator stops too.
func Start(exe string, args []string, cpu int, stderr io.Writer, log *slog.Logger) (string, func(), error) {
	lifeline, keep, err := os.Pipe()
	if err != nil {
		return "", nil, fmt.Errorf("start sim: %w", err)
	}
	defer lifeline.Close() // the child's copy stays open
	cmd := exec.Command(exe, append(slices.Clone(args), "--exit-with-stdin")...)
	cmd.Stdin = lifeline
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a terminal's Ctrl-C is ours to handle
	if cpu >= 0 {
		// GOMAXPROCS follows the affinity the runtime sees at start; one CPU, one P.
		cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		keep.Close()
		return "", nil, fmt.Errorf("start sim: %w", err)
	}
	if err := startPinned(cmd, cpu); err != nil {
		keep.Close()
		return "", nil, fmt.Errorf("start sim (%s): %w", exe, err)
	}
	stop := func() {
		defer keep.Close()
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- strings.TrimSpace(sc.Text())
		}
		close(lines)
		for sc.Scan() {
		}
	}()
	select {
	case url, ok := <-lines:
		if !ok || !strings.HasPrefix(url, "http://") {
			stop()
			return "", nil, fmt.Errorf("start sim: it printed %q, want its base URL", url)
		}
		if cpu >= 0 {
			if err := cpuset.PinTasks(cmd.Process.Pid, cpu); err != nil {
				log.Warn("pinning the simulator failed; it shares the CPUs", "cpu", cpu, "err", err)
			}
		}
		return url, stop, nil
	case <-time.After(20 * time.Second):
		stop()
		return "", nil, errors.New("start sim: no base URL after 20s")
	}
}

// startPinned starts cmd from an OS thread pinned to cpu, so the child inherits that mask from
// its first instruction (cpu < 0: start normally). The thread's mask is restored afterwards.
func startPinned(cmd *exec.Cmd, cpu int) error {
	if cpu < 0 {
		return cmd.Start()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return cmd.Start()
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return cmd.Start()
	}
	err := cmd.Start()
	_ = unix.SchedSetaffinity(0, &old)
	return err
}
