package schemas

import (
	"fmt"
	"reflect"
	"sort"
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
