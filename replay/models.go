package replay

import (
	"github.com/wirebench/wirebench/schemas"
)

// modelPicker draws each request's model from target.models with the entries' weights. The
// draw is a hash of the seed and the request's key, its conversation for a conversation's turns
// (they go to one model, whose server holds their context), else its seq: the same seed gives
// the same models whatever order rows are planned in, and the mix changes no other draw.
type modelPicker struct {
	names []string  // model fields sent
	cum   []float64 // cumulative weights, the last 1
	seed  uint64
}

// newModelPicker returns the picker of t's mix; nil without a model (a dry run without
// target.model: the schedule's model stays empty).
func newModelPicker(t *schemas.Target, seed int64) *modelPicker {
	mix := t.Mix()
	if len(mix) == 0 {
		return nil
	}
	p := &modelPicker{seed: uint64(seed)}
	var sum float64
	for _, m := range mix {
		sum += weight(m)
	}
	var c float64
	for _, m := range mix {
		c += weight(m) / sum
		p.names = append(p.names, m.Sent())
		p.cum = append(p.cum, c)
	}
	p.cum[len(p.cum)-1] = 1
	return p
}

// weight is m's weight, 0 meaning 1.
func weight(m schemas.TargetModel) float64 {
	if m.Weight == 0 {
		return 1
	}
	return m.Weight
}

// pick returns r's model.
func (p *modelPicker) pick(r *schemas.ScheduleRequest) string {
	if len(p.names) == 1 {
		return p.names[0]
	}
	key := uint64(r.Seq)<<1 | 1
	if r.Conversation >= 0 {
		key = uint64(r.Conversation) << 1
	}
	u := float64(splitmix64(p.seed^splitmix64(key))>>11) / (1 << 53)
	for i, c := range p.cum {
		if u < c {
			return p.names[i]
		}
	}
	return p.names[len(p.names)-1]
}

// splitmix64 is the finaliser of the splitmix generator (Steele, Lea and Flood, 2014): a
// well-mixed 64-bit hash of x.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
