package replay

import (
	_ "embed"
	"math/rand/v2"
	"strings"

	"github.com/wirebench/wirebench/replay/tokenizer"
)

// corpus is public-domain English prose: the first 128 KiB of the body of Isaac Newton's
// Opticks (4th edition, 1730; Project Gutenberg text, as shipped in the Go distribution's
// src/testdata), with whitespace collapsed to single spaces and italics marks removed.
//
//go:embed corpus.txt
var corpus string

// textGen cuts prompts of an exact token count from the corpus with the configured tokenizer.
// With the whitespace tokenizer a prompt is a substring of the (doubled) corpus, so making one
// allocates nothing; other tokenizers decode corpus token ids and correct the cut until the
// re-encoded count matches.
type textGen struct {
	tok    tokenizer.Tokenizer
	ws     bool
	text   string  // corpus + " " + corpus, so a window may wrap around
	starts []int32 // byte offset of each word of text
	ends   []int32
	nwords int // words in one copy of the corpus
	ids    []int
}

func newTextGen(tok tokenizer.Tokenizer) *textGen {
	body := strings.TrimSpace(corpus)
	g := &textGen{tok: tok, text: body + " " + body}
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
	if !g.ws {
		g.ids = tok.Encode(body)
	}
	return g
}

// positions returns how many distinct start positions there are.
func (g *textGen) positions() int {
	if g.ws {
		return g.nwords
	}
	return len(g.ids)
}

// at returns a text of exactly n tokens starting at corpus position pos (a word for the
// whitespace tokenizer, a token otherwise), and its token count (n unless the tokenizer cannot
// cut exactly there).
func (g *textGen) at(pos, n int) (string, int) {
	if n <= 0 {
		return "", 0
	}
	pos %= g.positions()
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
	return g.cut(func(m int) string { return g.tok.Decode(g.window(pos, m)) }, n)
}

// window returns m corpus token ids from pos, wrapping around.
func (g *textGen) window(pos, m int) []int {
	out := make([]int, 0, m)
	for len(out) < m {
		k := min(m-len(out), len(g.ids)-pos)
		out = append(out, g.ids[pos:pos+k]...)
		pos = 0
	}
	return out
}

// cut decodes m tokens and adjusts m until the text re-encodes to exactly n tokens (token
// merges across the cut can change the count); after a few tries it keeps the closest text and
// reports its real count.
func (g *textGen) cut(decode func(m int) string, n int) (string, int) {
	m := n
	best, bestN := "", -1
	for range 8 {
		s := decode(m)
		c := g.tok.Count(s)
		if c == n {
			return s, n
		}
		if bestN < 0 || abs(c-n) < abs(bestN-n) {
			best, bestN = s, c
		}
		m += n - c
		if m <= 0 {
			m = 1
		}
	}
	return best, bestN
}

// random returns a text of n tokens each drawn at random from the corpus.
func (g *textGen) random(r *rand.Rand, n int) (string, int) {
	if n <= 0 {
		return "", 0
	}
	if g.ws {
		var b strings.Builder
		b.Grow(n * 8)
		for i := range n {
			w := r.IntN(g.nwords)
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(g.text[g.starts[w]:g.ends[w]])
		}
		return b.String(), n
	}
	ids := make([]int, 0, 2*n)
	return g.cut(func(m int) string {
		for len(ids) < m {
			ids = append(ids, g.ids[r.IntN(len(g.ids))])
		}
		return g.tok.Decode(ids[:m])
	}, n)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
