package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

func TestReplayHelp(t *testing.T) {
	out, _, err := wirebench(t, 30*time.Second, "replay", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"<config>", "--out=RUN", "--target=URL", "--dry-run", "--force", "overrides target.url"} {
		if !strings.Contains(out, w) {
			t.Errorf("replay --help lacks %q:\n%s", w, out)
		}
	}
}

func TestReplaySmokeCLI(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")

	out, errOut, err := wirebench(t, 60*time.Second, "replay", "../../examples/smoke.yaml", "--dry-run", "-o", a)
	if err != nil {
		t.Fatalf("replay --dry-run: %v\n%s", err, errOut)
	}
	if !strings.Contains(out, "constant-20rps") || !strings.Contains(out, "total: 350 requests") {
		t.Errorf("replay --dry-run output lacks the stage table:\n%s", out)
	}
	if _, err := os.Stat(a); err == nil {
		t.Errorf("replay --dry-run created %s", a)
	}

	for _, run := range []string{a, b} {
		if _, errOut, err := wirebench(t, 60*time.Second, "replay", "../../examples/smoke.yaml", "-o", run); err != nil {
			t.Fatalf("replay -o %s: %v\n%s", run, err, errOut)
		}
	}
	for _, f := range []string{"requests.parquet", "prompts.parquet"} {
		x, _ := os.ReadFile(filepath.Join(a, "schedule", f))
		y, _ := os.ReadFile(filepath.Join(b, "schedule", f))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("schedule/%s differs between two runs of the same config (%d and %d bytes)", f, len(x), len(y))
		}
	}
	reqs, err := schemas.ReadFile[schemas.ScheduleRequest](filepath.Join(a, "schedule", "requests.parquet"))
	if err != nil || len(reqs) != 350 {
		t.Errorf("schedule/requests.parquet: %d rows, %v; want 350", len(reqs), err)
	}

	_, errOut, err = wirebench(t, 60*time.Second, "replay", "../../examples/smoke.yaml", "-o", a)
	if err == nil || !strings.Contains(errOut, "--force") {
		t.Errorf("replay into an existing schedule: err %v, stderr %q; want a refusal naming --force", err, errOut)
	}
	if _, errOut, err := wirebench(t, 60*time.Second, "replay", "../../examples/smoke.yaml", "-o", a, "--force"); err != nil {
		t.Errorf("replay --force: %v\n%s", err, errOut)
	}
}

func TestReplayBadConfigCLI(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "bad.yaml")
	os.WriteFile(cfg, []byte("target: {url: \"http://127.0.0.1:1\", model: m}\nload:\n  stages:\n    - {rate: 10, duration: 1s, burst: 3}\n"), 0o644)
	run := filepath.Join(dir, "run")
	_, errOut, err := wirebench(t, 30*time.Second, "replay", cfg, "-o", run)
	if err == nil || !strings.Contains(errOut, "bad.yaml:4:") || !strings.Contains(errOut, `unknown key "burst"`) {
		t.Errorf("replay of a bad config: err %v, stderr %q; want file:line and the unknown key", err, errOut)
	}
	if _, err := os.Stat(run); err == nil {
		t.Errorf("a failed replay created %s", run)
	}
}

func TestReplayDiscoversModelFromSim(t *testing.T) {
	url := startSim(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte(`target: {url: "http://127.0.0.1:1"}
load: {stages: [{rate: 10, duration: 1s, arrival: constant}]}
workload: {synthetic: {input: {kind: fixed, value: 8}, output: {kind: fixed, value: 4}}}
`), 0o644)
	run := filepath.Join(dir, "run")
	if _, errOut, err := wirebench(t, 60*time.Second, "replay", cfg, "-o", run, "--target", url); err != nil {
		t.Fatalf("replay --target %s: %v\n%s", url, err, errOut)
	}
	m, err := schemas.ReadManifest(filepath.Join(run, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Target struct{ URL, Model string }
	}
	json.Unmarshal(m.Config, &c)
	if c.Target.URL != url || c.Target.Model != "sim" {
		t.Errorf("manifest target = %+v; want url %s (from --target) and model sim (from /v1/models)", c.Target, url)
	}
}
