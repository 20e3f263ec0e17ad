// Package search finds the highest rate at which a config's SLOs hold: `wirebench search`. Each
// step is an ordinary run directory (replay, capture, aggregate) at one constant or Poisson
// rate; Next chooses the rates, Judge gives each step its verdict, and the search keeps its
// record in DIR/search.json (schemas.SearchRecord) and DIR/summary.md.
package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wirebench/wirebench/aggregate"
	"github.com/wirebench/wirebench/capture"
	"github.com/wirebench/wirebench/internal/rundir"
	"github.com/wirebench/wirebench/replay"
	"github.com/wirebench/wirebench/schemas"
)

// Files of a search directory, besides the steps' run directories (step-NN).
const (
	RecordName  = "search.json"
	SummaryName = "summary.md"
)

// Config is one `wirebench search`.
type Config struct {
	ConfigPath  string         // the run config; its search section says what to look for
	Dir         string         // search directory to create (must be empty)
	Target      string         // base URL overriding target.url
	Calibration string         // a calibrate DIR/calibration.json: its faithful rate guards max_rate; "" = none
	Capture     capture.Config // capture options of every step; Run, Lock, Secrets and Watch are set per step
	ToolVersion string
	Args        []string
	Out         io.Writer // the summary at the end; nil = none
}

// Run runs the search and returns its record; DIR/search.json is rewritten after every step.
func Run(ctx context.Context, cfg Config, log *slog.Logger) (*schemas.SearchRecord, error) {
	loaded, err := replay.LoadConfig(cfg.ConfigPath)
	if err != nil {
		return nil, err
	}
	if loaded.Search == (schemas.Search{}) {
		return nil, fmt.Errorf("%s: search: missing (give at least search.min_rate and search.max_rate)", cfg.ConfigPath)
	}
	if ents, _ := os.ReadDir(cfg.Dir); len(ents) > 0 {
		return nil, fmt.Errorf("%s is not empty: search writes a fresh directory", cfg.Dir)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	s := loaded.Search.WithDefaults()
	rec := &schemas.SearchRecord{Version: schemas.SearchVersion, Config: cfg.ConfigPath, Goodput: s.Goodput, Precision: s.Precision,
		MinRate: s.MinRate, MaxRate: s.MaxRate, Arrival: s.Arrival, StepNs: int64(s.Duration), SLO: sloText(loaded.SLO)}
	if err := guard(rec, cfg.Calibration); err != nil {
		return nil, err
	}
	if loaded.SLO == (schemas.SLO{}) {
		rec.Notes = append(rec.Notes, "the config has no SLO: every step passes unless requests fail")
	}
	plan := Plan{MinRate: s.MinRate, MaxRate: s.MaxRate, Precision: s.Precision, MaxSteps: s.MaxSteps}
	var steps []Step
	for {
		d := Next(plan, steps)
		if d.Outcome != "" {
			finish(rec, d)
			break
		}
		st, err := runStep(ctx, cfg, loaded, s, len(steps), d, log)
		if st != nil {
			rec.Steps = append(rec.Steps, *st)
			steps = append(steps, Step{Rate: st.Rate, Verdict: st.Verdict})
			log.Info("search step", "step", st.Index, "rate", st.Rate, "verdict", st.Verdict, "reason", st.Reason)
		}
		if errors.Is(err, capture.ErrInterrupted) {
			finish(rec, Decision{Outcome: schemas.OutcomeInterrupted, Why: "interrupted"})
			rec.Done = false
			return rec, errors.Join(writeAll(cfg, rec), err)
		}
		if err != nil {
			return rec, errors.Join(err, writeAll(cfg, rec))
		}
		if err := writeRecord(cfg.Dir, rec); err != nil {
			return rec, err
		}
	}
	return rec, writeAll(cfg, rec)
}

// guard notes a max_rate past the faithful rate of the calibration given.
func guard(rec *schemas.SearchRecord, path string) error {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("calibration: %w", err)
	}
	var cal schemas.Calibration
	if err := json.Unmarshal(b, &cal); err != nil {
		return fmt.Errorf("calibration %s: %w", path, err)
	}
	rec.FaithfulMax = cal.FaithfulRate
	if rec.MaxRate > cal.FaithfulRate {
		rec.Notes = append(rec.Notes, fmt.Sprintf("search.max_rate %s req/s is past this machine's faithful rate %s req/s (%s): steps above it may measure the client, not the server",
			Rate(rec.MaxRate), Rate(cal.FaithfulRate), path))
	}
	return nil
}

