package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/wirebench/wirebench/calibrate"
	"github.com/wirebench/wirebench/capture"
)

// CalibrateCmd is `wirebench calibrate`: this machine's own client overhead at rising rates
// against the built-in simulator, and the highest rate it measures faithfully.
type CalibrateCmd struct {
	Out           string        `short:"o" placeholder:"DIR" help:"Run directory to create (required unless --from): a normal run (schedule, raw, metrics; 'wirebench report DIR' draws it) plus DIR/calibration.json and DIR/calibrate.yaml (the replay config of the sweep)."`
	From          string        `placeholder:"FILE" help:"Read an earlier DIR/calibration.json instead of sweeping: with --for-rate, print how many hosts of that machine's kind the rate needs."`
	Workers       int           `help:"Worker processes, each pinned to one CPU (0 = the CPUs this process may use, less the one given to the simulator on machines with 3 or more)." default:"0"`
	OutputTokens  int           `help:"Output tokens per request (ignore_eos): one content chunk each." default:"16"`
	InputTokens   int           `help:"Prompt tokens per request." default:"64"`
	MinRate       float64       `help:"First rate of the geometric sweep, requests/s." default:"25"`
	MaxRate       float64       `help:"Last rate of the sweep, requests/s." default:"400"`
	Steps         int           `help:"Rates in the sweep, geometrically spaced from --min-rate to --max-rate." default:"5"`
	Geometric     float64       `placeholder:"FACTOR" help:"Instead of --steps: rates --min-rate, x FACTOR, ... up to --max-rate (FACTOR > 1)." default:"0"`
	StageDuration time.Duration `help:"Length of each rate's stage." default:"5s"`
	Warmup        time.Duration `help:"Warmup stage at --min-rate before the sweep (left out of the figures); 0 = none." default:"1s"`
	TTFT          time.Duration `name:"ttft" help:"Simulator (fixed mode): time to the first token." default:"20ms"`
	ITL           time.Duration `name:"itl" help:"Simulator (fixed mode): gap between tokens." default:"10ms"`
	StampLead     time.Duration `help:"Simulator: take each chunk's send time, then wait this long before writing it. A known error that calibrate must find (self-test); 0 in real calibrations." default:"0s"`
	Target        string        `placeholder:"URL" help:"Calibrate against an already running 'wirebench sim' (it must be one: its x-sim send times are the ground truth; give it --mode fixed --ttft/--itl to match) instead of starting one."`
	ForRate       float64       `placeholder:"RATE" help:"Size the workers for this rate (requests/s) at worker ρ = 0.5 from the fitted CPU model (0 = --max-rate), and, when given, the hosts of this machine's kind it needs (docs/kubernetes.md)." default:"0"`
	SingleProcess bool          `help:"Run the naive client for comparison: one worker, GOMAXPROCS 1, kernel timestamps off, arrival stamped in user space after decoding each event."`
	Tap           string        `enum:"auto,on,off" default:"auto" help:"The capture's packet tap (see capture --tap); with it, the arrival errors use the tap's times. Off for --single-process. One of: ${enum}."`
}

// Help is shown under `wirebench calibrate --help`.
func (c *CalibrateCmd) Help() string {
	return `Starts 'wirebench sim' on 127.0.0.1 (fixed mode, no queueing; pinned to a CPU of its own when
this process may use 3 or more CPUs, else sharing them with the client, which the output says),
plans a sweep of constant-rate stages with replay (DIR/calibrate.yaml), captures it, aggregates
it, and compares every measured arrival with the simulator's own send time (its x-sim comment).

Per rate: achieved vs target rate (fidelity), send lag p50/p99, read lag p99 (user - kernel
time), TTFT error = t_first - server_sent_first, chunk arrival error = t_j - server_sent_j, ITL
error = measured gap - true gap (median and p99 of |error|), share of exact kernel timestamps,
worker ρ (CPU / wall), client CPU per request and per output token.

A rate is faithful when fidelity (achieved / target) is within 99.5%..100.5%, TTFT error p99
< 1 ms and no request failed; the
highest faithful rate is the highest one with every lower rate faithful too. The worker CPU
model ρ = idle + c × rate per worker is a least-squares fit over the faithful stages; μ per worker
= (1 - idle) / c; --for-rate gives the workers needed at ρ = 0.5, and the hosts of this kind
(capture alone, one worker per CPU) that the rate needs: each host takes CPUs × (0.5 - idle) / c,
and no more than the highest faithful rate (scaled to its CPUs) when the sweep went past it.
--from DIR/calibration.json --for-rate RATE prints that from an earlier calibration at once.

The sweep is one schedule; capture stops it early once a rate ends with under 90% of its sends
made on time (the client has broken), and rates never sent are left out.

Output: a table on stdout, DIR/calibration.json, and the run itself ('wirebench report DIR').`
}

func (c *CalibrateCmd) Run(ctx context.Context, log *slog.Logger, lf logFlags) error {
	switch {
	case c.From != "":
		return c.planFrom()
	case c.Out == "":
		return &exitError{code: 2, err: errors.New("-o DIR is required (or --from FILE with --for-rate)")}
	}
	cfg := calibrate.Config{
		Dir: c.Out, Workers: c.Workers, InputTokens: c.InputTokens, OutputTokens: c.OutputTokens,
		MinRate: c.MinRate, MaxRate: c.MaxRate, Steps: c.Steps, Factor: c.Geometric,
		StageDuration: c.StageDuration, Warmup: c.Warmup, TTFT: c.TTFT, ITL: c.ITL, StampLead: c.StampLead,
		Target: c.Target, SingleProcess: c.SingleProcess, ForRate: c.ForRate, Tap: c.Tap,
		ToolVersion: Version(), Args: os.Args[1:], WorkerArgs: lf, Out: os.Stdout,
	}
	cal, err := calibrate.Run(ctx, cfg, log)
	if errors.Is(err, capture.ErrInterrupted) {
		return &exitError{code: 130, err: err}
	}
	if cal != nil && c.ForRate > 0 {
		if p, perr := calibrate.PlanHosts(cal, c.ForRate); perr != nil {
			fmt.Printf("for %g requests/s: no host plan: %v\n", c.ForRate, perr)
		} else if werr := p.WriteText(os.Stdout, cal); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// planFrom prints the host plan of --for-rate from an earlier calibration.json.
func (c *CalibrateCmd) planFrom() error {
	if c.ForRate <= 0 {
		return &exitError{code: 2, err: errors.New("--from needs --for-rate RATE (> 0)")}
	}
	cal, err := calibrate.Load(c.From)
	if err != nil {
		return err
	}
	p, err := calibrate.PlanHosts(cal, c.ForRate)
	if err != nil {
		return fmt.Errorf("%s: %w", c.From, err)
	}
	return p.WriteText(os.Stdout, cal)
}
