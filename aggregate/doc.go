// Package aggregate turns a captured run into its figures: it reads RUN/raw/ (requests, chunks,
// workers, server metrics, the packet tap's segments) and RUN/manifest.json, checks them against
// the plan (every planned request at most once, every listed part present and whole, page
// checksums and value ranges), and writes RUN/metrics/requests.parquet, stages.parquet and
// timeseries.parquet atomically, then an aggregate step in the manifest.
//
// Per request it computes TTFT, TTFC, TPOT, ITL, E2E and NTPOT with the interval the client's
// own error allows (bounds), and the queue, prefill and decode split (decompose.go); per stage
// the percentiles of each with their bounds, the load, latency and trust verdicts (verdict.go),
// the footprint on a shared machine (footprint.go) and saturation (saturation.go). Several run
// directories of one distributed run (one per host) are merged into one (hosts.go).
//
// Memory is bounded by a batch of rows, one part's per-request state and the percentile
// accumulators, which spill to disk past a budget; see Run.
//
// It imports schemas and tokenizer only; calibrate, search and the command call it, and report
// reads what it writes.
package aggregate
