package capture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/capture/internal/worker"
	"github.com/wirebench/wirebench/internal/construn"
	"github.com/wirebench/wirebench/schemas"
)

// The test binary doubles as the worker executable: Run starts `<test binary> worker`.
func TestMain(m *testing.M) {
	if len(os.Args) > 3 && os.Args[1] == "keep-awake" && os.Args[2] == "--cpus" { // as `wirebench keep-awake`
		var cpus []int
		for _, f := range strings.Split(os.Args[3], ",") {
			c, err := strconv.Atoi(f)
			if err != nil {
				fmt.Fprintln(os.Stderr, "keep-awake:", err)
				os.Exit(2)
			}
			cpus = append(cpus, c)
		}
		if err := KeepAwake(cpus, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		wp, err := ReadWorker(os.Stdin, os.Stdout)
		if err == nil {
			err = wp.Run(context.Background(), log)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// sseServer streams max_tokens completion chunks per request, itl apart, then usage and [DONE].
func sseServer(t *testing.T, itl time.Duration) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/completions") {
			fmt.Fprint(w, `{"data":[{"id":"m"}]}`)
			return
		}
		var body struct {
			MaxTokens int    `json:"max_tokens"`
			Prompt    string `json:"prompt"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i := range body.MaxTokens {
			if i > 0 && itl > 0 {
				time.Sleep(itl)
			}
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"t%d \"}]}\n\n", i)
			fl.Flush()
		}
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d}}\n\n", len(strings.Fields(body.Prompt)), body.MaxTokens)
		fmt.Fprint(w, "data: [DONE]\n\n")
		fl.Flush()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// quiet is the test captures' coordinator options: no progress output.
var quiet = CoordOptions{Quiet: true}

func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func testExe(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// readRaw reads every raw request and chunk part listed in the manifest, checking that the
// listed row counts match the files.
func readRaw(t *testing.T, run string, m *schemas.Manifest) ([]schemas.RawRequest, []schemas.RawChunk) {
	t.Helper()
	var reqs []schemas.RawRequest
	var chunks []schemas.RawChunk
	for _, f := range m.Files {
		p := filepath.Join(run, f.Path)
		switch f.Kind {
		case "raw-requests":
			rows, err := schemas.ReadFile[schemas.RawRequest](p)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(rows)) != f.Rows {
				t.Errorf("%s: %d rows; manifest says %d", f.Path, len(rows), f.Rows)
			}
			reqs = append(reqs, rows...)
		case "raw-chunks":
			rows, err := schemas.ReadFile[schemas.RawChunk](p)
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(rows)) != f.Rows {
				t.Errorf("%s: %d rows; manifest says %d", f.Path, len(rows), f.Rows)
			}
			chunks = append(chunks, rows...)
		}
	}
	return reqs, chunks
}

func TestRunSendsEveryPlannedRequestOnce(t *testing.T) {
	srv := sseServer(t, time.Millisecond)
	run := t.TempDir()
	const rate, maxTokens = 200, 5
	if err := construn.Write(run, schemas.Target{URL: srv.URL, API: "completions", Model: "m"},
		[]construn.Stage{{Rate: rate, Duration: time.Second, InputTokens: 8, MaxTokens: maxTokens}, {Rate: rate / 2, Duration: time.Second, InputTokens: 8, MaxTokens: maxTokens}}); err != nil {
		t.Fatal(err)
	}
	// PartRows small enough to roll several parts.
	err := Run(context.Background(), Config{Run: run, Workers: 2, Exe: testExe(t), Options: Options{PartRows: 400}, CoordOptions: quiet}, testLog(t))
	if err != nil {
		t.Fatalf("Run = %v; want nil", err)
	}
	m, err := schemas.ReadManifest(filepath.Join(run, schemas.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != schemas.StatusComplete || len(m.Missing) != 0 || m.StartNs == 0 {
		t.Errorf("manifest status %q, missing %q, start_ns %d; want complete, none, set", m.Status, m.Missing, m.StartNs)
	}
	reqs, chunks := readRaw(t, run, m)
	const want = rate + rate/2
	seen := map[int64]int{}
	workers := map[int32]bool{}
	for _, r := range reqs {
		seen[r.Seq]++
		workers[r.Worker] = true
		if r.ErrorKind != "" {
			t.Errorf("seq %d: error %s: %s", r.Seq, r.ErrorKind, r.ErrorMessage)
		}
		if r.PlannedNs < m.StartNs || r.SentNs < r.PlannedNs {
			t.Errorf("seq %d: planned %d sent %d start %d; want start <= planned <= sent", r.Seq, r.PlannedNs, r.SentNs, m.StartNs)
		}
		// The server reads the whole request before it answers: its first byte (kernel receive
		// time) cannot come before the write of the request's last byte began.
		if r.HeadersNs == nil || *r.HeadersNs < r.SentNs {
			t.Errorf("seq %d: headers at %v, sent %d; want the response after the send", r.Seq, r.HeadersNs, r.SentNs)
		}
		if r.UsageComplete == nil || *r.UsageComplete != maxTokens {
			t.Errorf("seq %d: usage completion tokens %v; want %d", r.Seq, r.UsageComplete, maxTokens)
		}
	}
	if len(reqs) != want || len(seen) != want {
		t.Errorf("%d request rows, %d distinct seqs; want %d each", len(reqs), len(seen), want)
	}
	if len(workers) != 2 {
		t.Errorf("requests came from workers %v; want 2 workers", workers)
	}
	content := map[int64]int{}
	for _, c := range chunks {
		if c.Kind == "content" {
			content[c.Seq]++
		}
	}
	for seq := range seen {
		if content[seq] != maxTokens {
			t.Errorf("seq %d: %d content chunks; want %d", seq, content[seq], maxTokens)
		}
	}
	parts := 0
	for _, f := range m.Files {
		if f.Kind == "raw-chunks" {
			parts++
		}
	}
	if parts < 3 {
		t.Errorf("%d chunk parts with part_rows 400 and %d chunks; want >= 3", parts, len(chunks))
	}
	wrows, err := schemas.ReadFile[schemas.Worker](filepath.Join(run, "raw", "workers.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(wrows) != 4 {
		t.Fatalf("workers.parquet has %d rows; want 2 workers x 2 stages", len(wrows))
	}
	var sent int64
	for _, w := range wrows {
		sent += w.Requests
		if w.WallNs <= 0 || w.CPUUserNs+w.CPUSysNs <= 0 || w.GOMAXPROCS != DefaultGOMAXPROCS {
			t.Errorf("worker row %+v: want wall > 0, cpu > 0, gomaxprocs %d", w, DefaultGOMAXPROCS)
		}
	}
	if sent != want {
		t.Errorf("workers.parquet requests sum %d; want %d", sent, want)
	}
}

// TestRunRecordsClockAndShard: the manifest records this host's name, its shard's plan per stage
// and its clock state (the worse of the readings at the start and at the end: here the clock
// loses its synchronisation during the run).
func TestRunRecordsClockAndShard(t *testing.T) {
	srv := sseServer(t, time.Millisecond)
	run := t.TempDir()
	if err := construn.Write(run, schemas.Target{URL: srv.URL, API: "completions", Model: "m"},
		[]construn.Stage{{Rate: 50, Duration: 400 * time.Millisecond, MaxTokens: 2}, {Rate: 100, Duration: 200 * time.Millisecond, MaxTokens: 2}}); err != nil {
		t.Fatal(err)
	}
	readings := []schemas.Clock{
		{Source: "adjtimex", Synchronized: true, State: "TIME_OK", MaxErrorNs: 1e5, BootID: "b"},
		{Source: "adjtimex", Synchronized: false, State: "TIME_ERROR", Status: 0x40, MaxErrorNs: 16e9, BootID: "b"},
	}
	reads := 0
	clock := func() schemas.Clock { c := readings[min(reads, 1)]; reads++; return c }
	if err := Run(context.Background(), Config{Run: run, Workers: 1, Shard: 1, Shards: 2, Exe: testExe(t), CoordOptions: quiet, Clock: clock}, testLog(t)); err != nil {
		t.Fatalf("Run = %v; want nil", err)
	}
	m, err := schemas.ReadManifest(filepath.Join(run, schemas.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if m.Shard != "1/2" || m.ShardPlanned[0] != 10 || m.ShardPlanned[1] != 10 || m.Host != host {
		t.Errorf("manifest shard %q, shard_planned %v, host %q; want 1/2, 10 and 10 (every other request), %q", m.Shard, m.ShardPlanned, m.Host, host)
	}
	if reads != 2 || m.Clock == nil || m.Clock.Synchronized || m.Clock.State != "TIME_ERROR" || m.Clock.MaxErrorNs != 16e9 {
		t.Errorf("%d clock reads, manifest clock %+v; want 2 reads and the unsynchronised one", reads, m.Clock)
	}
}

func TestRunStopsOnRefusedTarget(t *testing.T) {
	// A listener that is closed at once: its port refuses connections.
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	run := t.TempDir()
	if err := construn.Write(run, schemas.Target{URL: url, Model: "m"}, []construn.Stage{{Rate: 50, Duration: 60 * time.Second, MaxTokens: 4}}); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	err := Run(context.Background(), Config{Run: run, Workers: 2, Exe: testExe(t), CoordOptions: quiet, Options: Options{Connections: 1}}, testLog(t))
	if !errors.Is(err, ErrTargetDown) || !strings.Contains(err.Error(), "connect") {
		t.Fatalf("Run = %v; want ErrTargetDown naming the connect error", err)
	}
	// The stage is 60 s long; stopping after the first second (plus start-up and drain, slow
	// under -race on a busy machine) ends far sooner.
	if d := time.Since(begin); d > 20*time.Second {
		t.Errorf("Run took %v against a refused target with a 60 s stage; want it stopped after about a second", d)
	}
	m, err := schemas.ReadManifest(filepath.Join(run, schemas.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != schemas.StatusFailed || len(m.Missing) == 0 {
		t.Errorf("manifest status %q missing %q; want failed with the unsent requests", m.Status, m.Missing)
	}
	reqs, _ := readRaw(t, run, m)
	if len(reqs) == 0 {
		t.Fatal("no request rows; want each failure recorded")
	}
	for _, r := range reqs {
		if r.ErrorKind != "connect" {
			t.Errorf("seq %d: error_kind %q; want connect", r.Seq, r.ErrorKind)
		}
	}
}

// TestRunRefusesTooManyWorkers: a worker count past MaxWorkersPerCPU a CPU is an error before
// any worker starts.
func TestRunRefusesTooManyWorkers(t *testing.T) {
	run := t.TempDir()
	if err := construn.Write(run, schemas.Target{URL: "http://127.0.0.1:9", Model: "m"}, []construn.Stage{{Rate: 1, Duration: time.Second}}); err != nil {
		t.Fatal(err)
	}
	err := Run(context.Background(), Config{Run: run, Exe: testExe(t), Workers: 100_000, CPUs: []int{0}}, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "workers 100000: at most 4 here") {
		t.Errorf("Run with 100,000 workers on one CPU = %v; want an error naming the limit of 4", err)
	}
	if _, err := os.Stat(filepath.Join(run, "raw")); err == nil {
		t.Error("raw/ exists; want nothing started")
	}
}

// TestResolveOptionsBounds: a GOMAXPROCS past MaxGOMAXPROCS, negative connection limits and a
// part of no rows are errors naming the option.
func TestResolveOptionsBounds(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{GOMAXPROCS: 100_000_000}, "gomaxprocs 100000000: want 1..256"},
		{Options{GOMAXPROCS: -1}, "gomaxprocs -1"},
		{Options{Connections: -1}, "connections -1: want >= 0"},
		{Options{MaxInflight: -2}, "max-inflight -2"},
		{Options{PartRows: -5}, "part-rows -5: want >= 1"},
	} {
		o := tc.o
		if err := resolveOptions(&o, &schemas.Config{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("resolveOptions(%+v) = %v; want an error containing %q", tc.o, err, tc.want)
		}
	}
	var o Options
	if err := resolveOptions(&o, &schemas.Config{}); err != nil || o.GOMAXPROCS != DefaultGOMAXPROCS {
		t.Errorf("resolveOptions(defaults) = %v, GOMAXPROCS %d; want no error and %d", err, o.GOMAXPROCS, DefaultGOMAXPROCS)
	}
}

func TestRunRefusesUsedRunDir(t *testing.T) {
	run := t.TempDir()
	if err := construn.Write(run, schemas.Target{URL: "http://127.0.0.1:9", Model: "m"}, []construn.Stage{{Rate: 1, Duration: time.Second}}); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(run, "raw"), 0o755)
	os.WriteFile(filepath.Join(run, "raw", "requests-w00-0000.parquet"), nil, 0o644)
	err := Run(context.Background(), Config{Run: run, Exe: testExe(t)}, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "already holds a capture") {
		t.Errorf("Run on a captured run = %v; want an error saying it already holds a capture", err)
	}
}

func TestParseCPUs(t *testing.T) {
	tests := []struct {
		in     string
		want   []int
		hasErr bool
	}{
		{"1", []int{1}, false},
		{"0,2-4", []int{0, 2, 3, 4}, false},
		{" 3 , 5", []int{3, 5}, false},
		{"4-2", nil, true}, // a range runs up
		{"-1", nil, true},
		{"", nil, true},
		{"a", nil, true},
		{"1023", []int{1023}, false},
		{"1024", nil, true},         // past an affinity mask (CPU_SETSIZE)
		{"0-2000000000", nil, true}, // an error, not two billion CPUs in memory
	}
	for _, tt := range tests {
		got, err := ParseCPUs(tt.in)
		if !slices.Equal(got, tt.want) || (err != nil) != tt.hasErr {
			t.Errorf("ParseCPUs(%q) = (%v, %v); want (%v, error %v)", tt.in, got, err, tt.want, tt.hasErr)
		}
	}
}

func TestParseStartAt(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"1700000000000000000", 1700000000000000000, false},
		{"2023-11-14T22:13:20Z", 1700000000000000000, false},
		{"2023-11-14T22:13:20.5Z", 1700000000500000000, false},
		{"tomorrow", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseStartAt(tt.in)
		if (err != nil) != tt.err || (!tt.err && got.UnixNano() != tt.want) {
			t.Errorf("ParseStartAt(%q) = (%v, %v); want (%d, error %v)", tt.in, got.UnixNano(), err, tt.want, tt.err)
		}
	}
}

func TestParseProm(t *testing.T) {
	text := `# HELP vllm:num_requests_running Number of requests running.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m",engine="0"} 3
vllm:request_queue_time_seconds_bucket{le="0.5",model_name="m"} 7 1700000000000
vllm:request_queue_time_seconds_sum{model_name="a \"b\", c"} 1.25
process_up 1
`
	rows, err := parseProm(strings.NewReader(text), 42, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []schemas.ServerMetric{
		{ScrapeNs: 42, Stage: 1, Name: "vllm:num_requests_running", Labels: `engine="0",model_name="m"`, Value: 3},
		{ScrapeNs: 42, Stage: 1, Name: "vllm:request_queue_time_seconds_bucket", Labels: `le="0.5",model_name="m"`, Value: 7},
		{ScrapeNs: 42, Stage: 1, Name: "vllm:request_queue_time_seconds_sum", Labels: `model_name="a \"b\", c"`, Value: 1.25},
		{ScrapeNs: 42, Stage: 1, Name: "process_up", Labels: "", Value: 1},
	}
	if len(rows) != len(want) {
		t.Fatalf("parseProm gave %d rows; want %d: %+v", len(rows), len(want), rows)
	}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d = %+v; want %+v", i, rows[i], want[i])
		}
	}
	if _, err := parseProm(strings.NewReader("x{a=\"1\" 2\n"), 0, 0, nil); err == nil {
		t.Error("parseProm(unterminated labels) = nil error; want an error")
	}
}

func TestResolveShardsFromConfig(t *testing.T) {
	rc := &schemas.Config{Target: schemas.Target{URL: "http://127.0.0.1:9"}, Capture: schemas.CaptureOptions{Shards: 4}}
	for _, tc := range []struct {
		shard, shards int
		ok            bool
	}{
		{0, 1, false}, // --shard left at 0/1 while the config plans 4 hosts
		{2, 4, true},
		{1, 3, false},
	} {
		cfg := Config{Shard: tc.shard, Shards: tc.shards}
		if err := resolve(&cfg, rc); (err == nil) != tc.ok {
			t.Errorf("resolve(--shard %d/%d, capture.shards 4) error = %v; want ok=%v", tc.shard, tc.shards, err, tc.ok)
		}
	}
}

func TestJudgeStagesStopsBelowFidelity(t *testing.T) {
	const sec = int64(time.Second)
	stages := []schemas.StageInfo{
		{Index: 0, Name: "slow", Mode: "open", Rate: 100, OffsetNs: 0, DurationNs: 10 * sec, Requests: 1000},
		{Index: 1, Name: "fast", Mode: "open", Rate: 1000, OffsetNs: 10 * sec, DurationNs: 10 * sec, Requests: 10000},
	}
	for _, tc := range []struct {
		name string
		sent [2]int64 // cumulative sends of stage 1 seen by two workers at 9.5 s into the window
		stop bool
	}{
		{"on schedule", [2]int64{4750, 4750}, false},        // 9,500 due by 9.5 s
		{"one percent behind", [2]int64{4700, 4700}, false}, // 98.9%
		{"broken", [2]int64{3000, 3000}, true},              // 63%
	} {
		c := &coord{cfg: Config{CoordOptions: CoordOptions{StopBelowFidelity: 0.9}}, log: testLog(t), m: &schemas.Manifest{Stages: stages},
			planned: map[int32]int64{0: 1000, 1: 10000}, startNs: 1000 * sec}
		for w := range 2 {
			c.sampleStages(w, &worker.Progress{Sent: []int64{500, tc.sent[w]}, NowNs: c.startNs + 19*sec + sec/2})
		}
		c.judgeStages(c.startNs + 19*sec) // stage 1 not over yet: nothing judged
		if c.earlyStop != "" || c.judged[1] {
			t.Fatalf("%s: judged stage 1 before its end", tc.name)
		}
		c.judgeStages(c.startNs + 22*sec)
		if got := c.earlyStop != ""; got != tc.stop || c.stopped != tc.stop {
			t.Errorf("%s: earlyStop=%q stopped=%v; want stop=%v", tc.name, c.earlyStop, c.stopped, tc.stop)
		}
	}
}

func TestResolveRejectsBadStopFidelity(t *testing.T) {
	rc := &schemas.Config{Target: schemas.Target{URL: "http://127.0.0.1:9"}}
	for _, f := range []float64{-0.1, 1.5} {
		cfg := Config{CoordOptions: CoordOptions{StopBelowFidelity: f}}
		if err := resolve(&cfg, rc); err == nil {
			t.Errorf("resolve(StopBelowFidelity %g) = nil; want an error", f)
		}
	}
}

func TestResolveTimeouts(t *testing.T) {
	d := func(v time.Duration) *time.Duration { return &v }
	sd := func(v time.Duration) *schemas.Duration { x := schemas.Duration(v); return &x }
	type got struct{ timeout, ttft, gap, connect, watchdog time.Duration }
	for _, tt := range []struct {
		name   string
		target schemas.Target
		cfg    Config
		want   got
	}{
		// Nothing set: every default.
		{"defaults", schemas.Target{}, Config{},
			got{DefaultTimeout, DefaultTTFTTimeout, DefaultGapTimeout, DefaultConnectTimeout, DefaultWatchdog}},
		// The config's values, a flag winning over one of them.
		{"config and flag", schemas.Target{Timeout: sd(time.Minute), TTFTTimeout: schemas.Duration(5 * time.Second), GapTimeout: schemas.Duration(2 * time.Second), ConnectTimeout: schemas.Duration(3 * time.Second)},
			Config{Options: Options{GapTimeout: 300 * time.Millisecond, Watchdog: 4 * time.Second}},
			got{time.Minute, 5 * time.Second, 300 * time.Millisecond, 3 * time.Second, 4 * time.Second}},
		// timeout: 0 in the config is none, not the default.
		{"config timeout 0 = none", schemas.Target{Timeout: sd(0)}, Config{},
			got{0, DefaultTTFTTimeout, DefaultGapTimeout, DefaultConnectTimeout, DefaultWatchdog}},
		// --timeout 0 is none whatever the config says.
		{"flag timeout 0 = none", schemas.Target{Timeout: sd(time.Minute)}, Config{Options: Options{Timeout: d(0)}},
			got{0, DefaultTTFTTimeout, DefaultGapTimeout, DefaultConnectTimeout, DefaultWatchdog}},
	} {
		tt.target.URL = "http://127.0.0.1:9"
		cfg := tt.cfg
		if err := resolve(&cfg, &schemas.Config{Target: tt.target}); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if g := (got{*cfg.Timeout, cfg.TTFTTimeout, cfg.GapTimeout, cfg.ConnectTimeout, cfg.Watchdog}); g != tt.want {
			t.Errorf("%s: resolve = %+v; want %+v", tt.name, g, tt.want)
		}
	}
	for _, cfg := range []Config{{Options: Options{TTFTTimeout: -time.Second}}, {Options: Options{Timeout: d(-time.Second)}}, {Options: Options{ConnectTimeout: -time.Second}}} {
		if err := resolve(&cfg, &schemas.Config{Target: schemas.Target{URL: "http://127.0.0.1:9"}}); err == nil {
			t.Errorf("resolve(%+v) = nil; want an error", cfg)
		}
	}
}