// runStep runs one step: DIR/step-NN planned by replay from the config with one stage at the
// step's rate (its warmup kept), captured and aggregated. The step is nil when it could not
// be run at all.
func runStep(ctx context.Context, cfg Config, loaded *schemas.Config, s schemas.Search, i int, d Decision, log *slog.Logger) (*schemas.SearchStep, error) {
	name := fmt.Sprintf("step-%02d", i)
	dir := filepath.Join(cfg.Dir, name)
	stage := schemas.StageSpec{Name: "rate-" + Rate(d.Rate), Rate: d.Rate, Duration: s.Duration, Arrival: s.Arrival}
	stepCfg := *loaded
	stepCfg.Load = schemas.Load{Warmup: loaded.Load.Warmup, Stages: []schemas.StageSpec{stage}}
	log.Info("search step", "step", i, "rate", d.Rate, "why", d.Why, "dir", dir)
	lock, err := rundir.Acquire(dir, cfg.Args, log)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	if err := replay.Plan(ctx, &stepCfg, replay.Options{ConfigPath: cfg.ConfigPath, Out: dir, Target: cfg.Target,
		ToolVersion: cfg.ToolVersion, Args: cfg.Args, NeedEnv: true}, log); err != nil {
		lock.RemoveIfCreated()
		return nil, fmt.Errorf("%s: replay: %w", name, err)
	}
	release, err := capture.Reserve(dir)
	if err != nil {
		return nil, err
	}
	defer release()
	idx := int32(0)
	if loaded.Load.Warmup != nil {
		idx = 1
	}
	var early string
	ccfg := cfg.Capture
	ccfg.Run, ccfg.Lock, ccfg.Secrets = dir, lock.File(), &loaded.Target
	ccfg.Watch = func(l capture.Live) string {
		early = ClearlyFailing(l, idx, d.Rate, s.Goodput, loaded.SLO.TTFT.D())
		return early
	}
	capErr := capture.Run(ctx, ccfg, log)
	if capErr != nil && !errors.Is(capErr, capture.ErrInterrupted) && !errors.Is(capErr, capture.ErrWorkerDied) {
		return nil, fmt.Errorf("%s: capture: %w", name, capErr)
	}
	sum, err := aggregate.Run(context.WithoutCancel(ctx), aggregate.Config{Runs: []string{dir}, Args: cfg.Args}, log)
	if err != nil {
		return nil, fmt.Errorf("%s: aggregate: %w", name, err)
	}
	st := &schemas.SearchStep{Index: i, Rate: d.Rate, Dir: name, Why: d.Why, EarlyStop: early}
	if err := fill(st, sum, dir, loaded.SLO, s.Goodput); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if errors.Is(capErr, capture.ErrWorkerDied) && st.Verdict == schemas.StepPass {
		st.Verdict, st.Reason = schemas.StepUntrusted, "a capture worker died: "+capErr.Error()
	}
	if errors.Is(capErr, capture.ErrInterrupted) {
		return st, capErr
	}
	return st, nil
}

// fill copies the step's figures from its stage row and requests, and judges it.
func fill(st *schemas.SearchStep, sum *aggregate.Summary, dir string, slo schemas.SLO, goodput float64) error {
	var row *schemas.Stage
	for i := range sum.Stages {
		if sum.Stages[i].Mode == schemas.ModeOpen {
			row = &sum.Stages[i]
		}
	}
	if row == nil {
		return errors.New("no measured stage")
	}
	rows, err := schemas.ReadFile[schemas.MetricRequest](schemas.FileOf[schemas.MetricRequest](dir))
	if err != nil {
		return err
	}
	st.Misses = countMisses(rows, row.Stage, slo)
	st.GoodputShare, st.AchievedRate, st.Requests = row.GoodputShare, row.AchievedRate, row.Requests
	st.LoadDelivered, st.LoadBlame, st.ClientBound, st.LatencyNote = row.LoadDelivered, row.LoadBlame, row.ClientBound, row.ClientBoundReason
	st.TTFTP50Ns, st.TTFTP99Ns, st.E2EP99Ns = row.TTFT.P50, row.TTFT.P99, row.E2E.P99
	st.Verdict, st.Reason = Judge(row, goodput, st.EarlyStop)
	return nil
}

