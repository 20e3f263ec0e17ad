package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/wirebench/wirebench/compare"
	"github.com/wirebench/wirebench/report"
	"github.com/wirebench/wirebench/schemas"
)

// CompareCmd is `wirebench compare BASE NEW`: every percentile's change with its interval, and
// the --fail-on gate for CI.
type CompareCmd struct {
	Base   string   `arg:"" type:"existingdir" help:"Baseline run directory (with metrics/ from aggregate), or a directory of runs of one config (a set)."`
	New    string   `arg:"" type:"existingdir" help:"Run directory, or set, compared with it."`
	Format string   `short:"f" default:"text" enum:"text,markdown,json" help:"Output on stdout: text, markdown (a pull-request comment) or json (schemas/SCHEMAS.md#comparejson)."`
	FailOn []string `name:"fail-on" placeholder:"RULE" help:"Exit 3 when a significant change passes this threshold (repeatable): METRIC.PERCENTILE>+N% or <-N%, METRIC ttft, ttfc, tpot, e2e or ntpot, PERCENTILE p50, p90, p99 or p99.9; e.g. ttft.p99>+5%. A run whose trust is red, or a gated percentile without an interval, exits 4."`
}

// Help is shown under `wirebench compare --help`.
func (c *CompareCmd) Help() string {
	return `Pairs each stage of NEW with the stage of BASE of the same name, else of the same mode and
rate (unmatched stages are listed), and gives every latency percentile's change NEW / BASE - 1
with a 95% interval from a block bootstrap of each run's requests in time order, widened by
the client's own error bounds. That interval covers each run's own sampling, not what changes
between runs as a whole (a machine's speed from one minute to the next): BASE and NEW may each
be a directory of two or more runs of one config (a set), and the interval is then taken
between the runs (Student t over the runs' percentiles, as wide at least as their own
sampling). A change is significant when its interval excludes 0 and it
survives Holm's correction over the pair's changes. With --fail-on the gate checks each rule on
each stage pair at 5% divided by the number of checks (Bonferroni). Exit codes: 0 pass (or no
gate), 1 error, 2 bad flag, 3 gate failed, 4 gate untrusted. See docs/design/compare.md.`
}

func (c *CompareCmd) Run() error {
	rules, err := compare.ParseRules(c.FailOn)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	var sets [2]compare.Set
	for i, dir := range []string{c.Base, c.New} {
		if sets[i], err = compare.LoadSet(dir); err != nil {
			return err
		}
		for _, r := range sets[i].Runs {
			r.Trust, r.TrustSentence = report.Trust(r.Stages)
		}
	}
	res, err := compare.CompareSets(sets[0], sets[1], compare.Options{Rules: rules})
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	switch c.Format {
	case "json":
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(os.Stdout, "%s\n", b)
		if err != nil {
			return err
		}
	case "markdown":
		err = compare.Markdown(os.Stdout, res)
	default:
		err = compare.Text(os.Stdout, res)
	}
	if err != nil {
		return err
	}
	return gateExit(res.Gate)
}

// gateExit turns the gate's verdict into the exit code: 3 for a significant regression past
// a threshold, 4 when the gate could not pass on what it was given (red trust, no interval).
func gateExit(g *schemas.CompareGate) error {
	if g == nil || g.Verdict == schemas.GatePass {
		return nil
	}
	first := g.Failures[0]
	for _, f := range g.Failures {
		if f.Verdict == g.Verdict {
			first = f
			break
		}
	}
	if g.Verdict == schemas.GateUntrusted {
		return &exitError{code: schemas.ExitGateUntrusted, err: fmt.Errorf("gate untrusted: %s", first.Reason)}
	}
	return &exitError{code: schemas.ExitGateFailed, err: fmt.Errorf("gate failed: %s", first.Reason)}
}
