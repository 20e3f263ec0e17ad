package colocate

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// userHZ is the unit of /proc/stat and /proc/PID/stat times: USER_HZ, 100 on every Linux
// architecture Go supports (the kernel converts to it whatever its own HZ).
const userHZ = 100

// CPUTimes are the machine's CPU times since boot, summed over its online CPUs (/proc/stat's
// "cpu" line), in nanoseconds.
type CPUTimes struct {
	CPUs    int   // online CPUs: the cpuN lines
	BusyNs  int64 // user + nice + system + irq + softirq + steal (guest time is inside user)
	TotalNs int64 // BusyNs + idle + iowait
}

// ReadCPUTimes reads /proc/stat.
func ReadCPUTimes() (CPUTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUTimes{}, err
	}
	return parseStat(string(b))
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
		if len(f) < 9 {
			return t, fmt.Errorf("/proc/stat: cpu line %q: want 8 or more fields", line)
		}
		var v [8]int64
		for i := range v {
			n, err := strconv.ParseInt(f[i+1], 10, 64)
			if err != nil {
				return t, fmt.Errorf("/proc/stat: cpu line %q: %w", line, err)
			}
			v[i] = n * (1e9 / userHZ)
		}
		user, nice, system, idle, iowait, irq, softirq, steal := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
		t.BusyNs = user + nice + system + irq + softirq + steal
		t.TotalNs = t.BusyNs + idle + iowait
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
