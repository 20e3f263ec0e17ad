// Command scale measures `wirebench aggregate` on synthetic multi-host runs (internal/synthrun):
// for each host count it writes the run, aggregates it in a child process and reports wall time,
// CPU, rows per second and the child's peak RSS as a Markdown table on stdout (progress on
// stderr). `make bench-scale` runs it; figures in docs/measurements.md.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/wirebench/wirebench/internal/synthrun"
)

func main() {
	bin := flag.String("wirebench", "bin/wirebench", "the wirebench binary to measure")
	hostList := flag.String("hosts", "5,10,20", "host counts to measure, comma-separated")
	workers := flag.Int("workers", 4, "workers per host")
	rate := flag.Float64("rate", 5000, "requests per second per host")
	duration := flag.Duration("duration", 60*time.Second, "length of the run")
	dir := flag.String("dir", filepath.Join(os.TempDir(), "wirebench-scale"), "where the runs are written (each removed after its measurement unless -keep)")
	seed := flag.Uint64("seed", 1, "generator seed")
	keep := flag.Bool("keep", false, "keep the runs")
	flag.Parse()
	log.SetFlags(0)

	var hosts []int
	for f := range strings.SplitSeq(*hostList, ",") {
		h, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || h < 1 {
			log.Fatalf("-hosts %q: want positive integers separated by commas", *hostList)
		}
		hosts = append(hosts, h)
	}
	fmt.Printf("Machine: %s, %d CPUs, %s; %s; %s; load average before: %s\n\n", cpuModel(), runtime.NumCPU(), memTotal(), runtime.Version(), time.Now().UTC().Format(time.RFC3339), loadAvg())
	fmt.Println("| hosts | requests | chunk rows | Parquet on disk | generate | aggregate wall | aggregate CPU (user+sys) | chunk rows/s | requests/s | peak RSS |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	for _, h := range hosts {
		if err := measure(*bin, synthrun.Config{Dir: filepath.Join(*dir, fmt.Sprintf("h%02d", h)), Hosts: h, Workers: *workers,
			Rate: *rate, Duration: *duration, Seed: *seed}, *keep); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("\nLoad average after: %s\n", loadAvg())
}

// measure writes one run, aggregates it with a child `wirebench aggregate` and prints a row.
func measure(bin string, cfg synthrun.Config, keep bool) error {
	if err := os.RemoveAll(cfg.Dir); err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(cfg.Dir)
	}
	log.Printf("%d hosts: writing %s", cfg.Hosts, cfg.Dir)
	t0 := time.Now()
	res, err := synthrun.Write(cfg)
	if err != nil {
		return err
	}
	gen := time.Since(t0)
	log.Printf("%d hosts: %d requests, %d chunk rows, %.2f GB in %v; aggregating", cfg.Hosts, res.Requests, res.Chunks, float64(res.Bytes)/1e9, gen.Round(time.Second))

	args := append(append([]string{"aggregate"}, res.Dirs...), "-o", filepath.Join(cfg.Dir, "merged"))
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	t1 := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s aggregate: %w\n%s", bin, err, out.String())
	}
	wall := time.Since(t1)
	// The merged stage must hold every request: aggregate read every host.
	if want := fmt.Sprintf(": %d requests, %d ok,", res.Requests, res.Requests); !strings.Contains(out.String(), want) {
		return fmt.Errorf("aggregate printed:\n%s\nwant a stage line with %q", out.String(), want)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	fmt.Printf("| %d | %s | %s | %.2f GB | %.0f s | %.0f s | %.0f s | %s | %s | %d MB |\n", cfg.Hosts, thousands(res.Requests), thousands(res.Chunks),
		float64(res.Bytes)/1e9, gen.Seconds(), wall.Seconds(), cpu.Seconds(), thousands(int64(float64(res.Chunks)/wall.Seconds())),
		thousands(int64(float64(res.Requests)/wall.Seconds())), ru.Maxrss/1024)
	return nil
}

// thousands writes n with commas: 6,000,000.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func memTotal() string {
	b, _ := os.ReadFile("/proc/meminfo")
	var kb int64
	fmt.Sscanf(string(b), "MemTotal: %d kB", &kb)
	return fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
