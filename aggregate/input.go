package aggregate

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// ErrInput marks bad input: a missing or truncated part, a manifest that disagrees with the
// files, runs that are not one run. Without Strict most of these are warnings.
var ErrInput = errors.New("bad input")

// part is one worker part of one run directory: its requests file and the chunks file written
// with it. A request's chunks are always in the chunks file of the same worker and part as its
// row (capture rolls both files together), so a part can be joined on its own.
type part struct {
	run      *runDir
	worker   int
	num      int
	requests string // path; empty when missing
	chunks   string // path; empty when missing
}

func (p *part) String() string { return fmt.Sprintf("%s w%02d part %04d", p.run.dir, p.worker, p.num) }

// runDir is one RUN directory (one host of a possibly distributed run). Its timestamps are
// taken as they are: no offset is applied between hosts (docs/design/clocks.md); how far apart
// the hosts' clocks may be is carried as an uncertainty instead (clock.go).
type runDir struct {
	dir      string
	manifest *schemas.Manifest
	config   schemas.Config
	parts    []*part
	tap      *tapIndex // the packet tap's segments; nil without

	// shard i of shards; shards is 0 when the directory holds no capture (only replay's output)
	shard, shards int
	recorded      map[int32]int64 // whole requests read (with all their events), per stage
	lost          map[int32]int64 // requests read without all their events, per stage
	lastSentNs    int64           // the latest send time read
	bounds        bounds          // what its raw rows can hold
	damage        []string        // "file: why" of each part missing, short or damaged
}

// warner collects warnings: logged with the file they concern, and errors when strict.
type warner struct {
	log    *slog.Logger
	strict bool
	list   []string
}

// warn records a warning about file; with strict it returns an error wrapping ErrInput.
func (w *warner) warn(file, msg string, args ...any) error {
	text := fmt.Sprintf(msg, args...)
	if w.strict {
		return fmt.Errorf("%s: %w: %s", file, ErrInput, text)
	}
	w.log.Warn(text, "file", file)
	w.list = append(w.list, file+": "+text)
	return nil
}