// finish records the outcome, the bracket, what limits it and the sentence.
func finish(rec *schemas.SearchRecord, d Decision) {
	rec.Done, rec.Outcome = true, d.Outcome
	steps := make([]Step, len(rec.Steps))
	for i, s := range rec.Steps {
		steps[i] = Step{Rate: s.Rate, Verdict: s.Verdict}
	}
	rec.PassRate, rec.FailRate = Bracket(steps)
	for _, s := range rec.Steps {
		if s.Verdict == schemas.StepFail && s.Rate == rec.FailRate {
			rec.LimitedBy = LimitedBy(s.Misses, rec.Goodput)
		}
		if s.Verdict == schemas.StepUntrusted {
			rec.Notes = append(rec.Notes, fmt.Sprintf("step %d was not judged (%s): %s", s.Index, s.Reason, Advice(&s)))
		}
	}
	rec.Capacity = Sentence(rec, d.Why)
}

// Sentence is the search's answer in one sentence, e.g. "capacity under SLO: 1,840 req/s
// (between 1,840 and 1,890), limited by TTFT p99".
func Sentence(rec *schemas.SearchRecord, why string) string {
	limit := ""
	if rec.LimitedBy != "" {
		limit = ", limited by " + rec.LimitedBy
	}
	switch rec.Outcome {
	case schemas.OutcomeConverged:
		return fmt.Sprintf("capacity under SLO: %s req/s (between %s and %s)%s", Rate(rec.PassRate), Rate(rec.PassRate), Rate(rec.FailRate), limit)
	case schemas.OutcomeBelowMin:
		return fmt.Sprintf("capacity under SLO: below %s req/s (min_rate fails)%s", Rate(rec.MinRate), limit)
	case schemas.OutcomeAboveMax:
		return fmt.Sprintf("capacity under SLO: at least %s req/s (max_rate passes)", Rate(rec.MaxRate))
	}
	bracket := "no step passed"
	if rec.PassRate > 0 {
		bracket = fmt.Sprintf("at least %s req/s", Rate(rec.PassRate))
	}
	if rec.FailRate > 0 {
		bracket += fmt.Sprintf(", below %s", Rate(rec.FailRate))
	}
	return fmt.Sprintf("capacity under SLO: not found (%s: %s); %s%s", rec.Outcome, why, bracket, limit)
}

// writeRecord writes DIR/search.json atomically.
func writeRecord(dir string, rec *schemas.SearchRecord) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", RecordName, err)
	}
	return schemas.WriteFileAtomic(filepath.Join(dir, RecordName), append(b, '\n'))
}

// writeAll writes the record and the summary, and prints the summary to cfg.Out.
func writeAll(cfg Config, rec *schemas.SearchRecord) error {
	if err := writeRecord(cfg.Dir, rec); err != nil {
		return err
	}
	md := Markdown(rec)
	if err := schemas.WriteFileAtomic(filepath.Join(cfg.Dir, SummaryName), []byte(md)); err != nil {
		return err
	}
	if cfg.Out != nil {
		_, err := io.WriteString(cfg.Out, md)
		return err
	}
	return nil
}

// sloText lists the SLOs set: "ttft ≤ 500ms, e2e ≤ 10s".
func sloText(slo schemas.SLO) string {
	var parts []string
	for _, l := range []struct {
		name  string
		limit schemas.Duration
	}{{"ttft", slo.TTFT}, {"tpot", slo.TPOT}, {"itl", slo.ITL}, {"ntpot", slo.NTPOT}, {"e2e", slo.E2E}} {
		if l.limit > 0 {
			parts = append(parts, fmt.Sprintf("%s ≤ %v", l.name, l.limit.D()))
		}
	}
	return strings.Join(parts, ", ")
}

// ms formats a nullable duration in milliseconds; – (never 0) for null: a step without an ok
// request has no latency.
func ms(ns *int64) string {
	if ns == nil {
		return "–"
	}
	return fmt.Sprintf("%.1f", float64(*ns)/float64(time.Millisecond))
}

// pct formats a nullable share as a percentage; – for null.
func pct(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.2f%%", 100**v)
}
