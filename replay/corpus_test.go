package replay

import (
	"math/rand/v2"
	"testing"

	"github.com/wirebench/wirebench/tokenizer"
)

func TestTextGenExactCounts(t *testing.T) {
	toks := []string{"whitespace", "o200k_base", "cl100k_base"}
	for _, name := range toks {
		tok, err := tokenizer.Load(name)
		if err != nil {
			t.Fatalf("tokenizer.Load(%q): %v", name, err)
		}
		g := newTextGen(tok)
		r := rand.New(rand.NewPCG(1, 2))
		lengths := []int{1, 2, 3, 16, 64, 257, 1000, 5000}
		if name == "whitespace" {
			lengths = append(lengths, g.nwords+5, 3*g.nwords) // longer than the corpus: wraps
		}
		for _, n := range lengths {
			for range 3 {
				pos := r.IntN(g.positions())
				s, got := g.at(pos, n)
				if got != n || tok.Count(s) != n {
					t.Errorf("%s: at(%d, %d) = text of %d tokens, reported %d; want %d", name, pos, n, tok.Count(s), got, n)
				}
				s, got = g.random(r, n)
				if got != n || tok.Count(s) != n {
					t.Errorf("%s: random(%d) = text of %d tokens, reported %d; want %d", name, n, tok.Count(s), got, n)
				}
			}
		}
	}
}

func TestTextGenNoAllocWhitespace(t *testing.T) {
	g := newTextGen(tokenizer.Whitespace{})
	allocs := testing.AllocsPerRun(100, func() { g.at(123, 64) })
	if allocs != 0 {
		t.Errorf("whitespace at(123, 64) allocates %.0f times; want 0", allocs)
	}
}
