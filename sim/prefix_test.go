package sim

import (
	"strings"
	"testing"

	"github.com/wirebench/wirebench/tokenizer"
)

func TestBlockHasherCountsLikeTokenizer(t *testing.T) {
	for _, s := range []string{"", "a", "  a  b ", "héllo wörld\tx\ny", "日本語 テキスト", strings.Repeat("w ", 40)} {
		bh := newBlockHasher(4)
		bh.text(s)
		if want := tokenizer.CountWords(s); bh.tokens != want || len(bh.blocks) != want/4 {
			t.Errorf("blockHasher(%q): %d tokens, %d blocks; want %d, %d", s, bh.tokens, len(bh.blocks), want, want/4)
		}
	}
	a, b := newBlockHasher(2), newBlockHasher(2)
	a.text("x y z w")
	b.text("x y q w")
	if a.blocks[0] != b.blocks[0] || a.blocks[1] == b.blocks[1] {
		t.Errorf("block hashes %x and %x: want the first equal, the second different", a.blocks, b.blocks)
	}
}

func TestPrefixCache(t *testing.T) {
	c := newPrefixCache(4)
	steps := []struct {
		blocks []uint64
		hits   int
	}{
		{[]uint64{1, 2, 3}, 0},    // cold
		{[]uint64{1, 2, 3}, 3},    // all cached
		{[]uint64{1, 2, 9}, 2},    // shared prefix of 2
		{[]uint64{5, 2, 3}, 0},    // a hit must start at the first block
		{[]uint64{7, 8}, 0},       // evicts the least recently used (3, then 9)
		{[]uint64{1, 2, 3}, 0},    // 1 was evicted too (capacity 4: 7 8 5 2 remain)
		{[]uint64{1, 2, 3, 4}, 3}, // 1 2 3 were just inserted
		{[]uint64{1, 2, 3, 4}, 4}, // now all four are the cache
	}
	for i, s := range steps {
		if got := c.lookupInsert(s.blocks); got != s.hits {
			t.Errorf("step %d: lookupInsert(%v) = %d; want %d", i, s.blocks, got, s.hits)
		}
	}
}
