// Package construn plans constant-rate runs: evenly spaced open-loop stages of fixed-length
// synthetic prompts, planned by replay (the one place schedules are made) from a config built
// in Go. Calibrate's sweep, the benchmarks and the capture and end-to-end tests make their runs
// with it. It imports replay and schemas.
package construn

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/wirebench/wirebench/replay"
	"github.com/wirebench/wirebench/schemas"
)

// Stage is one evenly spaced open-loop stage of a constant run.
type Stage struct {
	Rate        float64       // requests per second
	Duration    time.Duration // stage length
	InputTokens int32         // prompt length (words of the simulator's whitespace tokenizer); 0 = 1
	MaxTokens   int32         // output tokens asked for; 0 = 1
}

// Config is the replay config of a constant run against target: a stage "rate-R" with
// constant arrivals per Stage, fixed-length synthetic prompts, the whitespace tokenizer the
// simulator counts with, and ignore_eos, so that every response is as long as asked. Every
// stage must ask for the same lengths.
func Config(target schemas.Target, stages []Stage) (*schemas.Config, error) {
	if len(stages) == 0 {
		return nil, fmt.Errorf("no stages")
	}
	in, out := max(stages[0].InputTokens, 1), max(stages[0].MaxTokens, 1)
	target.IgnoreEOS = true
	cfg := &schemas.Config{Name: "constant", Target: target, Tokenizer: "whitespace",
		Workload: schemas.Workload{Synthetic: &schemas.Synthetic{
			Input:  schemas.LengthDist{Kind: "fixed", Value: int(in)},
			Output: schemas.LengthDist{Kind: "fixed", Value: int(out)},
		}}}
	for i, s := range stages {
		if max(s.InputTokens, 1) != in || max(s.MaxTokens, 1) != out {
			return nil, fmt.Errorf("stage %d asks for %d/%d tokens; every stage must ask for %d/%d", i, s.InputTokens, s.MaxTokens, in, out)
		}
		cfg.Load.Stages = append(cfg.Load.Stages, schemas.StageSpec{Name: fmt.Sprintf("rate-%g", s.Rate), Rate: s.Rate,
			Duration: schemas.Duration(s.Duration), Arrival: schemas.ArrivalConstant})
	}
	return cfg, nil
}

// Write plans a constant run (Config) against target into the run directory dir with
// replay.Plan and keeps its config as dir/constant.yaml, so that benchmarks and tests drive
// capture (or `wirebench run dir/constant.yaml`) without writing a config by hand.
func Write(dir string, target schemas.Target, stages []Stage) error {
	cfg, err := Config(target, stages)
	if err != nil {
		return fmt.Errorf("constant run %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, "constant.yaml")
	if err := replay.WriteConfig(path, cfg, ""); err != nil {
		return err
	}
	log := slog.New(slog.DiscardHandler)
	return replay.Plan(context.Background(), cfg, replay.Options{ConfigPath: path, Out: dir, ToolVersion: "construn.Write"}, log)
}
