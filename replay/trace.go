package replay

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// traceKind is workload.trace: a production trace's requests at its own times (or rescaled),
// as one open-loop stage.
type traceKind struct{ *schemas.Trace }

func traceOf(w *schemas.Workload) workloadKind {
	if w.Trace == nil {
		return nil
	}
	return traceKind{w.Trace}
}

func (k traceKind) ownTiming() bool { return true }

func (k traceKind) setDefaults() {
	if k.BlockTokens == 0 {
		k.BlockTokens = 512
	}
}

func (k traceKind) files() []fileField {
	return []fileField{{"workload.trace.file", &k.File, true}}
}

func (k traceKind) validate(v *validator, _ string) {
	f := "workload.trace."
	switch k.Format {
	case schemas.TraceAzure, schemas.TraceBurstGPT, schemas.TraceMooncake:
	default:
		v.errf(f+"format", "%q: want azure, burstgpt or mooncake", k.Format)
	}
	if k.File == "" {
		v.errf(f+"file", "required")
	}
	if k.TimeScale < 0 || math.IsNaN(k.TimeScale) {
		v.errf(f+"time_scale", "must be > 0")
	}
	if k.Rate < 0 {
		v.errf(f+"rate", "must be > 0")
	}
	if k.TimeScale > 0 && k.Rate > 0 {
		v.errf(f+"rate", "set time_scale or rate, not both")
	}
	if k.Start < 0 || k.Duration < 0 || k.MaxRequests < 0 || k.BlockTokens <= 0 {
		v.errf(f[:len(f)-1], "start, duration, max_requests must be >= 0 and block_tokens > 0")
	}
}

func (k traceKind) plan(p *planner) ([]schemas.StageInfo, error) {
	rows, err := loadTrace(k.Trace)
	if err != nil {
		return nil, err
	}
	info, err := planTrace(k.Trace, rows, newTextGen(p.tok), p.cfg.Seed, p.o)
	return []schemas.StageInfo{info}, err
}

// traceRow is one request of a trace.
type traceRow struct {
	ns     int64 // trace time, ns (any origin)
	input  int32
	output int32
	hashes []int32 // mooncake prefix block ids
}

const azureLayout = "2006-01-02 15:04:05.999999999"

// readAzure reads TIMESTAMP,ContextTokens,GeneratedTokens.
func readAzure(path string) ([]traceRow, error) {
	return readTraceCSV(path, []string{"TIMESTAMP", "ContextTokens", "GeneratedTokens"}, func(line int, f []string) (traceRow, bool, error) {
		t, err := time.Parse(azureLayout, strings.TrimSpace(f[0]))
		if err != nil {
			return traceRow{}, false, fmt.Errorf("%s:%d: TIMESTAMP: %q is not a time like 2023-11-16 18:17:03.9799600", path, line, f[0])
		}
		in, err := traceInt(path, line, "ContextTokens", f[1])
		if err != nil {
			return traceRow{}, false, err
		}
		out, err := traceInt(path, line, "GeneratedTokens", f[2])
		if err != nil {
			return traceRow{}, false, err
		}
		return traceRow{ns: t.UnixNano(), input: in, output: out}, true, nil
	})
}

// readBurstGPT reads Timestamp,Model,Request tokens,Response tokens,... (timestamps in seconds
// from the trace start); rows with 0 response tokens (failed in the trace) are skipped.
func readBurstGPT(path string) ([]traceRow, error) {
	return readTraceCSV(path, []string{"Timestamp", "Request tokens", "Response tokens"}, func(line int, f []string) (traceRow, bool, error) {
		s, err := strconv.ParseFloat(strings.TrimSpace(f[0]), 64)
		if err != nil || s < 0 || math.IsNaN(s) || math.IsInf(s, 0) {
			return traceRow{}, false, fmt.Errorf("%s:%d: Timestamp: %q is not a number of seconds >= 0", path, line, f[0])
		}
		in, err := traceInt(path, line, "Request tokens", f[1])
		if err != nil {
			return traceRow{}, false, err
		}
		out, err := traceInt(path, line, "Response tokens", f[2])
		if err != nil {
			return traceRow{}, false, err
		}
		return traceRow{ns: int64(s * 1e9), input: in, output: out}, out > 0, nil
	})
}

func traceInt(path string, line int, field, s string) (int32, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%s:%d: %s: %q is not an integer >= 0", path, line, field, s)
	}
	return int32(v), nil
}

// readTraceCSV finds the wanted columns by header name and parses each row with parse, which
// gets the wanted fields in the order of want.
func readTraceCSV(path string, want []string, parse func(line int, f []string) (traceRow, bool, error)) ([]traceRow, error) {
	var rows []traceRow
	err := readCSVColumns(path, "trace", want, len(want), func(line int, f []string) error {
		t, ok, err := parse(line, f)
		if ok {
			rows = append(rows, t)
		}
		return err
	})
	return rows, err
}

type mooncakeRow struct {
	Timestamp    *float64 `json:"timestamp"`
	InputLength  *int32   `json:"input_length"`
	OutputLength *int32   `json:"output_length"`
	HashIDs      []int32  `json:"hash_ids"`
}

