package compare

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/wirebench/wirebench/schemas"
)

// Load reads a run directory's metrics/stages.parquet (required), metrics/requests.parquet
// (for the intervals; without it the changes have none) and manifest.json (for its label).
// The caller sets the run's trust verdict.
func Load(dir string) (*Run, error) {
	r := &Run{Dir: dir, Label: filepath.Base(absOr(dir))}
	m, err := schemas.ReadManifest(filepath.Join(dir, schemas.ManifestName))
	switch {
	case err == nil && m.RunID != "":
		r.Label = m.RunID
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("run %s: read manifest: %w", dir, err)
	}
	stagesPath := schemas.KindOf[schemas.Stage]().In(dir)
	r.Stages, err = schemas.ReadFile[schemas.Stage](stagesPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("run %s: %s does not exist: run `wirebench aggregate %s` first", dir, stagesPath, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("run %s: read stages: %w", dir, err)
	}
	slices.SortStableFunc(r.Stages, func(a, b schemas.Stage) int { return cmp.Compare(a.Stage, b.Stage) })
	reqs, err := schemas.ReadFile[schemas.MetricRequest](schemas.KindOf[schemas.MetricRequest]().In(dir))
	switch {
	case err == nil:
		r.Samples = SamplesOf(reqs)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("run %s: read requests: %w", dir, err)
	}
	return r, nil
}

func absOr(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// sortBySent orders the indices by the requests' send time (then seq).
func sortBySent(reqs []schemas.MetricRequest, idx []int) {
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(reqs[a].SentNs, reqs[b].SentNs), cmp.Compare(reqs[a].Seq, reqs[b].Seq))
	})
}
