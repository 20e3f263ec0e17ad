package capture

import (
	"encoding/json"
	"fmt"
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
	InputTokens int32         // prompt length (words of the simulator's whitespace tokenizer)
	MaxTokens   int32         // output tokens asked for
}

// WriteConstantRun writes a run directory (manifest.json, schedule/requests.parquet,
// schedule/prompts.parquet) of evenly spaced open-loop stages against target, without going
// through replay. Benchmarks, calibration and tests use it to drive capture directly.
func WriteConstantRun(dir string, target replay.Target, stages []ConstantStage) error {
	rc := replay.Config{Name: "constant", Target: target}
	cfgJSON, err := json.Marshal(rc)
	if err != nil {
		return fmt.Errorf("encode config: %w", err)
	}
	host, _ := os.Hostname()
	m := &schemas.Manifest{RunID: filepath.Base(dir), ToolVersion: "capture.WriteConstantRun", Host: host, ClockSource: "CLOCK_REALTIME",
		Created: time.Now(), Config: cfgJSON, Status: schemas.StatusPlanned}
	var reqs []schemas.ScheduleRequest
	var prompts []schemas.Prompt
	var offset, seq int64
	for i, s := range stages {
		n := int64(s.Rate * s.Duration.Seconds())
		m.Stages = append(m.Stages, schemas.StageInfo{Index: int32(i), Name: fmt.Sprintf("rate-%g", s.Rate), Mode: "open", Arrival: "constant",
			Rate: s.Rate, OffsetNs: offset, DurationNs: int64(s.Duration), Requests: n})
		text := strings.TrimSpace(strings.Repeat("hello ", int(max(s.InputTokens, 1))))
		prompts = append(prompts, schemas.Prompt{PromptID: int64(i), InputTokens: s.InputTokens, Text: text})
		for j := range n {
			reqs = append(reqs, schemas.ScheduleRequest{Seq: seq, Stage: int32(i), PlannedOffsetNs: offset + int64(float64(j)*1e9/s.Rate),
				User: -1, Conversation: -1, DependsOn: -1, PromptID: int64(i), InputTokens: s.InputTokens, MaxTokens: s.MaxTokens, PrefixGroup: -1, Source: "synthetic"})
			seq++
		}
		offset += int64(s.Duration)
	}
	p := schemas.Producer{Command: "capture.WriteConstantRun"}
	if err := schemas.WriteFile(filepath.Join(dir, "schedule", "requests.parquet"), reqs, p); err != nil {
		return err
	}
	if err := schemas.WriteFile(filepath.Join(dir, "schedule", "prompts.parquet"), prompts, p); err != nil {
		return err
	}
	m.Steps = []schemas.Step{{Name: "replay", Started: m.Created, Ended: time.Now(), Status: "ok"}}
	return m.Write(filepath.Join(dir, schemas.ManifestName))
}
