package replay

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/wirebench/wirebench/schemas"
)

// Seed streams of the traffic draws, apart from the workload's and the arrivals' own, so that
// adding workload.cancel or target.urls to a config leaves every other column of its schedule
// as it was.
const (
	cancelStream   = 7001
	endpointStream = 7002
)

// traffic sets the columns every schedule row gets whatever its source: workload.cancel's
// seeded choice of requests the client closes mid-stream, and the endpoint of target.urls each
// goes to. Rows come in seq order, so the choices are the same for the same config and seed.
type traffic struct {
	cancel *schemas.Cancel
	crng   *rand.Rand
	pick   *endpointPicker // nil with one endpoint
	// the latest conversation's endpoint: its later turns (consecutive rows) go where its first
	// went, as a user's session to one replica (and its prefix cache)
	conv         int64
	convEndpoint int32
}

func newTraffic(cfg *schemas.Config) *traffic {
	t := &traffic{cancel: cfg.Workload.Cancel, conv: -1}
	if t.cancel != nil {
		t.crng = rand.New(rand.NewPCG(uint64(cfg.Seed), cancelStream))
	}
	if eps := cfg.Target.URLs; len(eps) > 1 {
		t.pick = newEndpointPicker(eps, cfg.Target.Pick, cfg.Seed)
	}
	return t
}

// apply sets r's cancel and endpoint columns (a row copied from an earlier run gets this
// config's). A conversation's later turns go to its first turn's endpoint.
func (t *traffic) apply(r *schemas.ScheduleRequest) {
	if t == nil {
		return
	}
	r.CancelAfterTokens, r.CancelAfterNs, r.Endpoint = 0, 0, 0
	if c := t.cancel; c != nil && t.crng.Float64() < c.Share {
		r.CancelAfterTokens, r.CancelAfterNs = int32(c.AfterTokens), int64(c.After)
	}
	switch {
	case t.pick == nil:
	case r.Conversation >= 0 && r.Turn > 0 && r.Conversation == t.conv:
		r.Endpoint = t.convEndpoint
	default:
		r.Endpoint = t.pick.next()
		t.conv, t.convEndpoint = r.Conversation, r.Endpoint
	}
}

// endpointPicker chooses each request's endpoint by weight: round_robin is smooth weighted
// round robin (each pick goes to the endpoint furthest behind its share: after n picks every
// endpoint has its share of n within one request, in a fixed interleaving), random a seeded
// draw.
type endpointPicker struct {
	weights []float64
	total   float64
	current []float64 // round_robin: credit per endpoint
	rng     *rand.Rand
}

func newEndpointPicker(eps []schemas.Endpoint, pick string, seed int64) *endpointPicker {
	p := &endpointPicker{weights: make([]float64, len(eps)), current: make([]float64, len(eps))}
	for i, e := range eps {
		p.weights[i] = e.Weight
		p.total += e.Weight
	}
	if pick == schemas.PickRandom {
		p.rng = rand.New(rand.NewPCG(uint64(seed), endpointStream))
	}
	return p
}

func (p *endpointPicker) next() int32 {
	if p.rng != nil {
		x := p.rng.Float64() * p.total
		for i, w := range p.weights {
			if x < w {
				return int32(i)
			}
			x -= w
		}
		return int32(len(p.weights) - 1)
	}
	best := 0
	for i, w := range p.weights {
		p.current[i] += w
		if p.current[i] > p.current[best] {
			best = i
		}
	}
	p.current[best] -= p.total
	return int32(best)
}

// validateCancel checks workload.cancel: a share in (0, 1] and one point to close at.
func validateCancel(v *validator, c *schemas.Cancel, api string) {
	const f = "workload.cancel."
	if !(c.Share > 0 && c.Share <= 1) {
		v.errf(f+"share", "%g: want a share in (0, 1]", c.Share)
	}
	switch {
	case c.AfterTokens < 0:
		v.errf(f+"after_tokens", "must be > 0")
	case c.After < 0:
		v.errf(f+"after", "must be > 0")
	case (c.AfterTokens > 0) == (c.After > 0):
		v.errf("workload.cancel", "set exactly one of after_tokens and after")
	case c.AfterTokens > 0 && api == schemas.APIEmbeddings:
		v.errf(f+"after_tokens", "target.api embeddings streams no tokens; use after")
	}
}

// endpoints checks target.urls and target.pick.
func (v *validator) endpoints(t *schemas.Target) {
	if len(t.URLs) > 0 && t.URL != "" {
		v.errf("target.urls", "set target.url or target.urls, not both")
	}
	seen := map[string]int{}
	for i, e := range t.URLs {
		f := fmt.Sprintf("target.urls[%d]", i)
		if err := checkURL(e.URL); err != nil {
			v.errf(f+".url", "%v", err)
		}
		if j, dup := seen[e.URL]; dup {
			v.errf(f+".url", "the same as target.urls[%d]: give one entry a larger weight instead", j)
		}
		seen[e.URL] = i
		if !(e.Weight > 0) || math.IsInf(e.Weight, 0) {
			v.errf(f+".weight", "%g: want a weight > 0", e.Weight)
		}
	}
	switch t.Pick {
	case "", schemas.PickRoundRobin, schemas.PickRandom:
		if t.Pick != "" && len(t.URLs) == 0 {
			v.errf("target.pick", "only with target.urls")
		}
	default:
		v.errf("target.pick", "%q: want round_robin or random", t.Pick)
	}
}
