package colocate

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of /proc/stat and /proc/PID/stat times: USER_HZ, 100 on every Linux
// architecture Go supports (the kernel converts to it whatever its own HZ).
const userHZ = 100

// CPUTimes is a reading of the machine's CPUs: how many are online and how long they have been
// idle since boot, summed over them (/proc/stat's "cpu" line), with the time it was taken.
//
// Busy time is what the window's CPU time leaves idle: CPUs × wall − idle. /proc/stat's busy
// columns (user, system, softirq...) are not used: the kernel samples them at its clock tick, and
// a tickless CPU that goes idle between short bursts is rarely busy when a tick falls. Beside a
// simulator at 2,000 requests/s × 64 tokens they gave 2.0 s of busy time over an 8.8 s window
// where the simulator and the client alone used 8.3 s, by their own precise counts; idle and
// iowait are counted at every idle entry and exit, and gave 8.9 s.
type CPUTimes struct {
	CPUs   int       // online CPUs: the cpuN lines
	IdleNs int64     // idle + iowait
	At     time.Time // when it was read (its monotonic clock reading measures the window)
}

// ReadCPUTimes reads /proc/stat.
func ReadCPUTimes() (CPUTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUTimes{}, err
	}
	t, err := parseStat(string(b))
	t.At = time.Now()
	return t, err
}

// BusySince returns the CPU time the machine was busy since prev, summed over its CPUs, and all
// of its CPU time in that window (CPUs × wall), both in nanoseconds.
func (t CPUTimes) BusySince(prev CPUTimes) (busy, total int64) {
	total = int64(t.CPUs) * int64(t.At.Sub(prev.At))
	busy = min(max(total-(t.IdleNs-prev.IdleNs), 0), total)
	return busy, total
}

// parseStat parses /proc/stat's cpu lines.
func parseStat(s string) (CPUTimes, error) {
	var t CPUTimes
	found := false
	for line := range strings.SplitSeq(s, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		if f[0] != "cpu" {
			t.CPUs++
			continue
		}
		if len(f) < 6 {
			return t, fmt.Errorf("/proc/stat: cpu line %q: want 5 or more fields", line)
		}
		var v [5]int64
		for i := range v {
			n, err := strconv.ParseInt(f[i+1], 10, 64)
			if err != nil {
				return t, fmt.Errorf("/proc/stat: cpu line %q: %w", line, err)
			}
			v[i] = n * (1e9 / userHZ)
		}
		t.IdleNs = v[3] + v[4] // idle, iowait
		found = true
	}
	if !found {
		return t, fmt.Errorf("/proc/stat: no cpu line")
	}
	return t, nil
}

// ProcessCPU returns the user + system CPU time process pid has used (all its threads), in
// nanoseconds, from /proc/PID/stat.
func ProcessCPU(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state): utime and stime are fields 14 and 15
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return (u + st) * (1e9 / userHZ), nil
}
