// Package cpuset finds the CPUs this process may use and pins processes to them (capture's workers,
// the simulator calibrate and the tests start).
package cpuset

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Allowed returns the CPUs this process may run on (its affinity mask) and how many of them
// it may use at once: the mask's size capped by the cgroup v2 quota (cpu.max "quota period",
// rounded up). On a 64-core host in a container limited to 2 CPUs this is 2, not 64.
func Allowed() (cpus []int, usable int, err error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, 0, fmt.Errorf("read affinity mask: %w", err)
	}
	cpus = List(&set)
	usable = len(cpus)
	if q, ok := CgroupQuota(); ok && q < usable {
		usable = q
	}
	if usable < 1 {
		usable = 1
	}
	return cpus, usable, nil
}

// List returns the CPUs in set, in order.
func List(set *unix.CPUSet) []int {
	var cpus []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// CgroupQuota reads this process's cgroup v2 cpu.max and returns ceil(quota/period).
func CgroupQuota() (int, bool) {
	paths := []string{"/sys/fs/cgroup/cpu.max"}
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "0::"); ok {
				paths = append([]string{filepath.Join("/sys/fs/cgroup", rest, "cpu.max")}, paths...)
			}
		}
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		return parseCPUMax(string(b))
	}
	return 0, false
}

// parseCPUMax parses cgroup v2 cpu.max ("max 100000" or "150000 100000").
func parseCPUMax(s string) (int, bool) {
	f := strings.Fields(s)
	if len(f) != 2 || f[0] == "max" {
		return 0, false
	}
	q, err1 := strconv.ParseFloat(f[0], 64)
	p, err2 := strconv.ParseFloat(f[1], 64)
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
		return 0, false
	}
	return int(math.Ceil(q / p)), true
}

// PinProcess pins every thread of this process to cpu.
func PinProcess(cpu int) error { return PinTasks(os.Getpid(), cpu) }

// PinTasks pins every thread of process pid to cpu (twice, to catch threads started meanwhile;
// later threads inherit the mask of the pinned thread that creates them).
func PinTasks(pid, cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	for range 2 {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return fmt.Errorf("list threads of %d: %w", pid, err)
		}
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("pin thread %d to cpu %d: %w", tid, cpu, err)
			}
		}
	}
	return nil
}

// MaxCPUs is how many CPUs an affinity mask (unix.CPUSet, the kernel's CPU_SETSIZE) can name.
const MaxCPUs = len(unix.CPUSet{}) * int(unsafe.Sizeof(unix.CPUSet{}[0])) * 8

// ParseList parses the kernel's CPU list format ("0,2-3", as taskset -c and Cpus_allowed_list).
// CPU numbers run from 0 to MaxCPUs-1.
func ParseList(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		a, b, rng := strings.Cut(strings.TrimSpace(f), "-")
		lo, err := strconv.Atoi(a)
		hi := lo
		if err == nil && rng {
			hi, err = strconv.Atoi(b)
		}
		if err != nil || lo < 0 || hi < lo {
			return nil, fmt.Errorf("invalid CPU list %q: want CPU numbers and ranges, e.g. 0,2-3", s)
		}
		if hi >= MaxCPUs {
			return nil, fmt.Errorf("invalid CPU list %q: CPU %d is past the largest an affinity mask can name (%d)", s, hi, MaxCPUs-1)
		}
		for c := lo; c <= hi; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}
