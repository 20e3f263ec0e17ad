package aggregate

import (
	"cmp"
	"maps"
	"slices"
	"strconv"

	"github.com/wirebench/wirebench/schemas"
)

// maxBreakdowns is the most request columns a run's stages can be split by at once (model and
// endpoint).
const maxBreakdowns = 2

// breakdown splits every stage's figures by one request column (by: schemas.ByModel, ...): one
// stage accumulator per (stage, value) fed the value's requests as the stage's own accumulator
// is fed (the same code computes both rows), plus each value's ok completions of the whole run
// for its rates. A new dimension (e.g. the endpoint of target.urls) is a breakdown with its
// key function, made in newBreakdowns when the config gives it more than one value.
type breakdown struct {
	by    string
	key   func(*reqState) string
	accs  map[groupKey]*stageAcc
	done  map[string]completions
	spill string
}

type groupKey struct {
	stage int32
	key   string
}

// newBreakdowns returns the breakdowns the run's config asks for: by model with more than one
// entry in target.models, by endpoint with more than one in target.urls (keyed by its base URL,
// as the manifest keeps it).
func newBreakdowns(t *schemas.Target, spill string) []*breakdown {
	var out []*breakdown
	if len(t.Models) > 1 {
		out = append(out, newBreakdown(schemas.ByModel, func(s *reqState) string { return s.model }, spill))
	}
	if urls := t.Endpoints(); len(urls) > 1 {
		out = append(out, newBreakdown(schemas.ByEndpoint, func(s *reqState) string { return endpointKey(urls, s.endpoint) }, spill))
	}
	return out
}

// endpointKey is the breakdown key of endpoint i of urls: its URL, or its index when the
// schedule names one the config does not have.
func endpointKey(urls []string, i int32) string {
	if i >= 0 && int(i) < len(urls) {
		return urls[i]
	}
	return strconv.Itoa(int(i))
}

func newBreakdown(by string, key func(*reqState) string, spill string) *breakdown {
	return &breakdown{by: by, key: key, accs: map[groupKey]*stageAcc{}, done: map[string]completions{}, spill: spill}
}

// groupsOf sets s's accumulator in each breakdown of its stage (s.acc is set).
func (a *aggregator) groupsOf(s *reqState) {
	for i, b := range a.breakdowns {
		k := groupKey{s.stage, b.key(s)}
		acc := b.accs[k]
		if acc == nil {
			acc = newStageAcc(s.acc.info, s.acc.startNs, b.spill)
			b.accs[k] = acc
		}
		s.groups[i] = acc
	}
}

// addCompletion counts an ok request's completion c for its value in each breakdown.
func (a *aggregator) addCompletion(s *reqState, c completion) {
	for _, b := range a.breakdowns {
		k := b.key(s)
		b.done[k] = append(b.done[k], c)
	}
}

// breakdownRows makes the metrics/breakdown.parquet rows of the measured stages (rows), by
// breakdown, stage and value.
func (a *aggregator) breakdownRows(rows []schemas.Stage) ([]schemas.Breakdown, error) {
	var out []schemas.Breakdown
	for _, b := range a.breakdowns {
		for _, d := range b.done {
			d.sort()
		}
		keys := slices.SortedFunc(maps.Keys(b.accs), func(x, y groupKey) int {
			return cmp.Or(cmp.Compare(x.stage, y.stage), cmp.Compare(x.key, y.key))
		})
		for _, k := range keys {
			i := slices.IndexFunc(rows, func(st schemas.Stage) bool { return st.Stage == k.stage })
			if i < 0 {
				continue
			}
			done := b.done[k.key]
			st, err := b.accs[k].row(nil, &done, a.bias)
			if err != nil {
				return nil, err
			}
			out = append(out, breakdownRow(b.by, k.key, &st, rows[i].Requests))
		}
	}
	return out, nil
}

// breakdownRow is the breakdown row of st, the figures of a stage's requests of one value.
func breakdownRow(by, key string, st *schemas.Stage, stageRequests int64) schemas.Breakdown {
	r := schemas.Breakdown{
		Stage: st.Stage, Name: st.Name, By: by, Key: key, Requests: st.Requests, Completed: st.Completed,
		Errors: st.Errors, Cancelled: st.Cancelled, ErrorsByKind: st.ErrorsByKind, CompletionRate: st.CompletionRate,
		OutputTPS: st.OutputTPS, GoodputShare: st.GoodputShare, GoodputRate: st.GoodputRate,
		TTFT: st.TTFT, TPOT: st.TPOT, ITL: st.ITL, E2E: st.E2E, NTPOT: st.NTPOT,
		InputTokens: st.InputTokens, OutputTokens: st.OutputTokens,
	}
	if stageRequests > 0 {
		r.Share = float64(st.Requests) / float64(stageRequests)
	}
	return r
}

// closeBreakdowns releases the breakdowns' spill files.
func (a *aggregator) closeBreakdowns() {
	for _, b := range a.breakdowns {
		for _, acc := range b.accs {
			acc.close()
		}
	}
}
