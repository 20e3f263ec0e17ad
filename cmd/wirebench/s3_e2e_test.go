package main

// Run directories in object storage: `run -o s3://...` against the simulator and a real
// S3-compatible server (versitygw) on loopback, then aggregate and report from the bucket.

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/objstore"
	"github.com/wirebench/wirebench/internal/s3server"
	"github.com/wirebench/wirebench/schemas"
)

// s3Env starts versitygw and points this process's environment (so every wirebench the test
// starts) at it, with its own staging directory; it returns the server and that directory.
func s3Env(t *testing.T) (*s3server.Server, string) {
	t.Helper()
	srv := s3server.Start(t)
	for k, v := range srv.Env() {
		t.Setenv(k, v)
	}
	staging := t.TempDir()
	t.Setenv(EnvStaging, staging)
	return srv, staging
}

// openS3 opens url as the test's own client, to look into the bucket.
func openS3(t *testing.T, url string) objstore.Store {
	t.Helper()
	st, err := objstore.OpenS3(url)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// fetch downloads the run at url into a new local directory.
func fetch(t *testing.T, url string) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := objstore.Download(context.Background(), openS3(t, url), dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// watchBucket lists st every 100 ms until stop is closed and says whether it once saw raw
// parts in it without a manifest: parts uploaded while the capture measured, before the run
// was finished.
func watchBucket(st objstore.Store, stop <-chan struct{}) <-chan bool {
	seen := make(chan bool, 1)
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				seen <- false
				return
			case <-t.C:
			}
			objs, _ := st.List(context.Background())
			parts, manifest := 0, false
			for _, o := range objs {
				parts += btoi(strings.HasPrefix(o.Name, "raw/requests-"))
				manifest = manifest || o.Name == schemas.ManifestName
			}
			if parts > 0 && !manifest {
				seen <- true
				return
			}
		}
	}()
	return seen
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// s3SmokeRun runs examples/smoke.yaml with -o s3://BUCKET/runs/smoke against the simulator,
// parts rolled every second (no packet tap: examples/duckdb reads the client's times), and
// checks that parts reached the bucket while the capture measured, before the manifest. It
// returns the run's URL.
func s3SmokeRun(t *testing.T, srv *s3server.Server) string {
	t.Helper()
	url := startSim(t, "--ttft", "20ms", "--itl", "5ms")
	run := "s3://" + srv.Bucket + "/runs/smoke"
	stop := make(chan struct{})
	early := watchBucket(openS3(t, run), stop)
	out, stderr, err := wirebench(t, 120*time.Second, "run", "../../examples/smoke.yaml", "-o", run, "--target", url,
		"--part-interval", "1s", "--workers", "1", "--tap", "off", "--quiet")
	close(stop)
	if err != nil {
		t.Fatalf("run -o %s: %v\n%s", run, err, stderr)
	}
	if strings.Contains(stderr, srv.Secret) || strings.Contains(out, srv.Secret) {
		t.Errorf("run's output holds the secret access key")
	}
	if !<-early {
		t.Errorf("no raw part was in the bucket before the manifest: parts were not uploaded while the capture measured")
	}
	if want := "report: " + run + "/report/index.html"; !strings.Contains(out, want) {
		t.Errorf("run's output lacks %q:\n%s", want, out)
	}
	return run
}

