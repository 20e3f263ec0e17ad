package construn

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/replay"
	"github.com/wirebench/wirebench/schemas"
)

// Write plans rate × duration evenly spaced requests per stage, of the lengths asked for, and
// keeps a constant.yaml that replay loads back to the config it planned.
func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	target := schemas.Target{URL: "http://127.0.0.1:9", API: "completions", Model: "m"}
	stages := []Stage{{Rate: 20, Duration: time.Second, InputTokens: 5, MaxTokens: 3}, {Rate: 40, Duration: 500 * time.Millisecond, InputTokens: 5, MaxTokens: 3}}
	if err := Write(dir, target, stages); err != nil {
		t.Fatal(err)
	}
	reqs, err := schemas.ReadFile[schemas.ScheduleRequest](schemas.FileOf[schemas.ScheduleRequest](dir))
	if err != nil {
		t.Fatal(err)
	}
	perStage := map[int32]int{}
	for _, r := range reqs {
		perStage[r.Stage]++
		if r.InputTokens != 5 || r.MaxTokens != 3 {
			t.Errorf("request %d: %d/%d tokens; want 5/3", r.Seq, r.InputTokens, r.MaxTokens)
		}
	}
	if perStage[0] != 20 || perStage[1] != 20 {
		t.Errorf("requests per stage = %v; want 20 and 20", perStage)
	}
	cfg, err := replay.LoadConfig(filepath.Join(dir, "constant.yaml"))
	if err != nil {
		t.Fatalf("constant.yaml: %v", err)
	}
	if !cfg.Target.IgnoreEOS || len(cfg.Load.Stages) != 2 || cfg.Load.Stages[1].Name != "rate-40" || cfg.Load.Stages[1].Arrival != "constant" {
		t.Errorf("constant.yaml loads as target %+v, stages %+v; want ignore_eos and stages rate-20, rate-40 with constant arrivals", cfg.Target, cfg.Load.Stages)
	}
}

func TestConfigErrors(t *testing.T) {
	target := schemas.Target{URL: "http://127.0.0.1:9"}
	for _, tc := range []struct {
		name   string
		stages []Stage
		want   string
	}{
		{"none", nil, "no stages"},
		{"lengths differ", []Stage{{Rate: 1, Duration: time.Second, InputTokens: 4}, {Rate: 2, Duration: time.Second, InputTokens: 8}}, "stage 1 asks for 8/0 tokens; every stage must ask for 4/1"},
	} {
		if _, err := Config(target, tc.stages); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Config = %v; want an error with %q", tc.name, err, tc.want)
		}
	}
}
