// Package capture executes a run's schedule against the target and writes raw, per-token wire
// timestamps to Snappy-compressed Parquet shards under RUN/raw/.
//
// Process model: Run (the coordinator) starts k worker processes, the same binary's hidden
// `worker` subcommand, k defaulting to the CPUs this process may use (affinity mask and cgroup
// v2 cpu.max, not the host's core count), or to half of them beside the server (colocated.go). Each worker pins itself to one CPU, takes its share of
// the schedule and paces it open loop: every request is sent at its planned time whatever
// happened to earlier ones; a late send is recorded as send lag (sent_ns - planned_ns), never
// hidden.
//
// Split: a request's key is its conversation id when it has one, else its closed-loop user (per
// stage), else its seq. `--shard i/n` keeps keys with key mod n == i; inside a host, worker w of k
// takes keys with (key / n) mod k == w, so whole conversations and users stay on one worker.
//
// Worker <-> coordinator protocol (private to this package, one JSON object per line): the
// coordinator writes the worker.Config as the first line of the worker's stdin, then
// {"start_ns":N} once every worker reported ready, and {"stop":true} on the first interrupt.
// A closed stdin means the coordinator is gone: the worker cancels what is in flight, closes its
// open parts and exits. The worker writes messages (ready, progress, file, worker, done) to
// stdout and logs to stderr through slog.
//
// Files: each worker writes raw/requests-wNN-PPPP.parquet and raw/chunks-wNN-PPPP.parquet
// through schemas.Create (atomic: temporary name, fsync, rename), rolled after PartRows chunk
// rows or PartInterval, from a writer goroutine off the send path. The coordinator alone updates
// manifest.json (every finished part with its rows as soon as it is reported, so a killed
// coordinator still leaves an accurate list) and writes raw/workers.parquet and
// raw/server-metrics.parquet at the end.
package capture
