package capture

import (
	"context"
	"io"
	"log/slog"

	"github.com/wirebench/wirebench/capture/internal/worker"
)

// WorkerProcess is one worker process of a capture (`wirebench worker`, started by the
// coordinator): its configuration, read from the first line of its stdin.
type WorkerProcess struct{ cfg worker.Config }

// ReadWorker reads the worker's configuration from the first line of in; the rest of in
// carries the coordinator's control lines, and out takes the worker's messages.
func ReadWorker(in io.Reader, out io.Writer) (*WorkerProcess, error) {
	cfg, rest, err := worker.ReadConfig(in)
	if err != nil {
		return nil, err
	}
	cfg.In, cfg.Out = rest, out
	return &WorkerProcess{cfg: cfg}, nil
}

// Index is the worker's number inside its host's capture.
func (p *WorkerProcess) Index() int { return p.cfg.Worker }

// Run sends the worker's share of the schedule and writes its raw parts; it returns when the
// share is done, the coordinator stops it, or ctx ends (then draining like a stop).
func (p *WorkerProcess) Run(ctx context.Context, log *slog.Logger) error {
	return worker.Run(ctx, p.cfg, log)
}
