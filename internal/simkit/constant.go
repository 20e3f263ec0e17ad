package simkit

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wirebench/wirebench/replay"
	"github.com/wirebench/wirebench/schemas"
)

// ConstantStage is one evenly spaced open-loop stage of a run made by WriteConstantRun.
type ConstantStage struct {
	Rate        float64       // requests per second
	Duration    time.Duration // stage length
	InputTokens int32         // prompt length (words of the simulator's whitespace tokenizer); 0 = 1
	MaxTokens   int32         // output tokens asked for; 0 = 1
}

// WriteConstantRun plans a run directory of evenly spaced open-loop stages against target with
// replay (fixed-length synthetic prompts, whitespace tokenizer, ignore_eos), the one place
// schedules are made. Every stage must ask for the same lengths. Benchmarks and tests use it to
// drive capture without writing a config file by hand; the config is kept as DIR/constant.yaml.
func WriteConstantRun(dir string, target schemas.Target, stages []ConstantStage) error {
	if len(stages) == 0 {
		return fmt.Errorf("constant run %s: no stages", dir)
	}
	in, out := max(stages[0].InputTokens, 1), max(stages[0].MaxTokens, 1)
	target.IgnoreEOS = true
	tj, err := json.Marshal(target)
	if err != nil {
		return fmt.Errorf("constant run %s: encode target: %w", dir, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "name: constant\ntarget: %s\ntokenizer: whitespace\nload:\n  stages:\n", tj)
	for i, s := range stages {
		if max(s.InputTokens, 1) != in || max(s.MaxTokens, 1) != out {
			return fmt.Errorf("constant run %s: stage %d asks for %d/%d tokens; every stage must ask for %d/%d", dir, i, s.InputTokens, s.MaxTokens, in, out)
		}
		fmt.Fprintf(&b, "    - {name: rate-%g, rate: %g, duration: %s, arrival: constant}\n", s.Rate, s.Rate, s.Duration)
	}
	fmt.Fprintf(&b, "workload:\n  synthetic: {input: {kind: fixed, value: %d}, output: {kind: fixed, value: %d}}\n", in, out)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, "constant.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return err
	}
	log := slog.New(slog.DiscardHandler)
	return replay.Run(context.Background(), replay.Options{ConfigPath: path, Out: dir, ToolVersion: "simkit.WriteConstantRun"}, log)
}
