package replay

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// TestWriteConfigRoundTrip: what WriteConfig writes, LoadConfig reads back as the config it was
// given (both with their defaults filled in), the head comment included as a comment.
func TestWriteConfigRoundTrip(t *testing.T) {
	d := func(v time.Duration) schemas.Duration { return schemas.Duration(v) }
	timeout := d(time.Minute)
	cfg := &schemas.Config{Name: "round-trip", Seed: 7,
		Target: schemas.Target{URL: "http://127.0.0.1:8000", API: "chat", IgnoreEOS: true, Timeout: &timeout, TTFTTimeout: d(5 * time.Second),
			Models: []schemas.TargetModel{{Name: "a", Weight: 2}, {Name: "b", LoRA: "b-lora"}}, Headers: map[string]string{"X-Team": "perf"},
			ExtraBody: map[string]any{"temperature": 0.5, "top_k": 4}},
		Load: schemas.Load{Warmup: &schemas.StageSpec{Rate: 5, Duration: d(time.Second), Arrival: "constant"},
			Stages: []schemas.StageSpec{{Name: "g", Rate: 10, Duration: d(2 * time.Second), Arrival: "gamma", Burstiness: 0.5}, {Concurrency: 3, Duration: d(time.Second), ThinkTime: d(time.Millisecond)}},
			Sweep:  &schemas.Sweep{MinRate: 1, MaxRate: 8, Stages: 4, Duration: d(time.Second), Scale: "geometric"}},
		Workload: schemas.Workload{Synthetic: &schemas.Synthetic{Input: schemas.LengthDist{Kind: "lognormal", Mean: 100, Std: 20, Max: 400}, Output: schemas.LengthDist{Kind: "fixed", Value: 16}},
			Images: &schemas.Images{Count: 1, Width: 8, Height: 8}, Cancel: &schemas.Cancel{Share: 0.5, AfterTokens: 3}},
		SLO:     schemas.SLO{TTFT: d(time.Second), NTPOT: d(50 * time.Millisecond)},
		Capture: schemas.CaptureOptions{Workers: 2, DrainTimeout: d(3 * time.Second), MemoryBudget: 64 << 20},
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := WriteConfig(path, cfg, "two lines\nof comment"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); !strings.HasPrefix(string(b), "# two lines\n# of comment\n") {
		t.Errorf("%s starts %q; want the comment first", path, b[:min(len(b), 40)])
	}
	loaded, err := LoadConfig(path)
	if err != nil {
		t.Fatalf("LoadConfig of what WriteConfig wrote: %v", err)
	}
	v := &validator{path: "value"}
	if err := v.check(cfg, "", false); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(cfg)
	got, _ := json.Marshal(loaded)
	if string(got) != string(want) {
		t.Errorf("LoadConfig(WriteConfig(cfg)) =\n%s\nwant\n%s", got, want)
	}
}