// TestS3RunAggregateReport: `run -o s3://...`, then `aggregate` and `report` of the URL. The
// bucket holds the whole run, no lock, no temporary file and no secret, and the staging copies
// are gone; the numbers are the simulator's; a second writer is refused by the lock object.
func TestS3RunAggregateReport(t *testing.T) {
	srv, staging := s3Env(t)
	run := s3SmokeRun(t, srv)

	objs, err := openS3(t, run).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, o := range objs {
		have[o.Name] = true
		if objstore.Local(o.Name) {
			t.Errorf("bucket holds %s, a file that stays local (lock, reserve or temporary)", o.Name)
		}
	}
	for _, f := range []string{"manifest.json", "schedule/requests.parquet", "raw/workers.parquet", "metrics/stages.parquet", "metrics/requests.parquet", "report/index.html", "report/summary.md"} {
		if !have[f] {
			t.Errorf("bucket lacks %s/%s", run, f)
		}
	}

	// Aggregate and report again, from the bucket alone.
	out, stderr, err := wirebench(t, 60*time.Second, "aggregate", run)
	if err != nil || !strings.Contains(out, "stage constant-50rps:") {
		t.Fatalf("aggregate %s: %v\nstdout:\n%s\nstderr:\n%s", run, err, out, stderr)
	}
	out, stderr, err = wirebench(t, 60*time.Second, "report", run)
	if err != nil || !strings.Contains(out, "stage") {
		t.Fatalf("report %s: %v\nstdout:\n%s\nstderr:\n%s", run, err, out, stderr)
	}
	local := fetch(t, run)
	m := readManifest(t, local)
	var steps []string
	for _, s := range m.Steps {
		steps = append(steps, s.Name)
	}
	if got := strings.Join(steps, ","); got != "replay,capture,aggregate,report,aggregate,report" {
		t.Errorf("manifest steps in the bucket %s; want replay,capture,aggregate,report,aggregate,report", got)
	}
	stages, err := schemas.ReadFile[schemas.Stage](filepath.Join(local, "metrics", "stages.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int64{100, 250} { // 20/s and 50/s for 5 s
		if i >= len(stages) || stages[i].Completed != want {
			t.Fatalf("stages from the bucket: %+v; want %d completed in stage %d", stages, want, i)
		}
		if p50 := time.Duration(val(stages[i].TTFT.P50)); p50 < 20*time.Millisecond || p50 > 30*time.Millisecond {
			t.Errorf("stage %d: TTFT p50 %v; want 20-30 ms (the simulator's 20 ms)", i, p50)
		}
	}
	filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
		if b, _ := os.ReadFile(p); err == nil && !d.IsDir() && bytes.Contains(b, []byte(srv.Secret)) {
			t.Errorf("%s holds the secret access key", p)
		}
		return nil
	})
	if ents, _ := os.ReadDir(staging); len(ents) != 0 {
		t.Errorf("staging directory %s still holds %d entries; want every copy removed", staging, len(ents))
	}

	// A run held by another host's command: a writer fails at once naming it.
	lock := `{"pid":4242,"host":"capture-pod-0","command":["capture","` + run + `"],"since":"2026-01-02T15:04:05Z"}`
	if err := openS3(t, run).Create(context.Background(), schemas.LockName, []byte(lock)); err != nil {
		t.Fatal(err)
	}
	_, stderr, err = wirebench(t, 60*time.Second, "aggregate", run)
	if err == nil || !strings.Contains(stderr, "run directory in use: pid 4242 on capture-pod-0 (wirebench capture "+run+")") {
		t.Errorf("aggregate of a locked run: %v; want a failure naming pid 4242 on capture-pod-0\n%s", err, stderr)
	}
}

