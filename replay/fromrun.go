package replay

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/parquet-go/parquet-go"

	"github.com/wirebench/wirebench/schemas"
)

// runKind is workload.run: an earlier run's schedule, copied row for row.
type runKind struct{ *schemas.FromRun }

func runOf(w *schemas.Workload) workloadKind {
	if w.Run == nil {
		return nil
	}
	return runKind{w.Run}
}

func (k runKind) setDefaults()    {}
func (k runKind) ownTiming() bool { return true }

func (k runKind) files() []fileField {
	return []fileField{{"workload.run.dir", &k.Dir, true}}
}

func (k runKind) validate(v *validator, _ string) {
	if k.Dir == "" {
		v.errf("workload.run.dir", "required")
	}
}

func (k runKind) plan(p *planner) ([]schemas.StageInfo, error) {
	return copyRun(k.Dir, p.cfg.Target.API, p.o)
}

// copyRun copies an earlier run's schedule (requests, prompts and stages) row for row. Its
// prompts were built for its target API, so that must match.
func copyRun(dir, api string, o *output) ([]schemas.StageInfo, error) {
	m, err := schemas.ReadManifest(filepath.Join(dir, schemas.ManifestName))
	if err != nil {
		return nil, fmt.Errorf("workload.run: %w", err)
	}
	old, err := m.RunConfig()
	if err != nil {
		return nil, fmt.Errorf("workload.run: %s: %w", dir, err)
	}
	if old.Target.API != "" && old.Target.API != api {
		return nil, fmt.Errorf("workload.run: %s was planned for target.api %q; this config uses %q", dir, old.Target.API, api)
	}
	o.stats = make([]*stageStats, len(m.Stages))
	for i := range o.stats {
		o.stats[i] = newStageStats()
	}
	if err := copyRows(schemas.FileOf[schemas.Prompt](dir), o.addPromptRow); err != nil {
		return nil, err
	}
	nst := int32(len(m.Stages))
	err = copyRows(schemas.FileOf[schemas.ScheduleRequest](dir), func(r schemas.ScheduleRequest) error {
		if r.Stage < 0 || r.Stage >= nst {
			return fmt.Errorf("workload.run: %s: request seq %d has stage %d; the manifest lists %d stages", dir, r.Seq, r.Stage, nst)
		}
		return o.addRequest(r)
	})
	return m.Stages, err
}

func copyRows[T any](path string, add func(T) error) error {
	f, err := schemas.Open[T](path)
	if err != nil {
		return fmt.Errorf("workload.run: %w", err)
	}
	defer f.Close()
	if err := f.VerifyPages(); err != nil {
		return fmt.Errorf("workload.run: %w", err)
	}
	r := parquet.NewGenericReader[T](f.File)
	defer r.Close()
	buf := make([]T, 4096)
	for {
		n, err := r.Read(buf)
		for _, row := range buf[:n] {
			if err := add(row); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("workload.run: %s: %w: %v", path, schemas.ErrCorrupt, err)
		}
	}
}
