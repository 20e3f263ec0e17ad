package aggregate

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/wirebench/wirebench/internal/rundir"
	"github.com/wirebench/wirebench/schemas"
)

// checkOut refuses an output directory that holds another run, unless force: a manifest of
// another run id or one that does not parse, or a capture of its own (raw/: a host of this run
// not given as input, say). Aggregate writes into the first input, a fresh directory, or one
// holding this run's replay output or an earlier merge of it (examples/k8s merges into the
// replay's directory) as they are. It returns whether force replaces a run.
func checkOut(out string, runs []*runDir, force bool) (bool, error) {
	for i, r := range runs {
		if sameDir(out, r.dir) {
			if i > 0 {
				return false, fmt.Errorf("-o %s is the run directory %s given as input: only the first one given may receive the metrics", out, r.dir)
			}
			return false, nil
		}
	}
	why := otherRun(out, runs[0].manifest.RunID)
	if why == "" {
		return false, nil
	}
	if !force {
		return false, fmt.Errorf("%s holds another run (%s): aggregate -o would replace its manifest and metrics; use --force to replace that run, or choose another directory", out, why)
	}
	return true, nil
}

// otherRun says why dir holds a run other than runID; "" when it does not.
func otherRun(dir, runID string) string {
	held := strings.Join(rundir.Data(dir), ", ")
	m, err := schemas.ReadManifest(filepath.Join(dir, schemas.ManifestName))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Sprintf("a manifest that does not parse: %v", err)
	case m.RunID != runID:
		return fmt.Sprintf("run %s, status %s; %s", m.RunID, m.Status, cmp.Or(held, "no data"))
	}
	if len(rundir.Data(dir, "raw")) > 0 {
		return "a capture: " + held
	}
	return ""
}

// replaceOut removes what the run held in out besides its metrics, which this aggregate is
// about to write (--force); its manifest is replaced last.
func replaceOut(out string, log *slog.Logger) error {
	removed, err := rundir.RemoveData(out, "schedule", "raw", "report")
	log.Warn("--force: replacing the run in the output directory", "out", out, "removed", removed)
	return err
}

// sameDir says whether a and b name one directory.
func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}