// TestS3UploadFailureKeepsTheRun stops the S3 server while a run into it captures, after its
// first parts went up: the run still measures to its end, then fails (exit 1) naming the local
// staging copy, which holds the whole run, aggregated and reported. The bucket, once the server
// is back, holds whole parts and no manifest: the manifest goes last.
func TestS3UploadFailureKeepsTheRun(t *testing.T) {
	srv, _ := s3Env(t)
	url := startSim(t, "--ttft", "5ms", "--itl", "2ms")
	cfg := smallConfig(t, t.TempDir(), "cut", 20, 10*time.Second, "")
	run := "s3://" + srv.Bucket + "/runs/cut"
	cmd, _, stderr := startWirebench(t, "run", cfg, "-o", run, "--target", url, "--part-interval", "1s", "--workers", "1", "--tap", "off", "--quiet")
	st := openS3(t, run)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		objs, _ := st.List(context.Background())
		if slices.ContainsFunc(objs, func(o objstore.Object) bool { return strings.HasPrefix(o.Name, "raw/requests-") }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no part in %s 30 s after the start\n%s", run, stderr)
		}
	}
	srv.Stop()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("run did not end 3 minutes after its S3 server went away\n%s", stderr)
	}
	if cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("run whose S3 server went away: %v; want exit status 1\n%s", err, stderr)
	}
	m := regexp.MustCompile(`upload ` + regexp.QuoteMeta(run) + `: .*\(the run is whole in (\S+)\)`).FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("stderr does not name the kept staging copy:\n%s", stderr)
	}
	kept := readManifest(t, m[1])
	if kept.Status != schemas.StatusComplete {
		t.Errorf("the kept copy's manifest says %q; want complete", kept.Status)
	}
	if _, err := os.Stat(filepath.Join(m[1], "report", "index.html")); err != nil {
		t.Errorf("the kept copy has no report: %v", err)
	}

	srv.Restart(t)
	objs, err := st.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	parts := 0
	for _, o := range objs {
		switch {
		case o.Name == schemas.ManifestName:
			t.Errorf("the bucket holds a manifest although the run's upload failed: the manifest must go last")
		case strings.HasPrefix(o.Name, "raw/requests-"):
			parts++
			got := filepath.Join(t.TempDir(), "part.parquet")
			if err := st.Get(context.Background(), o.Name, got); err != nil {
				t.Fatal(err)
			}
			if _, err := schemas.ReadFile[schemas.RawRequest](got); err != nil {
				t.Errorf("part %s in the bucket: %v; want a whole file", o.Name, err)
			}
		}
	}
	if parts == 0 {
		t.Errorf("the bucket holds no part: %v", objs)
	}
}

// TestS3Search runs a two-step search with -o s3://...: the bucket holds search.json and each
// step's run, whole (manifest, metrics), which report then draws from the bucket.
func TestS3Search(t *testing.T) {
	srv, _ := s3Env(t)
	url := startSim(t, "--ttft", "5ms", "--itl", "2ms")
	cfg := filepath.Join(t.TempDir(), "search.yaml")
	writeFile(t, cfg, `name: search-s3
target: {url: "`+url+`", api: completions, model: sim, ignore_eos: true}
workload: {synthetic: {input: {kind: fixed, value: 8}, output: {kind: fixed, value: 4}}}
slo: {ttft: 1s}
search: {min_rate: 2, max_rate: 4, duration: 1s, max_steps: 2}
`)
	dir := "s3://" + srv.Bucket + "/searches/one"
	stdout, stderr, err := wirebench(t, 4*time.Minute, "search", cfg, "-o", dir, "--workers", "1", "--tap", "off", "--quiet")
	if err != nil {
		t.Fatalf("search -o %s: %v\nstdout:\n%s\nstderr:\n%s", dir, err, stdout, stderr)
	}
	local := fetch(t, dir)
	var rec schemas.SearchRecord
	if b, err := os.ReadFile(filepath.Join(local, "search.json")); err != nil || json.Unmarshal(b, &rec) != nil || len(rec.Steps) == 0 {
		t.Fatalf("search.json from the bucket: %v, %+v; want its steps", err, rec)
	}
	step := dir + "/" + rec.Steps[0].Dir
	if m := readManifest(t, filepath.Join(local, rec.Steps[0].Dir)); m.Status != schemas.StatusComplete {
		t.Errorf("step %s's manifest in the bucket: status %q; want complete", step, m.Status)
	}
	if out, stderr, err := wirebench(t, time.Minute, "report", step, "-o", t.TempDir()); err != nil || !strings.Contains(out, "stage") {
		t.Errorf("report %s: %v\n%s\n%s", step, err, out, stderr)
	}
}
