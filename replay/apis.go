package replay

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/wirebench/wirebench/schemas"
)

// validateAPIWorkload checks the workload options that depend on target.api: images and tools
// need a messages-based API, a batch the embeddings API, documents a ranking API, and
// embeddings and ranking requests are single prompts (no conversations).
func validateAPIWorkload(v *validator, c *schemas.Config) {
	w, api := &c.Workload, c.Target.API
	if im := w.Images; im != nil {
		validateImages(v, im, api)
	}
	if t := w.Tools; t != nil {
		if !schemas.MessageAPI(api) {
			v.errf("workload.tools", "needs target.api chat, responses or messages (got %s)", api)
		}
		if t.Count <= 0 || t.Count > MaxPerRequest {
			v.errf("workload.tools.count", "%d: must be in 1..%d", t.Count, MaxPerRequest)
		}
		switch t.Choice {
		case "auto", "required", "none":
		default:
			v.errf("workload.tools.choice", "%q: want auto, required or none", t.Choice)
		}
	}
	if w.Cancel != nil {
		validateCancel(v, w.Cancel, api)
	}
	if w.Batch < 0 || w.Batch > MaxPerRequest {
		v.errf("workload.batch", "%d: must be in 1..%d", w.Batch, MaxPerRequest)
	}
	if w.Batch > 1 && api != schemas.APIEmbeddings {
		v.errf("workload.batch", "only for target.api embeddings")
	}
	validateDocuments(v, w, api)
	if api == schemas.APIEmbeddings {
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
			buf[i].output, buf[i].docs = 0, 1
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
	return append(buf, turn{promptID: id, input: int32(tokens), group: -1, docs: int32(b.n)}), nil
}

// validateDocuments checks workload.documents against the API: the ranking APIs need documents
// (workload.documents, or a jsonl dataset whose rows carry their own) and single queries.
func validateDocuments(v *validator, w *schemas.Workload, api string) {
	d := w.Documents
	if !schemas.RankAPI(api) {
		if d != nil {
			v.errf("workload.documents", "only for target.api rerank, score or tei_rerank (got %s)", api)
		}
		return
	}
	switch {
	case w.Conversations != nil:
		v.errf("workload.conversations", "target.api %s takes single queries, not conversations", api)
	case w.Trace != nil:
		v.errf("workload.trace", "target.api %s needs documents, which a trace does not have", api)
	case d == nil && w.Run == nil && (w.Dataset == nil || w.Dataset.Format != schemas.DatasetJSONL):
		v.errf("workload.documents", "required for target.api %s (or a jsonl dataset whose rows have \"documents\")", api)
	}
	if d == nil {
		return
	}
	v.length(&d.Count, "workload.documents.count")
	v.distAtMost("workload.documents.count.", d.Count, MaxPerRequest)
	v.length(&d.Tokens, "workload.documents.tokens")
	if d.TopN < 0 || (d.TopN > 0 && api != schemas.APIRerank) {
		v.errf("workload.documents.top_n", "must be >= 0, and only for target.api rerank")
	}
}

// ranked makes the requests of a ranking API: each carries one prompt of the inner source as
// its query (Prompt.Text) and documents (Prompt.InputsJSON): the dataset row's own, else
// workload.documents' synthetic ones. Its input tokens are what a cross-encoder reads, the sum
// over its documents of query + document tokens; it asks for no output tokens. The inner
// source writes to priv, a private output that keeps its prompts in memory.
type ranked struct {
	inner       source
	count, toks *sampler // nil without workload.documents
	gen         *textGen
	rng         *rand.Rand
	o, priv     *output
	own         map[int64]rankDocs // a dataset prompt's own documents, by inner prompt id
	file        string             // the dataset's file, for errors; "" for other sources
	buf         []turn
	texts       []string
}

// rankDocs is a dataset row's documents: the JSON array, how many, and their tokens.
type rankDocs struct {
	json   string
	n      int
	tokens int
}

func newRanked(inner source, w *schemas.Workload, gen *textGen, seed int64, o, priv *output) (*ranked, error) {
	r := &ranked{inner: inner, gen: gen, rng: rand.New(rand.NewPCG(uint64(seed), 7)), o: o, priv: priv, own: map[int64]rankDocs{}}
	if w.Dataset != nil {
		r.file = w.Dataset.File
	}
	d := w.Documents
	if d == nil {
		return r, nil
	}
	var err error
	if r.count, err = newSampler(d.Count); err != nil {
		return nil, fmt.Errorf("workload.documents.count: %w", err)
	}
	if r.toks, err = newSampler(d.Tokens); err != nil {
		return nil, fmt.Errorf("workload.documents.tokens: %w", err)
	}
	return r, nil
}

func (r *ranked) name() string    { return r.inner.name() }
func (r *ranked) multiTurn() bool { return false }

func (r *ranked) unit(buf []turn, limit int64) ([]turn, error) {
	var err error
	if r.buf, err = r.inner.unit(r.buf[:0], 1); err != nil {
		return buf, err
	}
	for _, t := range r.buf {
		p := &r.priv.kept[t.promptID]
		if p.MessagesJSON != "" {
			return buf, fmt.Errorf("prompt %d: a ranking API takes a text query, not messages", t.promptID)
		}
		docs, err := r.documents(t.promptID, p)
		if err != nil {
			return buf, err
		}
		q := int(t.input)
		tokens := docs.n*q + docs.tokens
		id := r.o.nPrompt
		if err := r.o.addPromptRow(schemas.Prompt{PromptID: id, InputTokens: int32(tokens), Text: p.Text, InputsJSON: docs.json}); err != nil {
			return buf, err
		}
		buf = append(buf, turn{promptID: id, input: int32(tokens), group: t.group, docs: int32(docs.n)})
	}
	return buf, nil
}

// documents returns the documents of a query: the dataset prompt's own (counted once), else
// freshly drawn synthetic ones.
func (r *ranked) documents(id int64, p *schemas.Prompt) (rankDocs, error) {
	if p.InputsJSON != "" {
		if d, ok := r.own[id]; ok {
			return d, nil
		}
		var texts []string
		if err := json.Unmarshal([]byte(p.InputsJSON), &texts); err != nil {
			return rankDocs{}, fmt.Errorf("%s: documents: %w", r.file, err)
		}
		d := rankDocs{json: p.InputsJSON, n: len(texts)}
		for _, t := range texts {
			d.tokens += r.gen.tok.Count(t)
		}
		r.own[id] = d
		return d, nil
	}
	if r.count == nil {
		return rankDocs{}, fmt.Errorf("%s: a row has no \"documents\" and workload.documents is not set", r.file)
	}
	n := min(r.count.draw(r.rng), MaxPerRequest) // a count distribution's tail, without max
	r.texts = r.texts[:0]
	d := rankDocs{n: n}
	for range n {
		text, got := r.gen.at(r.rng.IntN(r.gen.positions()), r.toks.draw(r.rng))
		r.texts = append(r.texts, text)
		d.tokens += got
	}
	js, _ := json.Marshal(r.texts) // strings only: cannot fail
	d.json = string(js)
	return d, nil
}
