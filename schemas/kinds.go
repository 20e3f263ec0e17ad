package schemas

import (
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Kind describes one Parquet file kind of the run directory.
type Kind struct {
	Name string       // short name used by `wirebench schema KIND` and in file metadata
	Path string       // path inside the run directory (NN = worker, PPPP = part)
	Doc  string       // one-line description
	Row  reflect.Type // the Go row struct
}

// Kinds lists every Parquet file kind in run-directory order.
var Kinds = []Kind{
	{"schedule-requests", "schedule/requests.parquet", "one row per planned request (replay)", reflect.TypeFor[ScheduleRequest]()},
	{"prompts", "schedule/prompts.parquet", "prompt bodies, deduplicated, referenced by prompt_id (replay)", reflect.TypeFor[Prompt]()},
	{"raw-requests", "raw/requests-wNN-PPPP.parquet", "one row per request sent, per worker, rolled in parts (capture)", reflect.TypeFor[RawRequest]()},
	{"raw-chunks", "raw/chunks-wNN-PPPP.parquet", "one row per streamed event, per worker, rolled in parts (capture)", reflect.TypeFor[RawChunk]()},
	{"raw-segments", "raw/segments-PPPP.parquet", "one row per TCP segment of the run's connections, headers only, rolled in parts (capture --tap)", reflect.TypeFor[RawSegment]()},
	{"workers", "raw/workers.parquet", "one row per worker per stage: CPU, GC, memory, reads (capture)", reflect.TypeFor[Worker]()},
	{"server-metrics", "raw/server-metrics.parquet", "scraped server /metrics samples (capture, with target.metrics_url)", reflect.TypeFor[ServerMetric]()},
	{"metric-requests", "metrics/requests.parquet", "one row per request with every derived metric (aggregate)", reflect.TypeFor[MetricRequest]()},
	{"stages", "metrics/stages.parquet", "one row per stage: rates, percentiles, goodput, bias checks (aggregate)", reflect.TypeFor[Stage]()},
	{"breakdown", "metrics/breakdown.parquet", "one row per stage and model (or endpoint) of a mix: counts, rates, percentiles, goodput (aggregate)", reflect.TypeFor[Breakdown]()},
	{"timeseries", "metrics/timeseries.parquet", "per stage per 100 ms: sends, completions, in-flight, tokens (aggregate)", reflect.TypeFor[Timeseries]()},
}

// KindOf returns the Kind whose row struct is T. It panics for a type that is not a row struct,
// which is a programming error.
func KindOf[T any]() Kind {
	t := reflect.TypeFor[T]()
	for _, k := range Kinds {
		if k.Row == t {
			return k
		}
	}
	panic(fmt.Sprintf("schemas: %v is not a registered row type", t))
}

// LookupKind returns the kind with the given name.
func LookupKind(name string) (Kind, error) {
	for _, k := range Kinds {
		if k.Name == name {
			return k, nil
		}
	}
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = k.Name
	}
	sort.Strings(names)
	return Kind{}, fmt.Errorf("unknown schema kind %q (known: %v)", name, names)
}

// Rolled reports whether files of kind k are written in parts (NN = worker, PPPP = part in Path).
func (k Kind) Rolled() bool { return strings.Contains(k.Path, "PPPP") }

// In returns the path of the file of kind k inside run directory dir (a kind that is not
// rolled in parts).
func (k Kind) In(dir string) string { return filepath.Join(dir, filepath.FromSlash(k.Path)) }

// PartPath returns the path, relative to the run directory, of part number part of worker's
// files of rolled kind k: "raw/requests-w03-0012.parquet" (segments have no worker).
func (k Kind) PartPath(worker, part int) string {
	p := strings.Replace(k.Path, "NN", fmt.Sprintf("%02d", worker), 1)
	return strings.Replace(p, "PPPP", fmt.Sprintf("%04d", part), 1)
}

// Glob returns the part files of rolled kind k in run directory dir, in name order.
func (k Kind) Glob(dir string) []string {
	pat := strings.Replace(strings.Replace(k.Path, "NN", "*", 1), "PPPP", "*", 1)
	paths, _ := filepath.Glob(filepath.Join(dir, filepath.FromSlash(pat))) // the pattern is well formed
	var out []string
	for _, p := range paths {
		if rel, err := filepath.Rel(dir, p); err == nil && isPart(rel) {
			out = append(out, p)
		}
	}
	return out
}

// partRes match the paths of the rolled kinds: worker and part numbers as groups.
var partRes = func() map[string]*regexp.Regexp {
	res := map[string]*regexp.Regexp{}
	for _, k := range Kinds {
		if k.Rolled() {
			q := regexp.QuoteMeta(k.Path)
			q = strings.Replace(q, "NN", `(?P<worker>\d{2,})`, 1)
			q = strings.Replace(q, "PPPP", `(?P<part>\d{4,})`, 1)
			res[k.Name] = regexp.MustCompile("^" + q + "$")
		}
	}
	return res
}()

// ParsePartPath is PartPath's inverse: the kind, worker and part of a path relative to the run
// directory (slash or OS separators); ok is false for a path of no rolled kind.
func ParsePartPath(rel string) (k Kind, worker, part int, ok bool) {
	rel = filepath.ToSlash(rel)
	for _, k := range Kinds {
		re := partRes[k.Name]
		if re == nil {
			continue
		}
		m := re.FindStringSubmatch(rel)
		if m == nil {
			continue
		}
		if i := re.SubexpIndex("worker"); i > 0 {
			worker, _ = strconv.Atoi(m[i])
		}
		part, _ = strconv.Atoi(m[re.SubexpIndex("part")])
		return k, worker, part, true
	}
	return Kind{}, 0, 0, false
}

func isPart(rel string) bool {
	_, _, _, ok := ParsePartPath(rel)
	return ok
}

// FileOf returns the path of the file of row type T inside run directory dir.
func FileOf[T any](dir string) string { return KindOf[T]().In(dir) }

// EntryOf returns the manifest entry of the file of row type T (a kind not rolled in parts).
func EntryOf[T any](rows int64) FileEntry {
	k := KindOf[T]()
	return FileEntry{Path: k.Path, Kind: k.Name, Rows: rows}
}
