package replay

import (
	"math/rand/v2"

	"github.com/wirebench/wirebench/schemas"
)

// sharedPrefixKind is workload.shared_prefix: groups of users whose prompts share a system
// prompt, the prefix a server's cache can reuse.
type sharedPrefixKind struct{ *schemas.SharedPrefix }

func sharedPrefixOf(w *schemas.Workload) workloadKind {
	if w.SharedPrefix == nil {
		return nil
	}
	return sharedPrefixKind{w.SharedPrefix}
}

func (k sharedPrefixKind) setDefaults()       {}
func (k sharedPrefixKind) ownTiming() bool    { return false }
func (k sharedPrefixKind) files() []fileField { return nil }

func (k sharedPrefixKind) validate(v *validator, api string) {
	f := "workload.shared_prefix."
	for _, p := range []struct {
		name string
		val  int
	}{{"groups", k.Groups}, {"prefix_tokens", k.PrefixTokens}, {"users_per_group", k.UsersPerGroup}, {"question_tokens", k.QuestionTokens}, {"output_tokens", k.OutputTokens}} {
		switch {
		case p.name == "output_tokens" && !schemas.OutputAPI(api): // embeddings, ranking: none needed
			if p.val < 0 {
				v.errf(f+p.name, "must be >= 0")
			}
		case p.val <= 0:
			v.errf(f+p.name, "must be > 0")
		}
		v.atMost(f+p.name, float64(p.val), MaxLength)
	}
}

func (k sharedPrefixKind) plan(p *planner) ([]schemas.StageInfo, error) {
	chat := schemas.MessageAPI(p.cfg.Target.API)
	return p.planLoad(func(gen *textGen, rng *rand.Rand, so *output) (source, error) {
		return newSharedPrefix(k.SharedPrefix, chat, gen, rng, so)
	})
}

// sharedPrefix makes groups × users_per_group prompts up front; each request picks one.
type sharedPrefix struct {
	cfg    *schemas.SharedPrefix
	rng    *rand.Rand
	first  int64 // prompt id of the first prompt
	tokens []int32
}

func newSharedPrefix(cfg *schemas.SharedPrefix, chat bool, gen *textGen, rng *rand.Rand, o *output) (*sharedPrefix, error) {
	s := &sharedPrefix{cfg: cfg, rng: rng, first: o.nPrompt}
	for g := 0; g < cfg.Groups; g++ {
		sys, sn := gen.at(rng.IntN(gen.positions()), cfg.PrefixTokens)
		for q := 0; q < cfg.UsersPerGroup; q++ {
			question, qn := gen.at(rng.IntN(gen.positions()), cfg.QuestionTokens)
			var text, msgs string
			n := sn + qn
			if chat {
				text, msgs = question, messagesJSON([]message{{"system", sys}})
			} else {
				text = sys + "\n" + question
				if !gen.ws {
					n = gen.tok.Count(text)
				}
			}
			if _, err := o.addPrompt(text, msgs, n); err != nil {
				return nil, err
			}
			s.tokens = append(s.tokens, int32(n))
		}
	}
	return s, nil
}

func (s *sharedPrefix) name() string    { return schemas.SourceSharedPrefix }
func (s *sharedPrefix) multiTurn() bool { return false }

func (s *sharedPrefix) unit(buf []turn, limit int64) ([]turn, error) {
	k := s.rng.IntN(len(s.tokens))
	return append(buf, turn{promptID: s.first + int64(k), input: s.tokens[k], output: int32(s.cfg.OutputTokens), group: int32(k / s.cfg.UsersPerGroup)}), nil
}
