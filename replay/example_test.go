package replay_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/wirebench/wirebench/replay"
)

// Plan the smoke run without writing anything and print its stages.
func ExampleRun() {
	err := replay.Run(context.Background(), replay.Options{
		ConfigPath: "../examples/smoke.yaml",
		DryRun:     true,
		DryRunOut:  os.Stdout,
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	//   stage            name  mode  requests  rate/s  start  duration  in p50  in p90  in p99  in max  out p50  out p90  out p99  out max
	//       0  constant-20rps  open       100      20     0s        5s      64      64      64      64       16       16       16       16
	//       1  constant-50rps  open       250      50     5s        5s      64      64      64      64       16       16       16       16
	// total: 350 requests, 348 prompts (token percentiles are exact below 32768)
}

func ExampleLoadConfig() {
	cfg, err := replay.LoadConfig("../examples/smoke.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Target.API, len(cfg.Load.Stages), cfg.Workload.Synthetic.Input.Value, cfg.Workload.Synthetic.Output.Value)
	// Output: completions 2 64 16
}
