package replay

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/wirebench/wirebench/schemas"
)

// message is one chat message in Prompt.MessagesJSON.
type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func messagesJSON(ms []message) string {
	if len(ms) == 0 {
		return ""
	}
	b, _ := json.Marshal(ms) // strings only: cannot fail
	return string(b)
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

func (s *synthetic) name() string    { return "synthetic" }
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

func (s *sharedPrefix) name() string    { return "shared_prefix" }
func (s *sharedPrefix) multiTurn() bool { return false }

func (s *sharedPrefix) unit(buf []turn, limit int64) ([]turn, error) {
	k := s.rng.IntN(len(s.tokens))
	return append(buf, turn{promptID: s.first + int64(k), input: s.tokens[k], output: int32(s.cfg.OutputTokens), group: int32(k / s.cfg.UsersPerGroup)}), nil
}

// conversations makes one multi-turn conversation per unit. Turn k's prompt is its user message.
// Chat API: MessagesJSON holds the system prompt (if any) and the earlier user messages in
// order, and capture inserts the server's actual answer after each earlier user message.
// Completions API: MessagesJSON is empty, the system prompt leads turn 0's text, and capture
// sends turn k as turn k−1's prompt + its answer + "\n\n" + text.
type conversations struct {
	cfg            *schemas.Conversations
	turns, in, out *sampler
	gen            *textGen
	rng            *rand.Rand
	o              *output
	chat           bool
	msgs           []message
}

func newConversations(cfg *schemas.Conversations, chat bool, gen *textGen, rng *rand.Rand, o *output) (*conversations, error) {
	c := &conversations{cfg: cfg, chat: chat, gen: gen, rng: rng, o: o}
	var err error
	for _, p := range []struct {
		d    schemas.LengthDist
		dst  **sampler
		name string
	}{{cfg.Turns, &c.turns, "turns"}, {cfg.Input, &c.in, "input"}, {cfg.Output, &c.out, "output"}} {
		if *p.dst, err = newSampler(p.d); err != nil {
			return nil, fmt.Errorf("workload.conversations.%s: %w", p.name, err)
		}
	}
	return c, nil
}

func (c *conversations) name() string    { return "conversations" }
func (c *conversations) multiTurn() bool { return true }

func (c *conversations) unit(buf []turn, limit int64) ([]turn, error) {
	c.msgs = c.msgs[:0]
	tokens := 0
	if n := c.cfg.SystemPromptTokens; n > 0 {
		sys, got := c.gen.at(c.rng.IntN(c.gen.positions()), n)
		c.msgs = append(c.msgs, message{"system", sys})
		tokens += got
	}
	nt := int(min(int64(c.turns.draw(c.rng)), limit))
	for k := range nt {
		text, got := c.gen.at(c.rng.IntN(c.gen.positions()), c.in.draw(c.rng))
		tokens += got
		var id int64
		var err error
		switch {
		case c.chat:
			id, err = c.o.addPrompt(text, messagesJSON(c.msgs), tokens)
		case k == 0 && len(c.msgs) > 0: // completions: the system prompt leads the first turn
			id, err = c.o.addPrompt(c.msgs[0].Content+"\n\n"+text, "", tokens)
		default: // completions: capture prepends the earlier prompts and answers
			id, err = c.o.addPrompt(text, "", tokens)
		}
		if err != nil {
			return buf, err
		}
		t := turn{promptID: id, input: int32(tokens), output: int32(c.out.draw(c.rng)), group: -1}
		if k > 0 {
			t.think = int64(c.cfg.ThinkTime)
		}
		buf = append(buf, t)
		c.msgs = append(c.msgs, message{"user", text})
	}
	return buf, nil
}
