// Package replay plans a run: it loads and validates a config (schemas.Config, YAML), its
// datasets, traces and tokenizers, and writes the whole schedule before anything is sent:
// RUN/schedule/requests.parquet (every request with its planned send time, stage, prompt and
// output length), RUN/schedule/prompts.parquet and RUN/manifest.json with status "planned".
//
// A workload kind (synthetic, shared prefix, conversations, dataset, trace, another run's
// requests; images and tools added to any) gives prompts and lengths; a stage's arrival process
// (constant, Poisson, gamma, a trace's own times, or closed-loop users) gives send times; everything random is drawn from the config's seed, so the
// same config plans the same schedule. Config errors name the file, line and field.
//
// Run plans a config file; Plan plans a config passed as a value (built in Go, or loaded and
// changed), with the same defaults and checks. Each workload kind is a type of its own
// (workloadKind, in a file of its own).
//
// It imports schemas, tokenizer, internal/hostclock and internal/redact; capture reads what it
// writes, and calibrate, search and the command call it.
package replay
