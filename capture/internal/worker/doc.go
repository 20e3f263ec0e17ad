// Package worker is one capture worker process (the binary's hidden `worker` subcommand): it
// reads its Config from the coordinator (first line of stdin), pins itself to a CPU, loads its
// share of RUN/schedule/ (Owner), builds request bodies ahead of their send times, paces them
// open loop (or runs closed-loop users), sends them through capture/wire and writes every
// request and event to RUN/raw/requests-wNN-PPPP.parquet and chunks-wNN-PPPP.parquet from a
// writer goroutine off the send path, rolling parts by rows or time. It reports ready,
// progress, each finished part and its CPU use to the coordinator as JSON lines on stdout
// (protocol.go) and logs to stderr.
//
// The files follow the process: worker.go is its lifecycle (Run: pin, load, warm, ready,
// start, pace, drain, done); schedule.go loads its share and builds bodies ahead of time
// (body.go holds the body encoders); pace.go sends each request at its due time from a locked
// OS thread; closedloop.go schedules what follows a request's end (conversation turns,
// closed-loop users); progress.go tallies finished requests, writes them (parts.go) and
// reports progress and per-stage CPU use.
//
// Only capture imports it.
package worker
