package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
	"github.com/wirebench/wirebench/tokenizer"
)

var quiet = slog.New(slog.DiscardHandler)

func plan1(t *testing.T, cfgPath, out string) {
	t.Helper()
	if err := Run(context.Background(), Options{ConfigPath: cfgPath, Out: out, Args: []string{"replay", "fixed-args"}}, quiet); err != nil {
		t.Fatalf("Run(%s): %v", cfgPath, err)
	}
}

func schedule(t *testing.T, run string) ([]schemas.ScheduleRequest, []schemas.Prompt) {
	t.Helper()
	reqs, err := schemas.ReadFile[schemas.ScheduleRequest](filepath.Join(run, "schedule", "requests.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	prompts, err := schemas.ReadFile[schemas.Prompt](filepath.Join(run, "schedule", "prompts.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	return reqs, prompts
}

func TestSmokePlan(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	plan1(t, "../examples/smoke.yaml", run)
	reqs, prompts := schedule(t, run)
	if len(reqs) != 350 || len(prompts) == 0 {
		t.Fatalf("smoke: %d requests, %d prompts; want 350 requests (20×5 + 50×5)", len(reqs), len(prompts))
	}
	byID := map[int64]schemas.Prompt{}
	for _, p := range prompts {
		byID[p.PromptID] = p
	}
	for i, r := range reqs {
		want := int64(i) * 50_000_000
		stage := int32(0)
		if i >= 100 {
			want, stage = 5_000_000_000+int64(i-100)*20_000_000, 1
		}
		if r.Seq != int64(i) || r.Stage != stage || r.PlannedOffsetNs != want {
			t.Fatalf("row %d: seq %d stage %d planned %d; want seq %d stage %d planned %d", i, r.Seq, r.Stage, r.PlannedOffsetNs, i, stage, want)
		}
		if r.InputTokens != 64 || r.MaxTokens != 16 || r.User != -1 || r.DependsOn != -1 || r.Conversation != -1 || r.Source != "synthetic" {
			t.Fatalf("row %d = %+v; want 64 input, 16 max tokens, open loop, synthetic", i, r)
		}
		p, ok := byID[r.PromptID]
		if !ok {
			t.Fatalf("row %d: prompt_id %d not in prompts.parquet", i, r.PromptID)
		}
		if n := tokenizer.CountWords(p.Text); n != 64 || p.InputTokens != 64 || p.MessagesJSON != "" {
			t.Fatalf("prompt %d: %d words, input_tokens %d, messages %q; want 64, 64, none", p.PromptID, n, p.InputTokens, p.MessagesJSON)
		}
	}
	m, err := schemas.ReadManifest(filepath.Join(run, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != schemas.StatusPlanned || len(m.RunID) != 16 || m.ClockSource != "CLOCK_REALTIME" || m.CPUs <= 0 {
		t.Errorf("manifest status %q run_id %q clock %q cpus %d; want planned, 16 hex digits, CLOCK_REALTIME, > 0", m.Status, m.RunID, m.ClockSource, m.CPUs)
	}
	if len(m.Stages) != 2 || m.Stages[1].OffsetNs != 5e9 || m.Stages[1].DurationNs != 5e9 || m.Stages[0].Requests != 100 || m.Stages[1].Requests != 250 {
		t.Errorf("manifest stages = %+v; want 2 back-to-back 5 s stages of 100 and 250 requests", m.Stages)
	}
	files := map[string]int64{}
	for _, f := range m.Files {
		files[f.Path] = f.Rows
	}
	if files["schedule/requests.parquet"] != 350 || files["schedule/prompts.parquet"] != int64(len(prompts)) {
		t.Errorf("manifest files = %+v; want requests 350 and prompts %d rows", m.Files, len(prompts))
	}
	if len(m.Steps) != 1 || m.Steps[0].Name != "replay" || m.Steps[0].Status != "ok" {
		t.Errorf("manifest steps = %+v; want one replay step", m.Steps)
	}
	var cfg schemas.Config
	if err := json.Unmarshal(m.Config, &cfg); err != nil || cfg.Target.URL != "http://127.0.0.1:8000" || !cfg.Target.IgnoreEOS || cfg.SLO.TTFT.D() == 0 {
		t.Errorf("manifest config = %s (%v); want the resolved config", m.Config, err)
	}
}

func TestDeterministic(t *testing.T) {
	cfg := writeConfig(t, `seed: 11
target: {url: "http://127.0.0.1:8000", model: m}
load:
  warmup: {rate: 50, duration: 1s}
  stages:
    - {rate: 200, duration: 2s, arrival: gamma, burstiness: 0.5}
    - {concurrency: 4, requests: 50, duration: 2s, think_time: 100ms}
  sweep: {min_rate: 10, max_rate: 40, stages: 3, duration: 1s, scale: geometric}
workload:
  synthetic:
    input: {kind: lognormal, mean: 100, std: 60, max: 500}
    output: {kind: exponential, mean: 50}
`)
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	plan1(t, cfg, a)
	plan1(t, cfg, b)
	for _, f := range []string{"requests.parquet", "prompts.parquet"} {
		x, _ := os.ReadFile(filepath.Join(a, "schedule", f))
		y, _ := os.ReadFile(filepath.Join(b, "schedule", f))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("schedule/%s differs between two plans of the same config and seed (%d and %d bytes)", f, len(x), len(y))
		}
	}
	// Another seed gives another schedule (the comparison above can fail).
	other := strings.Replace(mustRead(t, cfg), "seed: 11", "seed: 12", 1)
	c := filepath.Join(dir, "c")
	plan1(t, writeConfig(t, other), c)
	x, _ := os.ReadFile(filepath.Join(a, "schedule", "requests.parquet"))
	y, _ := os.ReadFile(filepath.Join(c, "schedule", "requests.parquet"))
	if bytes.Equal(x, y) {
		t.Error("seeds 11 and 12 gave byte-identical schedules")
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNothingWrittenOnError(t *testing.T) {
	bad := writeConfig(t, `target: {url: "http://127.0.0.1:8000", model: m}
load:
  stages: [{rate: 10, duration: 1s}]
workload:
  dataset: {format: jsonl, file: `+filepath.Join(mustAbs(t, "testdata/jsonl/wrongtype.jsonl"))+`}
`)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		out  string
		pre  bool // run directory exists before
	}{
		{"new run directory", filepath.Join(dir, "new"), false},
		{"existing run directory", filepath.Join(dir, "old"), true},
	} {
		if tc.pre {
			os.MkdirAll(tc.out, 0o755)
		}
		err := Run(context.Background(), Options{ConfigPath: bad, Out: tc.out}, quiet)
		if err == nil || !strings.Contains(err.Error(), "wrongtype.jsonl:2: max_tokens") {
			t.Errorf("%s: Run = %v; want the dataset error naming file, line and field", tc.name, err)
		}
		var left []string
		filepath.WalkDir(tc.out, func(p string, d os.DirEntry, err error) error {
			if p != tc.out {
				left = append(left, p)
			}
			return nil
		})
		_, statErr := os.Stat(tc.out)
		if len(left) > 0 || (!tc.pre && statErr == nil) {
			t.Errorf("%s: after a failed Run the run directory holds %v (exists: %v); want nothing", tc.name, left, statErr == nil)
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestRefuseExistingSchedule(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	plan1(t, "../examples/smoke.yaml", run)
	err := Run(context.Background(), Options{ConfigPath: "../examples/smoke.yaml", Out: run}, quiet)
	if err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("second Run into the same directory = %v; want a refusal naming --force", err)
	}
	if err := Run(context.Background(), Options{ConfigPath: "../examples/smoke.yaml", Out: run, Force: true}, quiet); err != nil {
		t.Fatalf("Run with Force: %v", err)
	}
}

// TestForceReplacesTheWholeRun: a run directory holding results is refused without Force; a
// Check that fails leaves it as it was even with Force; with Force its results go and the new
// schedule and manifest replace the old.
func TestForceReplacesTheWholeRun(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	plan1(t, "../examples/smoke.yaml", run)
	old, err := os.ReadFile(filepath.Join(run, schemas.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(run, "raw", "requests-w00-0001.parquet")
	for _, f := range []string{part, filepath.Join(run, "metrics", "stages.parquet"), filepath.Join(run, "report", "index.html")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(filepath.Join(run, "schedule")); err != nil {
		t.Fatal(err)
	}
	err = Run(context.Background(), Options{ConfigPath: "../examples/smoke.yaml", Out: run}, quiet)
	if err == nil || !strings.Contains(err.Error(), "raw/ (1 files)") || !strings.Contains(err.Error(), "--force") {
		t.Errorf("Run into a directory holding raw/ without Force = %v; want a refusal naming raw/ and --force", err)
	}
	refuse := errors.New("workers -1: want >= 1")
	err = Run(context.Background(), Options{ConfigPath: "../examples/smoke.yaml", Out: run, Force: true,
		Check: func(*schemas.Config) error { return refuse }}, quiet)
	if !errors.Is(err, refuse) {
		t.Errorf("Run with a failing Check = %v; want its error", err)
	}
	if now, _ := os.ReadFile(filepath.Join(run, schemas.ManifestName)); string(now) != string(old) {
		t.Error("a Run that failed its Check rewrote the manifest")
	}
	if _, err := os.Stat(part); err != nil {
		t.Errorf("a Run that failed its Check removed the old capture: %v", err)
	}
	if err := Run(context.Background(), Options{ConfigPath: "../examples/smoke.yaml", Out: run, Force: true}, quiet); err != nil {
		t.Fatalf("Run with Force: %v", err)
	}
	for _, d := range []string{"raw", "metrics", "report"} {
		if _, err := os.Stat(filepath.Join(run, d)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after Run with Force, %s/: %v; want it removed", d, err)
		}
	}
	schedule(t, run) // the new schedule is whole
	if now, _ := os.ReadFile(filepath.Join(run, schemas.ManifestName)); string(now) == string(old) {
		t.Error("Run with Force kept the old manifest")
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	var b strings.Builder
	if err := Run(context.Background(), Options{ConfigPath: "../examples/smoke.yaml", Out: out, DryRun: true, DryRunOut: &b}, quiet); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("--dry-run created %s", out)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("dry run printed %d lines; want header, 2 stages, total:\n%s", len(lines), b.String())
	}
	for i, want := range [][]string{
		{"requests", "rate/s", "duration", "in p50", "in p99", "out p50", "out p99"},
		{"constant-20rps", "open", " 100 ", " 20 ", "5s", " 64 ", " 16 "},
		{"constant-50rps", "open", " 250 ", " 50 ", "5s"},
		{"total: 350 requests"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("dry-run line %d = %q; want it to contain %q", i, lines[i], w)
			}
		}
	}
}

func TestExamplesDryRun(t *testing.T) {
	for _, f := range runExamples {
		if filepath.Base(f) == "ab.yaml" {
			continue // needs an earlier run: TestABExample
		}
		var b strings.Builder
		if err := Run(context.Background(), Options{ConfigPath: f, DryRun: true, DryRunOut: &b}, quiet); err != nil {
			t.Errorf("dry run %s: %v", f, err)
			continue
		}
		if !strings.Contains(b.String(), "total: ") || strings.Contains(b.String(), "total: 0 requests") {
			t.Errorf("dry run %s printed no requests:\n%s", f, b.String())
		}
	}
}

func TestABExample(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "examples"), 0o755)
	ab := filepath.Join(dir, "examples", "ab.yaml")
	os.WriteFile(ab, []byte(mustRead(t, "../examples/ab.yaml")), 0o644)
	a := filepath.Join(dir, "runs", "a")
	plan1(t, "../examples/smoke.yaml", a)
	b := filepath.Join(dir, "runs", "b")
	plan1(t, ab, b)
	ra, pa := schedule(t, a)
	rb, pb := schedule(t, b)
	if len(ra) != len(rb) || len(pa) != len(pb) {
		t.Fatalf("A/B copy: %d/%d requests, %d/%d prompts; want equal", len(rb), len(ra), len(pb), len(pa))
	}
	for i := range ra {
		if ra[i] != rb[i] {
			t.Fatalf("A/B copy: request %d = %+v; want %+v", i, rb[i], ra[i])
		}
	}
	for i := range pa {
		if pa[i] != pb[i] {
			t.Fatalf("A/B copy: prompt %d differs", i)
		}
	}
	mb, _ := schemas.ReadManifest(filepath.Join(b, "manifest.json"))
	if len(mb.Stages) != 2 || mb.Stages[1].OffsetNs != 5e9 {
		t.Errorf("A/B copy: stages = %+v; want run A's two stages", mb.Stages)
	}
	// A chat config cannot replay a completions run.
	chat := strings.Replace(mustRead(t, ab), "api: completions", "api: chat", 1)
	os.WriteFile(ab, []byte(chat), 0o644)
	err := Run(context.Background(), Options{ConfigPath: ab, Out: filepath.Join(dir, "runs", "c")}, quiet)
	if err == nil || !strings.Contains(err.Error(), `target.api "completions"`) {
		t.Errorf("chat replay of a completions run = %v; want a refusal", err)
	}
}

func TestTargetOverrideAndModelDiscovery(t *testing.T) {
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		auth = r.Header.Get("Authorization")
		w.Write([]byte(`{"object":"list","data":[{"id":"qwen3-8b","object":"model"}]}`))
	}))
	defer srv.Close()
	t.Setenv("WB_TEST_KEY", "sekret")
	cfg := writeConfig(t, `target: {url: "http://127.0.0.1:1", api_key_env: WB_TEST_KEY}
load: {stages: [{rate: 5, duration: 1s, arrival: constant}]}
workload: {synthetic: {input: {kind: fixed, value: 4}, output: {kind: fixed, value: 2}}}
`)
	run := filepath.Join(t.TempDir(), "run")
	if err := Run(context.Background(), Options{ConfigPath: cfg, Out: run, Target: srv.URL}, quiet); err != nil {
		t.Fatal(err)
	}
	m, err := schemas.ReadManifest(filepath.Join(run, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c schemas.Config
	json.Unmarshal(m.Config, &c)
	if c.Target.URL != srv.URL || c.Target.Model != "qwen3-8b" || c.Target.APIKeyEnv != "WB_TEST_KEY" {
		t.Errorf("manifest target = %+v; want url %s, discovered model qwen3-8b, api_key_env kept", c.Target, srv.URL)
	}
	if auth != "Bearer sekret" {
		t.Errorf("discovery sent Authorization %q; want the key from WB_TEST_KEY", auth)
	}
	raw, _ := os.ReadFile(filepath.Join(run, "manifest.json"))
	if bytes.Contains(raw, []byte("sekret")) {
		t.Error("manifest.json contains the API key")
	}
	if err := Run(context.Background(), Options{ConfigPath: cfg, Out: run, Force: true, Target: "localhost:80"}, quiet); err == nil {
		t.Error("Run with --target localhost:80: no error; want an invalid URL error")
	}
}

func TestScheduleArgs(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{[]string{"replay", "c.yaml", "-o", "runs/a"}, "replay c.yaml"},
		{[]string{"replay", "-oruns/a", "c.yaml", "--force"}, "replay c.yaml"},
		{[]string{"--log-level", "debug", "replay", "c.yaml", "--out=x", "--target", "http://h:1", "--dry-run"}, "replay c.yaml --dry-run"},
	} {
		if got := strings.Join(scheduleArgs(tc.in), " "); got != tc.want {
			t.Errorf("scheduleArgs(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// The manifest keeps the target without its secrets; a variable the target reads that is unset
// here is an error under `run` (NeedEnv), else a warning (capture may run on another host).
func TestRunKeepsSecretsOutOfTheManifest(t *testing.T) {
	t.Setenv("WB_TEST_TOKEN", "tok-replay-test")
	cfg := writeConfig(t, `target:
  url: "http://bob:pw-replay-test@127.0.0.1:1"
  model: m
  headers: {Authorization: "Bearer sk-replay-literal", X-Api-Key: "${WB_TEST_TOKEN}", X-Team: perf}
  api_key_env: WB_TEST_UNSET_KEY
load: {stages: [{rate: 5, duration: 1s, arrival: constant}]}
workload: {synthetic: {input: {kind: fixed, value: 4}, output: {kind: fixed, value: 2}}}
`)
	run := filepath.Join(t.TempDir(), "run")
	err := Run(context.Background(), Options{ConfigPath: cfg, Out: run, NeedEnv: true}, quiet)
	if err == nil || !strings.Contains(err.Error(), "c.yaml:5: target.api_key_env: environment variable WB_TEST_UNSET_KEY is not set") {
		t.Errorf("Run(NeedEnv) with api_key_env unset = %v; want c.yaml:5: target.api_key_env naming the variable", err)
	}
	if _, err := os.Stat(run); !os.IsNotExist(err) {
		t.Errorf("Run(NeedEnv) failed but wrote %s (stat: %v)", run, err)
	}
	if err := Run(context.Background(), Options{ConfigPath: cfg, Out: run}, quiet); err != nil {
		t.Fatalf("Run without NeedEnv: %v; want a warning only", err)
	}
	raw, err := os.ReadFile(filepath.Join(run, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"pw-replay-test", "sk-replay-literal", "tok-replay-test", "bob"} {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("manifest.json holds %q", s)
		}
	}
	for _, s := range []string{`"url": "http://[REDACTED]@127.0.0.1:1"`, `"Authorization": "[REDACTED]"`, `"X-Api-Key": "${WB_TEST_TOKEN}"`, `"X-Team": "perf"`} {
		if !bytes.Contains(raw, []byte(s)) {
			t.Errorf("manifest.json lacks %s", s)
		}
	}
}

// TestPlanValue: Plan of a config built in Go writes the schedule Run writes from the same
// config as a file, byte for byte; so does Plan of what LoadConfig returned (planning it again
// finds it valid: target.urls included); and a value's errors name the field with no line.
func TestPlanValue(t *testing.T) {
	yaml := `seed: 3
target:
  urls: [{url: "http://127.0.0.1:8000"}, {url: "http://127.0.0.1:8001", weight: 2}]
  model: m
load:
  stages:
    - {name: a, rate: 40, duration: 1s, arrival: constant}
    - {rate: 80, duration: 1s}
workload:
  synthetic: {input: {kind: uniform, min: 4, max: 40}, output: {kind: fixed, value: 8}}
`
	value := func() *schemas.Config {
		return &schemas.Config{Seed: 3,
			Target: schemas.Target{URLs: []schemas.Endpoint{{URL: "http://127.0.0.1:8000"}, {URL: "http://127.0.0.1:8001", Weight: 2}}, Model: "m"},
			Load: schemas.Load{Stages: []schemas.StageSpec{
				{Name: "a", Rate: 40, Duration: schemas.Duration(time.Second), Arrival: "constant"},
				{Rate: 80, Duration: schemas.Duration(time.Second)}}},
			Workload: schemas.Workload{Synthetic: &schemas.Synthetic{
				Input:  schemas.LengthDist{Kind: "uniform", Min: 4, Max: 40},
				Output: schemas.LengthDist{Kind: "fixed", Value: 8}}},
		}
	}
	dir := t.TempDir()
	path := writeConfig(t, yaml)
	plan1(t, path, filepath.Join(dir, "file"))
	loaded, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	opts := func(out string) Options {
		return Options{ConfigPath: "value", Out: filepath.Join(dir, out), Args: []string{"replay", "fixed-args"}}
	}
	for name, cfg := range map[string]*schemas.Config{"built": value(), "loaded": loaded} {
		if err := Plan(context.Background(), cfg, opts(name), quiet); err != nil {
			t.Fatalf("Plan(%s config): %v", name, err)
		}
		for _, f := range []string{"requests.parquet", "prompts.parquet"} {
			x, _ := os.ReadFile(filepath.Join(dir, "file", "schedule", f))
			y, _ := os.ReadFile(filepath.Join(dir, name, "schedule", f))
			if len(x) == 0 || !bytes.Equal(x, y) {
				t.Errorf("schedule/%s of Plan(%s config) differs from Run's of the file (%d and %d bytes)", f, name, len(y), len(x))
			}
		}
	}
	bad := value()
	bad.Load.Stages[1].Rate = -1
	bad.Workload.Synthetic.Output.Kind = "zipf"
	err = Plan(context.Background(), bad, opts("bad"), quiet)
	want := "value: load.stages[1].rate: must be > 0\n" +
		`value: workload.synthetic.output.kind: "zipf": want fixed, uniform, normal, lognormal, exponential or empirical`
	if err == nil || err.Error() != want {
		t.Errorf("Plan(invalid config) = %v; want %q", err, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Plan(invalid config) left %s: %v", filepath.Join(dir, "bad"), err)
	}
}
