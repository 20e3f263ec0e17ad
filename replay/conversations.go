package replay

import (
	"fmt"
	"math/rand/v2"

	"github.com/wirebench/wirebench/schemas"
)

// conversationsKind is workload.conversations: multi-turn conversations, each turn sent once
// the answer to the one before has come (see conversations).
type conversationsKind struct{ *schemas.Conversations }

func conversationsOf(w *schemas.Workload) workloadKind {
	if w.Conversations == nil {
		return nil
	}
	return conversationsKind{w.Conversations}
}

func (k conversationsKind) setDefaults()    {}
func (k conversationsKind) ownTiming() bool { return false }

func (k conversationsKind) files() []fileField {
	f := "workload.conversations."
	return []fileField{distFile(f+"turns", &k.Turns), distFile(f+"input", &k.Input), distFile(f+"output", &k.Output)}
}

func (k conversationsKind) validate(v *validator, api string) {
	f := "workload.conversations."
	v.length(&k.Turns, f+"turns")
	v.length(&k.Input, f+"input")
	v.length(&k.Output, f+"output")
	if k.ThinkTime < 0 {
		v.errf(f+"think_time", "must be >= 0")
	}
	if k.SystemPromptTokens < 0 {
		v.errf(f+"system_prompt_tokens", "must be >= 0")
	}
	v.atMost(f+"system_prompt_tokens", float64(k.SystemPromptTokens), MaxLength)
}

func (k conversationsKind) plan(p *planner) ([]schemas.StageInfo, error) {
	chat := schemas.MessageAPI(p.cfg.Target.API)
	return p.planLoad(func(gen *textGen, rng *rand.Rand, so *output) (source, error) {
		return newConversations(k.Conversations, chat, gen, rng, so)
	})
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

func (c *conversations) name() string    { return schemas.SourceConversations }
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
