package replay

import (
	"encoding/json"
	"fmt"

	"github.com/wirebench/wirebench/schemas"
)

// validateAPIWorkload checks the workload options that depend on target.api: images and tools
// need a messages-based API, a batch the embeddings API, and embeddings requests are single
// prompts (no conversations).
func validateAPIWorkload(v *validator, c *schemas.Config) {
	w, api := &c.Workload, c.Target.API
	if im := w.Images; im != nil {
		validateImages(v, im, api)
	}
	if t := w.Tools; t != nil {
		if !schemas.MessageAPI(api) {
			v.errf("workload.tools", "needs target.api chat, responses or messages (got %s)", api)
		}
		if t.Count <= 0 {
			v.errf("workload.tools.count", "must be > 0")
		}
		switch t.Choice {
		case "auto", "required", "none":
		default:
			v.errf("workload.tools.choice", "%q: want auto, required or none", t.Choice)
		}
	}
	if w.Batch < 0 {
		v.errf("workload.batch", "must be > 0")
	}
	if w.Batch > 1 && api != "embeddings" {
		v.errf("workload.batch", "only for target.api embeddings")
	}
	if api == "embeddings" {
		if w.Conversations != nil {
			v.errf("workload.conversations", "target.api embeddings takes single prompts, not conversations")
		}
		if w.Batch > 1 && (w.Trace != nil || w.Run != nil) {
			v.errf("workload.batch", "not with workload.trace or workload.run (their requests are planned one prompt each)")
		}
	}
}

// batched makes embeddings requests: each carries n prompts of the inner source as its input
// array (Prompt.InputsJSON), its input tokens their sum, and asks for no output tokens. With
// n = 1 the inner source writes its prompts to the run as usual and the request sends the
// prompt's text; with n > 1 the inner source writes to priv, a private output that keeps its
// prompts in memory, and batched writes one prompt per request.
type batched struct {
	inner source
	n     int
	o     *output
	priv  *output
	buf   []turn
}

func (b *batched) name() string    { return b.inner.name() }
func (b *batched) multiTurn() bool { return false }

func (b *batched) unit(buf []turn, limit int64) ([]turn, error) {
	if b.n <= 1 {
		start := len(buf)
		buf, err := b.inner.unit(buf, limit)
		for i := start; i < len(buf); i++ {
			buf[i].output = 0
		}
		return buf, err
	}
	inputs := make([]string, 0, b.n)
	tokens := 0
	for len(inputs) < b.n {
		var err error
		if b.buf, err = b.inner.unit(b.buf[:0], 1); err != nil {
			return buf, err
		}
		for _, t := range b.buf {
			p := &b.priv.kept[t.promptID]
			if p.MessagesJSON != "" {
				return buf, fmt.Errorf("prompt %d: target.api embeddings takes text prompts, not messages", t.promptID)
			}
			inputs = append(inputs, p.Text)
			tokens += int(t.input)
		}
	}
	js, _ := json.Marshal(inputs[:b.n])
	id := b.o.nPrompt
	if err := b.o.addPromptRow(schemas.Prompt{PromptID: id, InputTokens: int32(tokens), InputsJSON: string(js)}); err != nil {
		return buf, err
	}
	return append(buf, turn{promptID: id, input: int32(tokens), group: -1}), nil
}