// readMooncake reads {timestamp (ms), input_length, output_length, hash_ids} a line.
func readMooncake(path string) ([]traceRow, error) {
	var rows []traceRow
	err := readJSONLines(path, "trace", 64<<20, func(line int, m *mooncakeRow) error {
		switch {
		case m.Timestamp == nil:
			return fmt.Errorf("%s:%d: timestamp: missing", path, line)
		case m.InputLength == nil:
			return fmt.Errorf("%s:%d: input_length: missing", path, line)
		case m.OutputLength == nil:
			return fmt.Errorf("%s:%d: output_length: missing", path, line)
		case *m.Timestamp < 0 || *m.InputLength < 0 || *m.OutputLength < 0:
			return fmt.Errorf("%s:%d: timestamp, input_length, output_length: must be >= 0", path, line)
		}
		rows = append(rows, traceRow{ns: int64(*m.Timestamp * 1e6), input: *m.InputLength, output: *m.OutputLength, hashes: m.HashIDs})
		return nil
	})
	return rows, err
}

// loadTrace reads the trace, sorts it by time, cuts the window and rescales times to offsets
// from the first kept request.
func loadTrace(cfg *schemas.Trace) ([]traceRow, error) {
	var rows []traceRow
	var err error
	switch cfg.Format {
	case schemas.TraceAzure:
		rows, err = readAzure(cfg.File)
	case schemas.TraceBurstGPT:
		rows, err = readBurstGPT(cfg.File)
	case schemas.TraceMooncake:
		rows, err = readMooncake(cfg.File)
	}
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: trace has no requests", cfg.File)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].ns < rows[j].ns })
	t0 := rows[0].ns + int64(cfg.Start)
	kept := rows[:0]
	for _, r := range rows {
		if r.ns < t0 || (cfg.Duration > 0 && r.ns-t0 >= int64(cfg.Duration)) {
			continue
		}
		if cfg.MaxRequests > 0 && len(kept) == cfg.MaxRequests {
			break
		}
		kept = append(kept, r)
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("%s: no requests in the window start=%v duration=%v", cfg.File, cfg.Start.D(), cfg.Duration.D())
	}
	first := kept[0].ns
	scale := 1.0
	if cfg.TimeScale > 0 {
		scale = cfg.TimeScale
	}
	if span := kept[len(kept)-1].ns - first; cfg.Rate > 0 && span > 0 {
		// the mean rate is (n−1)/span; scale the span so that it becomes cfg.Rate.
		scale = float64(len(kept)-1) / (span2s(span) * cfg.Rate)
	}
	for i := range kept {
		kept[i].ns = int64(math.Round(float64(kept[i].ns-first) * scale))
	}
	return kept, nil
}

func span2s(ns int64) float64 { return float64(ns) / 1e9 }

// planTrace writes the trace as one open-loop stage at its own times.
func planTrace(cfg *schemas.Trace, rows []traceRow, gen *textGen, seed int64, o *output) (schemas.StageInfo, error) {
	n := len(rows)
	last := rows[n-1].ns
	dur := int64(time.Second)
	if n > 1 && last > 0 {
		dur = last * int64(n) / int64(n-1) // so that requests/duration is the mean rate
	}
	info := schemas.StageInfo{Name: "trace", Mode: schemas.ModeOpen, Arrival: schemas.ArrivalTrace, DurationNs: dur, Requests: int64(n), Rate: float64(n) / span2s(dur)}
	o.stats = []*stageStats{newStageStats()}
	rng := rand.New(rand.NewPCG(uint64(seed), 2))
	var parts []string
	for i, r := range rows {
		input := max(r.input, 1)
		var text string
		var got int
		group := int32(-1)
		if r.hashes != nil && cfg.Format == schemas.TraceMooncake {
			parts = parts[:0]
			left := int(input)
			for k, h := range r.hashes {
				if left == 0 {
					break
				}
				take := min(left, cfg.BlockTokens)
				if k == len(r.hashes)-1 {
					take = left // the last block takes whatever the hash ids do not cover
				}
				s, c := gen.at(blockPos(seed, h, gen.positions()), take)
				parts = append(parts, s)
				got += c
				left -= take
			}
			if left > 0 { // no hash ids at all
				s, c := gen.at(rng.IntN(gen.positions()), left)
				parts = append(parts, s)
				got += c
			}
			text = strings.Join(parts, " ")
			if !gen.ws {
				got = gen.tok.Count(text)
			}
			if len(r.hashes) > 0 {
				group = r.hashes[0]
			}
		} else {
			text, got = gen.at(rng.IntN(gen.positions()), int(input))
		}
		id, err := o.addPrompt(text, "", got)
		if err != nil {
			return info, err
		}
		req := schemas.ScheduleRequest{
			Seq: int64(i), PlannedOffsetNs: r.ns, User: -1, Conversation: -1, DependsOn: -1,
			PromptID: id, InputTokens: int32(got), MaxTokens: max(r.output, 1), PrefixGroup: group, Source: schemas.SourceTrace,
		}
		if err := o.addRequest(req); err != nil {
			return info, err
		}
	}
	return info, nil
}

// blockPos maps a prefix block id to a corpus position, the same for every request that has it.
func blockPos(seed int64, h int32, n int) int {
	x := uint64(seed)*0x9e3779b97f4a7c15 ^ uint64(uint32(h))*0xbf58476d1ce4e5b9
	x ^= x >> 31
	x *= 0x94d049bb133111eb
	x ^= x >> 29
	return int(x % uint64(n))
}
