package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/construn"
	"github.com/wirebench/wirebench/schemas"
)

// smallDisk mounts a tmpfs of size bytes and returns its path; it skips the test where mounting
// is not permitted.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("mounting a %s tmpfs needs CAP_SYS_ADMIN (root): %v", size, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// A run whose disk fills up (a 400 kB tmpfs as the run directory): it fails with an error
// naming the file it could not write, exits non-zero, the manifest says failed and why, and
// every file under its final name is whole (each Parquet file opens, the manifest parses).
func TestRunOnFullDisk(t *testing.T) {
	disk := smallDisk(t, "400k")
	url := startSim(t, "--ttft", "5ms", "--itl", "1ms")
	cfg := filepath.Join(captureRun(t, url, construn.Stage{Rate: 100, Duration: 5 * time.Second, InputTokens: 16, MaxTokens: 64}), "constant.yaml")
	out := filepath.Join(disk, "run")
	_, stderr, err := wirebench(t, time.Minute, "run", cfg, "-o", out, "--workers", "1", "--tap", "off", "--quiet", "--part-interval", "500ms")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("run on a full disk: %v; want a non-zero exit\n%s", err, stderr)
	}
	last := strings.TrimSpace(stderr[strings.LastIndex(strings.TrimSpace(stderr), "\n")+1:])
	if !strings.Contains(last, "no space left on device") || !strings.Contains(last, out+"/") || !strings.Contains(last, ".parquet") {
		t.Errorf("last error line %q; want the file it could not write and no space left on device", last)
	}
	m, err := schemas.ReadManifest(filepath.Join(out, schemas.ManifestName))
	if err != nil {
		t.Fatalf("manifest after a full disk: %v", err)
	}
	var why []string
	for _, st := range m.Steps {
		if st.Status == schemas.StatusFailed {
			why = append(why, st.Name+": "+st.Error)
		}
	}
	if m.Status != schemas.StatusFailed || !strings.Contains(strings.Join(why, "\n"), "no space left on device") {
		t.Errorf("manifest status %q, failed steps %q; want failed, naming the full disk", m.Status, why)
	}
	checkFinalFiles(t, out)
	if _, err := os.Stat(filepath.Join(out, schemas.ReserveName)); !os.IsNotExist(err) {
		t.Errorf("%s left behind (%v)", schemas.ReserveName, err)
	}
}

// checkFinalFiles opens every file of the run under its final name: Parquet files by their
// kind, JSON files as JSON; temporary files must be gone.
func checkFinalFiles(t *testing.T, run string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(run, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(run, path)
		name := d.Name()
		switch {
		case strings.Contains(name, ".tmp-"):
			t.Errorf("%s: a temporary file left behind", rel)
		case strings.HasSuffix(name, ".parquet"):
			n++
			if err := openParquet(path, rel); err != nil {
				t.Errorf("%s does not open: %v", rel, err)
			}
		case strings.HasSuffix(name, ".json"):
			var v any
			b, err := os.ReadFile(path)
			if err == nil {
				err = json.Unmarshal(b, &v)
			}
			if err != nil {
				t.Errorf("%s does not parse: %v", rel, err)
			}
		}
		return nil
	})
	if err != nil || n == 0 {
		t.Errorf("walk %s: %v, %d Parquet files; want some", run, err, n)
	}
}

// openParquet reads a run file with the row type of its kind.
func openParquet(path, rel string) error {
	base := filepath.Base(rel)
	var err error
	switch {
	case rel == filepath.Join("schedule", "requests.parquet"):
		_, err = schemas.ReadFile[schemas.ScheduleRequest](path)
	case rel == filepath.Join("schedule", "prompts.parquet"):
		_, err = schemas.ReadFile[schemas.Prompt](path)
	case strings.HasPrefix(rel, "raw") && strings.HasPrefix(base, "requests-"):
		_, err = schemas.ReadFile[schemas.RawRequest](path)
	case strings.HasPrefix(base, "chunks-"):
		_, err = schemas.ReadFile[schemas.RawChunk](path)
	case base == "workers.parquet":
		_, err = schemas.ReadFile[schemas.Worker](path)
	case rel == filepath.Join("metrics", "requests.parquet"):
		_, err = schemas.ReadFile[schemas.MetricRequest](path)
	case base == "stages.parquet":
		_, err = schemas.ReadFile[schemas.Stage](path)
	case base == "timeseries.parquet":
		_, err = schemas.ReadFile[schemas.Timeseries](path)
	case base == "breakdown.parquet":
		_, err = schemas.ReadFile[schemas.Breakdown](path)
	default:
		err = errors.New("unknown kind")
	}
	return err
}
