package tokenizer

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBPEAlgorithmsAgree checks the heap version (long words) against the quadratic one on
// random rule sets and words, including ties between equal ranks.
func TestBPEAlgorithmsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		// Ids 0..3 are single symbols; each rule merges two existing ids into a new one.
		merges := map[uint64]merge{}
		next := int32(4)
		for rank := range 12 {
			a, b := r.Int32N(next), r.Int32N(next)
			if _, ok := merges[pairKey(a, b)]; ok {
				continue
			}
			merges[pairKey(a, b)] = merge{rank: int32(rank), id: next}
			next++
		}
		word := make([]int32, 1+r.IntN(300))
		for i := range word {
			word[i] = r.Int32N(4)
		}
		small := bpeSmall(merges, slices.Clone(word))
		heap := bpeHeap(merges, slices.Clone(word))
		if !slices.Equal(small, heap) {
			t.Fatalf("trial %d: bpeHeap(%v) = %v; want %v (bpeSmall)", trial, word, heap, small)
		}
	}
}

func TestBPE(t *testing.T) {
	// a=0 b=1 c=2; ab=3 (rank 0), bc=4 (rank 1), abc=5 from ab+c (rank 2), aa=6 (rank 3).
	merges := map[uint64]merge{
		pairKey(0, 1): {0, 3},
		pairKey(1, 2): {1, 4},
		pairKey(3, 2): {2, 5},
		pairKey(0, 0): {3, 6},
	}
	for _, tc := range []struct {
		in, want []int32
	}{
		{[]int32{}, []int32{}},
		{[]int32{2}, []int32{2}},
		{[]int32{0, 1, 2}, []int32{5}},       // ab before bc, then ab+c
		{[]int32{1, 2, 0}, []int32{4, 0}},    // only bc applies
		{[]int32{0, 0, 0}, []int32{6, 0}},    // ties go to the leftmost pair
		{[]int32{0, 0, 1}, []int32{0, 3}},    // ab (rank 0) beats aa (rank 3)
		{[]int32{2, 2, 2}, []int32{2, 2, 2}}, // no rule
	} {
		for name, f := range map[string]func(map[uint64]merge, []int32) []int32{"bpeSmall": bpeSmall, "bpeHeap": bpeHeap} {
			if len(tc.in) == 0 && name == "bpeHeap" {
				continue // bpe never passes an empty word to bpeHeap
			}
			if got := f(merges, slices.Clone(tc.in)); !slices.Equal(got, tc.want) {
				t.Errorf("%s(%v) = %v; want %v", name, tc.in, got, tc.want)
			}
		}
	}
}
