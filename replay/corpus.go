package replay

import (
	_ "embed"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/wirebench/wirebench/tokenizer"
)

// corpus is public-domain English prose: the first 128 KiB of the body of Isaac Newton's
// Opticks (4th edition, 1730; Project Gutenberg text, as shipped in the Go distribution's
// src/testdata), with whitespace collapsed to single spaces and italics marks removed.
//
//go:embed corpus.txt
var corpus string

// textGen cuts prompts of an exact token count from the corpus with the configured tokenizer.
// With the whitespace tokenizer a prompt is a substring of the (doubled) corpus, so making one
// allocates nothing; other tokenizers cut the text after a corpus word with tokenizer.Cut, which
// re-counts candidate cuts until the prefix encodes to exactly the wanted number of tokens.
type textGen struct {
	tok    tokenizer.Tokenizer
	ws     bool
	text   string  // corpus + " " + corpus, so a window may wrap around
	starts []int32 // byte offset of each word of text
	ends   []int32
	nwords int // words in one copy of the corpus
	body   string
	// tokEnds are the byte offsets in text where each token of the configured tokenizer ends
	// (non-whitespace tokenizers that report them), for a first cut without tokenizing.
	tokEnds []int
}

func newTextGen(tok tokenizer.Tokenizer) *textGen {
	body := strings.TrimSpace(corpus)
	g := &textGen{tok: tok, text: body + " " + body, body: body}
	_, g.ws = tok.(tokenizer.Whitespace)
	in := false
	for i := 0; i < len(g.text); i++ {
		sp := g.text[i] == ' '
		if !sp && !in {
			g.starts = append(g.starts, int32(i))
		} else if sp && in {
			g.ends = append(g.ends, int32(i))
		}
		in = !sp
	}
	if in {
		g.ends = append(g.ends, int32(len(g.text)))
	}
	g.nwords = len(g.starts) / 2
	if te, ok := tok.(tokenizer.TokenEnder); ok && !g.ws {
		if s, ends := te.TokenEnds(g.text); s == g.text {
			g.tokEnds = ends
		}
	}
	return g
}

// quickCut tries the cut after the n-th corpus token from byte offset start: one Count.
func (g *textGen) quickCut(start, n int) (string, bool) {
	if g.tokEnds == nil {
		return "", false
	}
	i := sort.SearchInts(g.tokEnds, start+1) // first token ending after start
	if i+n-1 >= len(g.tokEnds) || (i > 0 && g.tokEnds[i-1] != start && g.text[start-1] != ' ') {
		return "", false
	}
	s := g.text[start:g.tokEnds[i+n-1]]
	return s, g.tok.Count(s) == n
}

// positions returns how many distinct start positions (corpus words) there are.
func (g *textGen) positions() int { return g.nwords }

// at returns a text of exactly n tokens starting at corpus word pos, and its token count: n,
// unless the tokenizer cannot cut exactly n tokens after any of the next few words, in which
// case the text is the closest cut and the count is its true count.
func (g *textGen) at(pos, n int) (string, int) {
	if n <= 0 {
		return "", 0
	}
	pos %= g.nwords
	if g.ws {
		if n <= g.nwords {
			return g.text[g.starts[pos]:g.ends[pos+n-1]], n
		}
		var b strings.Builder
		for left := n; left > 0; {
			k := min(left, g.nwords)
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(g.text[g.starts[pos]:g.ends[pos+k-1]])
			left -= k
		}
		return b.String(), n
	}
	if s, ok := g.quickCut(int(g.starts[pos]), n); ok {
		return s, n
	}
	for try := range 4 {
		p := (pos + try) % g.nwords
		src := g.text[g.starts[p]:]
		// A word is at least one token, so n words of text are always enough.
		for words := g.nwords; words < n; words += g.nwords {
			src += " " + g.body
		}
		if s, ok := tokenizer.Cut(g.tok, src, n); ok {
			return s, n
		}
	}
	s := g.text[g.starts[pos]:g.ends[pos+min(n, g.nwords)-1]]
	return s, g.tok.Count(s)
}

// random returns a text of n tokens, each word drawn at random from the corpus.
func (g *textGen) random(r *rand.Rand, n int) (string, int) {
	if n <= 0 {
		return "", 0
	}
	var b strings.Builder
	b.Grow(n * 8)
	for i := range n {
		w := r.IntN(g.nwords)
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(g.text[g.starts[w]:g.ends[w]])
	}
	if g.ws {
		return b.String(), n
	}
	if s, ok := tokenizer.Cut(g.tok, b.String(), n); ok {
		return s, n
	}
	return b.String(), g.tok.Count(b.String())
}
