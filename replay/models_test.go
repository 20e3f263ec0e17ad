package replay

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wirebench/wirebench/schemas"
)

func TestModelPicker(t *testing.T) {
	tgt := schemas.Target{Models: []schemas.TargetModel{{Name: "base", Weight: 7}, {Name: "base", LoRA: "slow", Weight: 3}}}
	p := newModelPicker(&tgt, 42)
	n := map[string]int{}
	for seq := range int64(10000) {
		n[p.pick(&schemas.ScheduleRequest{Seq: seq, Conversation: -1})]++
	}
	// 3000 of 10000 at p = 0.3: sd 46; 5 sd either side.
	if n["slow"] < 2770 || n["slow"] > 3230 || n["base"]+n["slow"] != 10000 {
		t.Errorf("70/30 mix over 10000 requests = %v; want about 7000/3000", n)
	}
	again := newModelPicker(&tgt, 42)
	other := newModelPicker(&tgt, 43)
	var diff int
	for seq := range int64(100) {
		r := &schemas.ScheduleRequest{Seq: seq, Conversation: -1}
		if p.pick(r) != again.pick(r) {
			t.Fatalf("seed 42, seq %d: %s then %s; want the same model for the same seed", seq, p.pick(r), again.pick(r))
		}
		if p.pick(r) != other.pick(r) {
			diff++
		}
	}
	if diff == 0 {
		t.Error("seeds 42 and 43 drew the same 100 models; want another draw for another seed")
	}
	for c := range int64(50) {
		first := p.pick(&schemas.ScheduleRequest{Seq: c * 10, Conversation: c})
		for turn := int64(1); turn < 4; turn++ {
			if m := p.pick(&schemas.ScheduleRequest{Seq: c*10 + turn, Conversation: c}); m != first {
				t.Fatalf("conversation %d turn %d: model %s; want its first turn's %s", c, turn, m, first)
			}
		}
	}
	single := schemas.Target{Model: "m"}
	if m := newModelPicker(&single, 1).pick(&schemas.ScheduleRequest{}); m != "m" {
		t.Errorf("target.model m: picked %q; want m", m)
	}
	if newModelPicker(&schemas.Target{}, 1) != nil {
		t.Error("no model: want a nil picker")
	}
}

func TestLoadConfigModelErrors(t *testing.T) {
	rest := "load:\n  stages:\n    - {rate: 10, duration: 1s}\nworkload:\n  synthetic:\n    input: {kind: fixed, value: 8}\n    output: {kind: fixed, value: 8}\n"
	for _, tc := range []struct{ name, target, want string }{
		{"both", "target:\n  model: m\n  models: [{name: a}]\n", "c.yaml:3: target.models: set target.model or target.models, not both"},
		{"no name", "target:\n  models: [{weight: 1}]\n", "target.models[0].name: required"},
		{"negative weight", "target:\n  models: [{name: a, weight: -1}]\n", "target.models[0].weight: -1: want a number >= 0"},
		{"same model twice", "target:\n  models: [{name: a}, {name: b, lora: a}]\n", `target.models[1]: sends model "a" as target.models[0] does`},
	} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(path, []byte(tc.target+rest), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: LoadConfig error = %v; want it to contain %q", tc.name, err, tc.want)
		}
	}
}

// TestDryRunModels: --dry-run of a mix ends with the requests planned per model, which add up.
func TestDryRunModels(t *testing.T) {
	var out bytes.Buffer
	err := Run(context.Background(), Options{ConfigPath: "../examples/lora-mix.yaml", DryRun: true, DryRunOut: &out}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var base, slow int
	last := strings.TrimSpace(out.String())
	last = last[strings.LastIndex(last, "\n")+1:]
	if _, err := fmt.Sscanf(last, "requests by model: base %d, slow %d", &base, &slow); err != nil || base+slow != 60 || slow == 0 {
		t.Errorf("dry run's last line %q (%v); want requests by model: base N, slow M adding up to 60", last, err)
	}
}
