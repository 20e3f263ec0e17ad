package aggregate

import (
	"encoding/json"
	"fmt"

	"github.com/wirebench/wirebench/schemas"
)

// endpointAcc accumulates one endpoint's share of a stage, for a run with several endpoints
// (target.urls): counts as the stage's, and its latencies over its ok requests.
type endpointAcc struct {
	url                                   string
	requests, completed, errors, canceled int64
	good, outTok                          int64
	ttft, tpot, e2e                       bounded
}

// newEndpointAccs returns one accumulator per endpoint of urls; nil with one endpoint (the
// stage's own figures are that endpoint's).
func newEndpointAccs(urls []schemas.Endpoint, spill string) []*endpointAcc {
	if len(urls) < 2 {
		return nil
	}
	out := make([]*endpointAcc, len(urls))
	for i, u := range urls {
		out[i] = &endpointAcc{url: u.URL, ttft: newBounded(spill, false), tpot: newBounded(spill, false), e2e: newBounded(spill, false)}
	}
	return out
}

// add counts m as addRequest counts it for the stage.
func (e *endpointAcc) add(m *schemas.MetricRequest) {
	e.requests++
	switch {
	case m.ErrorKind == schemas.ErrCancelledByClient:
		e.canceled++
	case !m.OK:
		e.errors++
	default:
		e.completed++
		if m.SLOMet {
			e.good++
		}
		e.outTok += int64(*m.OutputTokens)
		for _, p := range []struct {
			v, lo, hi *int64
			d         bounded
		}{{m.TTFTNs, m.TTFTLoNs, m.TTFTHiNs, e.ttft}, {m.TPOTNs, m.TPOTLoNs, m.TPOTHiNs, e.tpot}, {m.E2ENs, m.E2ELoNs, m.E2EHiNs, e.e2e}} {
			if p.v != nil {
				p.d.addB(*p.v, *p.lo, *p.hi, 1)
			}
		}
	}
}

func (e *endpointAcc) close() {
	for _, d := range []bounded{e.ttft, e.tpot, e.e2e} {
		d.close()
	}
}

// endpointsJSON is the stage's endpoints column: its figures per endpoint; "" with one.
func endpointsJSON(stage int32, eps []*endpointAcc) (string, error) {
	if eps == nil {
		return "", nil
	}
	out := make([]schemas.EndpointFigures, len(eps))
	for i, e := range eps {
		f := schemas.EndpointFigures{Endpoint: int32(i), URL: e.url, Requests: e.requests, Completed: e.completed,
			Errors: e.errors, Cancelled: e.canceled, OutputTokens: e.outTok}
		if judged := e.requests - e.canceled; judged > 0 {
			f.GoodputShare = ptr(float64(e.good) / float64(judged))
		}
		var err error
		for _, p := range []struct {
			d   bounded
			out *schemas.Dist
		}{{e.ttft, &f.TTFT}, {e.tpot, &f.TPOT}, {e.e2e, &f.E2E}} {
			if *p.out, err = p.d.finish(); err != nil {
				return "", fmt.Errorf("stage %d endpoint %d: %w", stage, i, err)
			}
		}
		out[i] = f
	}
	b, err := json.Marshal(out)
	return string(b), err
}
