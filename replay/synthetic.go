package replay

import (
	"fmt"
	"math/rand/v2"

	"github.com/wirebench/wirebench/schemas"
)

// syntheticKind is workload.synthetic: input and output lengths drawn from distributions, each
// prompt cut from the corpus.
type syntheticKind struct{ *schemas.Synthetic }

func syntheticOf(w *schemas.Workload) workloadKind {
	if w.Synthetic == nil {
		return nil
	}
	return syntheticKind{w.Synthetic}
}

func (k syntheticKind) setDefaults()    {}
func (k syntheticKind) ownTiming() bool { return false }

func (k syntheticKind) files() []fileField {
	return []fileField{distFile("workload.synthetic.input", &k.Input), distFile("workload.synthetic.output", &k.Output)}
}

func (k syntheticKind) validate(v *validator, api string) {
	v.length(&k.Input, "workload.synthetic.input")
	if k.Output.Kind != "" || schemas.OutputAPI(api) {
		v.length(&k.Output, "workload.synthetic.output") // embeddings and the ranking APIs need none
	}
}

func (k syntheticKind) plan(p *planner) ([]schemas.StageInfo, error) {
	return p.planLoad(func(gen *textGen, rng *rand.Rand, so *output) (source, error) {
		return newSynthetic(k.Synthetic, gen, rng, so)
	})
}

// synthetic draws lengths from distributions and cuts one prompt per request from the corpus.
type synthetic struct {
	cfg     *schemas.Synthetic
	in, out *sampler
	gen     *textGen
	rng     *rand.Rand
	o       *output
	// seen maps a corpus window (position<<32 | tokens) to its prompt id, so a prompt that
	// recurs is stored once; it stops growing at maxSeen entries.
	seen map[uint64]promptRef
}

type promptRef struct {
	id     int64
	tokens int32
}

// maxSeen bounds the synthetic prompt dedup map (about 40 MB).
const maxSeen = 1 << 20

func newSynthetic(cfg *schemas.Synthetic, gen *textGen, rng *rand.Rand, o *output) (*synthetic, error) {
	in, err := newSampler(cfg.Input)
	if err != nil {
		return nil, fmt.Errorf("workload.synthetic.input: %w", err)
	}
	out, err := newSampler(cfg.Output)
	if err != nil {
		return nil, fmt.Errorf("workload.synthetic.output: %w", err)
	}
	return &synthetic{cfg: cfg, in: in, out: out, gen: gen, rng: rng, o: o, seen: map[uint64]promptRef{}}, nil
}

func (s *synthetic) name() string    { return schemas.SourceSynthetic }
func (s *synthetic) multiTurn() bool { return false }

func (s *synthetic) unit(buf []turn, limit int64) ([]turn, error) {
	n := s.in.draw(s.rng)
	m := s.out.draw(s.rng)
	if s.cfg.RandomTokens {
		text, got := s.gen.random(s.rng, n)
		id, err := s.o.addPrompt(text, "", got)
		return append(buf, turn{promptID: id, input: int32(got), output: int32(m), group: -1}), err
	}
	pos := s.rng.IntN(s.gen.positions())
	key := uint64(pos)<<32 | uint64(n)
	if p, ok := s.seen[key]; ok {
		return append(buf, turn{promptID: p.id, input: p.tokens, output: int32(m), group: -1}), nil
	}
	text, got := s.gen.at(pos, n)
	id, err := s.o.addPrompt(text, "", got)
	if len(s.seen) < maxSeen {
		s.seen[key] = promptRef{id, int32(got)}
	}
	return append(buf, turn{promptID: id, input: int32(got), output: int32(m), group: -1}), err
}