// openRuns reads the manifests of dirs, checks they are one run and lists their parts.
func openRuns(dirs []string, w *warner) ([]*runDir, error) {
	if len(dirs) == 0 {
		return nil, fmt.Errorf("%w: no run directory given", ErrInput)
	}
	var runs []*runDir
	for _, dir := range dirs {
		mpath := filepath.Join(dir, schemas.ManifestName)
		m, err := schemas.ReadManifest(mpath)
		if err != nil {
			return nil, fmt.Errorf("read manifest: %w", err)
		}
		r := &runDir{dir: dir, manifest: m, recorded: map[int32]int64{}, lost: map[int32]int64{}}
		if r.config, err = m.RunConfig(); err != nil {
			return nil, fmt.Errorf("%s: %w", mpath, err)
		}
		if r.shard, r.shards, err = hostShard(m); err != nil {
			return nil, fmt.Errorf("%s: %w: %w", mpath, ErrInput, err)
		}
		if len(runs) > 0 {
			first := runs[0].manifest
			if m.RunID != first.RunID {
				return nil, fmt.Errorf("%w: %s is run %q but %s is run %q: only hosts of one run merge", ErrInput, mpath, m.RunID, filepath.Join(runs[0].dir, schemas.ManifestName), first.RunID)
			}
			if !sameStages(m.Stages, first.Stages) {
				if err := w.warn(mpath, "stages differ from %s; using the first manifest's", runs[0].dir); err != nil {
					return nil, err
				}
			}
		}
		for _, miss := range m.Missing {
			if err := w.warn(mpath, "manifest says the run lacks: %s", miss); err != nil {
				return nil, err
			}
		}
		for _, ws := range m.Workers {
			if ws.Exit != "" && ws.Exit != "ok" {
				if err := w.warn(mpath, "worker %d (shard %d) ended with %q; its last part may be missing", ws.Worker, ws.Shard, ws.Exit); err != nil {
					return nil, err
				}
			}
		}
		if err := r.listParts(w); err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	if err := checkShards(runs); err != nil {
		return nil, err
	}
	seqs, now := plannedRequests(reference(runs).manifest), time.Now()
	for _, r := range runs {
		r.bounds = runBounds(r, seqs, now)
	}
	return runs, nil
}

func sameStages(a, b []schemas.StageInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// listParts finds raw/requests-wNN-PPPP.parquet and raw/chunks-wNN-PPPP.parquet, pairs them and
// compares them with the manifest's file list: a part on disk it does not list is warned about;
// one it lists that is not on disk, or half a part, is damage (its requests count as missing).
func (r *runDir) listParts(w *warner) error {
	reqKind, chunkKind := schemas.KindOf[schemas.RawRequest](), schemas.KindOf[schemas.RawChunk]()
	listed := map[string]bool{}
	for _, f := range r.manifest.Files {
		listed[filepath.Join(r.dir, f.Path)] = true
	}
	mpath := filepath.Join(r.dir, schemas.ManifestName)
	for _, p := range r.findParts() {
		for _, f := range []string{p.requests, p.chunks} {
			if f != "" && len(listed) > 0 && !listed[f] {
				if err := w.warn(f, "not listed in %s (part of an unfinished capture?)", mpath); err != nil {
					return err
				}
			}
		}
		var err error
		switch {
		case p.requests == "" && !listed[p.path(reqKind)]:
			err = r.damaged(w, p.chunks, "has no requests file of the same worker and part; its chunks are skipped")
		case p.chunks == "" && !listed[p.path(chunkKind)]:
			err = r.damaged(w, p.requests, "has no chunks file of the same worker and part; its requests lack their events and count as missing")
		}
		if err != nil {
			return err
		}
		if p.requests != "" {
			r.parts = append(r.parts, p)
		}
	}
	// In path order, so that --strict names the same first missing part every time.
	files := slices.SortedFunc(slices.Values(r.manifest.Files), func(a, b schemas.FileEntry) int { return strings.Compare(a.Path, b.Path) })
	for _, e := range files {
		f := filepath.Join(r.dir, e.Path)
		if e.Kind != reqKind.Name && e.Kind != chunkKind.Name {
			continue
		}
		if _, err := os.Stat(f); err != nil {
			if err := r.damaged(w, f, fmt.Sprintf("listed in %s with %d rows but missing", schemas.ManifestName, e.Rows)); err != nil {
				return err
			}
		}
	}
	if len(r.parts) == 0 && r.shards > 0 {
		if err := w.warn(filepath.Join(r.dir, "raw"), "no raw request parts"); err != nil {
			return err
		}
	}
	return nil
}

// findParts returns the parts on disk, each with its requests and chunks files where they are,
// by worker and part number.
func (r *runDir) findParts() []*part {
	reqKind := schemas.KindOf[schemas.RawRequest]()
	byKey := map[[2]int]*part{}
	var parts []*part
	for _, path := range append(reqKind.Glob(r.dir), schemas.KindOf[schemas.RawChunk]().Glob(r.dir)...) {
		rel, _ := filepath.Rel(r.dir, path) // path is below r.dir: Glob found it there
		k, wk, pn, _ := schemas.ParsePartPath(rel)
		p := byKey[[2]int{wk, pn}]
		if p == nil {
			p = &part{run: r, worker: wk, num: pn}
			byKey[[2]int{wk, pn}] = p
			parts = append(parts, p)
		}
		if k.Name == reqKind.Name {
			p.requests = path
		} else {
			p.chunks = path
		}
	}
	sort.Slice(parts, func(i, j int) bool {
		a, b := parts[i], parts[j]
		if a.worker != b.worker {
			return a.worker < b.worker
		}
		return a.num < b.num
	})
	return parts
}

// path is the path of the part's file of kind k.
func (p *part) path(k schemas.Kind) string {
	return filepath.Join(p.run.dir, filepath.FromSlash(k.PartPath(p.worker, p.num)))
}

// listedRows returns the row count the manifest records for path, or -1.
func (r *runDir) listedRows(path string) int64 {
	for _, f := range r.manifest.Files {
		if filepath.Join(r.dir, f.Path) == path {
			return f.Rows
		}
	}
	return -1
}
