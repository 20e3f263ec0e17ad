package replay

import (
	"math/rand/v2"

	"github.com/wirebench/wirebench/schemas"
)

// Seed streams of the traffic draws, apart from the workload's and the arrivals' own, so that
// adding workload.cancel to a config leaves every other column of its schedule as it was.
const cancelStream = 7001

// traffic sets the columns every schedule row gets whatever its source: workload.cancel's
// seeded choice of requests the client closes mid-stream. Rows come in seq order, so the
// choice is the same for the same config and seed.
type traffic struct {
	cancel *schemas.Cancel
	crng   *rand.Rand
}

func newTraffic(cfg *schemas.Config) *traffic {
	t := &traffic{cancel: cfg.Workload.Cancel}
	if t.cancel != nil {
		t.crng = rand.New(rand.NewPCG(uint64(cfg.Seed), cancelStream))
	}
	return t
}

// apply sets r's cancel columns (a row copied from an earlier run gets this config's).
func (t *traffic) apply(r *schemas.ScheduleRequest) {
	if t == nil {
		return
	}
	r.CancelAfterTokens, r.CancelAfterNs = 0, 0
	if c := t.cancel; c != nil && t.crng.Float64() < c.Share {
		r.CancelAfterTokens, r.CancelAfterNs = int32(c.AfterTokens), int64(c.After)
	}
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
	case c.AfterTokens > 0 && api == "embeddings":
		v.errf(f+"after_tokens", "target.api embeddings streams no tokens; use after")
	}
}
