package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// modelsExample is a 70/30 mix of a base model and a LoRA adapter of it over two stages, 60
// requests.
const modelsExample = "../../examples/lora-mix.yaml"

// loraOffset is the slow adapter's extra time to the first token in the simulator.
const loraOffset = 15 * time.Millisecond

// TestModelMixEndToEnd runs a seeded 70/30 mix of a base model and a slower LoRA adapter
// against `wirebench sim --model base --lora slow:+15ms`: every request goes to the model the
// schedule drew for it (raw and metric rows name it, the simulator's truth agrees), the counts
// per stage and model in breakdown.parquet are the schedule's exactly, the adapter's TTFT is
// 15 ms longer (its quickest answer against the base model's; its p50 over TTFT + 15 ms, its
// goodput 0 under slo.ttft 30ms), and the run's summary, summary.md, index.html and
// profile.json show the stages by model.
func TestModelMixEndToEnd(t *testing.T) {
	url := startSim(t, "--ttft", apiTTFT.String(), "--itl", apiITL.String(), "--model", "base", "--lora", "slow:+"+loraOffset.String())
	run := filepath.Join(t.TempDir(), "run")
	stdout, stderr, err := wirebench(t, 90*time.Second, "run", modelsExample, "-o", run, "--target", url, "--quiet")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "\n  slow (LoRA of base) ") {
		t.Errorf("run's summary lists no stage line of the adapter:\n%s", stdout)
	}

	sched, err := schemas.ReadFile[schemas.ScheduleRequest](filepath.Join(run, "schedule", "requests.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	planned := map[int64]string{}
	perStage := map[[2]string]int64{} // (stage, model) -> planned requests
	perModel := map[string]int{}
	for _, r := range sched {
		planned[r.Seq] = r.Model
		perStage[[2]string{stageKey(r.Stage), r.Model}]++
		perModel[r.Model]++
	}
	// 60 requests drawn 70/30: the seed's draw, not a quota, but far from all one model.
	if len(sched) != 60 || perModel["base"]+perModel["slow"] != 60 || perModel["slow"] < 8 || perModel["slow"] > 30 {
		t.Fatalf("schedule: %d requests, by model %v; want 60 drawn about 70/30 between base and slow", len(sched), perModel)
	}

	_, raw, _ := rawFiles(t, run)
	for _, r := range raw {
		if r.Model != planned[r.Seq] {
			t.Errorf("raw seq %d: model %q; the schedule drew %q", r.Seq, r.Model, planned[r.Seq])
		}
		// The simulator's truth: the adapter's prefill is TTFT + offset, the base model's TTFT.
		want := apiTTFT
		if r.Model == "slow" {
			want += loraOffset
		}
		if r.ErrorKind != "" || r.ServerPrefillNs == nil || time.Duration(*r.ServerPrefillNs) != want {
			t.Errorf("raw seq %d (%s): error %q, server prefill %v; want ok and %v", r.Seq, r.Model, r.ErrorKind, val(r.ServerPrefillNs), want)
		}
	}
	metrics, err := schemas.ReadFile[schemas.MetricRequest](filepath.Join(run, "metrics", "requests.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	minTTFT := map[string]int64{}
	for _, m := range metrics {
		if m.Model != planned[m.Seq] {
			t.Errorf("metric seq %d: model %q; the schedule drew %q", m.Seq, m.Model, planned[m.Seq])
		}
		if v, ok := minTTFT[m.Model]; m.TTFTNs != nil && (!ok || *m.TTFTNs < v) {
			minTTFT[m.Model] = *m.TTFTNs
		}
	}
	// The quickest answer of each model is the one the loaded machine delayed least: their
	// difference is the adapter's offset.
	if d := time.Duration(minTTFT["slow"] - minTTFT["base"]); d < loraOffset-2*time.Millisecond || d > loraOffset+2*time.Millisecond {
		t.Errorf("least TTFT slow − base = %v (%v − %v); want the adapter's offset %v ± 2ms", d, time.Duration(minTTFT["slow"]), time.Duration(minTTFT["base"]), loraOffset)
	}

	rows, err := schemas.ReadFile[schemas.Breakdown](filepath.Join(run, "metrics", "breakdown.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("breakdown.parquet: %d rows; want 4 (2 stages × 2 models)", len(rows))
	}
	for _, b := range rows {
		k := [2]string{stageKey(b.Stage), b.Key}
		if b.By != schemas.ByModel || b.Requests != perStage[k] || b.Completed != b.Requests || b.TTFT.P50 == nil {
			t.Errorf("breakdown stage %d %s %q: %d requests, %d ok, TTFT p50 %v; want by model, %d requests all ok", b.Stage, b.By, b.Key, b.Requests, b.Completed, val(b.TTFT.P50), perStage[k])
			continue
		}
		// Each model's figures: the adapter's TTFT p50 at least TTFT + offset (no answer comes
		// sooner), the base model's below it; under slo.ttft 30ms the adapter never meets the SLO
		// and the base model does.
		slow, p50 := b.Key == "slow", time.Duration(*b.TTFT.P50)
		if slow != (p50 >= apiTTFT+loraOffset) {
			t.Errorf("breakdown stage %d %s: TTFT p50 %v; want at least %v only for slow", b.Stage, b.Key, p50, apiTTFT+loraOffset)
		}
		if good := val(b.GoodputShare); slow != (good == 0) {
			t.Errorf("breakdown stage %d %s: goodput %.2f; want 0 for slow (TTFT over the 30ms SLO), above 0 for base", b.Stage, b.Key, good)
		}
		if itl := time.Duration(val(b.ITL.P50)); itl < apiITL-2*time.Millisecond || itl > apiITL+2*time.Millisecond {
			t.Errorf("breakdown stage %d %s: ITL p50 %v; want the simulator's %v ± 2ms", b.Stage, b.Key, itl, apiITL)
		}
	}
	checkModelReport(t, run, perStage)
}

func stageKey(s int32) string { return string(rune('0' + s)) }

// checkModelReport checks that the report splits each stage by model.
func checkModelReport(t *testing.T, run string, perStage map[[2]string]int64) {
	t.Helper()
	md, err := os.ReadFile(filepath.Join(run, "report", "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "### By model in") || !strings.Contains(string(md), "slow (LoRA of base)") {
		t.Errorf("summary.md has no by-model table naming the adapter:\n%s", md)
	}
	html, err := os.ReadFile(filepath.Join(run, "report", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "By model in") || !strings.Contains(string(html), "slow (LoRA of base)") {
		t.Error("index.html has no by-model table naming the adapter")
	}
	b, err := os.ReadFile(filepath.Join(run, "report", "profile.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p schemas.Profile
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Runs[0].Stages {
		var n int64
		for _, sp := range s.Split {
			n += sp.Requests
		}
		if len(s.Split) != 2 || n != perStage[[2]string{stageKey(s.Stage), "base"}]+perStage[[2]string{stageKey(s.Stage), "slow"}] {
			t.Errorf("profile.json stage %d split = %+v; want base and slow adding up to the stage", s.Stage, s.Split)
		}
	}
}

// TestModelMixUnknownModel runs a 50/50 mix of a served model and one the simulator does not
// serve: the run goes to its end, every request to the unknown model is a 404 (http_status,
// with the server's OpenAI error message) recorded under its model, and the report's by-model
// table shows that model's errors while the other's figures stay whole.
func TestModelMixUnknownModel(t *testing.T) {
	url := startSim(t, "--ttft", apiTTFT.String(), "--itl", apiITL.String(), "--model", "base")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "unknown.yaml")
	example, err := os.ReadFile(modelsExample)
	if err != nil {
		t.Fatal(err)
	}
	conf := strings.Replace(string(example), "{name: base, lora: slow, weight: 3}", "{name: missing, weight: 3}", 1)
	conf = strings.Replace(conf, "    - {name: high, rate: 20, duration: 2s, arrival: constant}\n", "", 1)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if _, stderr, err := wirebench(t, 90*time.Second, "run", cfg, "-o", run, "--target", url, "--quiet"); err != nil {
		t.Fatalf("run: %v (want exit 0: failed requests are rows, not a failed run)\n%s", err, stderr)
	}
	_, raw, _ := rawFiles(t, run)
	n := map[string]int64{}
	for _, r := range raw {
		n[r.Model]++
		switch r.Model {
		case "missing":
			if r.Status != 404 || r.ErrorKind != schemas.ErrHTTPStatus || !strings.Contains(r.ErrorMessage, "does not exist") {
				t.Errorf("seq %d to the unknown model: status %d, kind %q, message %q; want 404 http_status naming it", r.Seq, r.Status, r.ErrorKind, r.ErrorMessage)
			}
		case "base":
			if r.ErrorKind != "" {
				t.Errorf("seq %d to base: error %q %q; want ok", r.Seq, r.ErrorKind, r.ErrorMessage)
			}
		default:
			t.Errorf("seq %d: model %q; want base or missing", r.Seq, r.Model)
		}
	}
	rows, err := schemas.ReadFile[schemas.Breakdown](filepath.Join(run, "metrics", "breakdown.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range rows {
		want := map[string]string{"base": "{}", "missing": `{"http_status":` + strconv.FormatInt(n["missing"], 10) + "}"}[b.Key]
		if b.Requests != n[b.Key] || b.ErrorsByKind != want {
			t.Errorf("breakdown %q: %d requests, errors %s; want %d, %s", b.Key, b.Requests, b.ErrorsByKind, n[b.Key], want)
		}
	}
	if len(rows) != 2 || n["missing"] == 0 || n["base"] == 0 {
		t.Errorf("breakdown has %d rows, requests by model %v; want base and missing both sent", len(rows), n)
	}
	md, err := os.ReadFile(filepath.Join(run, "report", "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| missing | "+strconv.FormatInt(n["missing"], 10)+" |") {
		t.Errorf("summary.md has no by-model row of the unknown model with its requests:\n%s", md)
	}
}
