package tokenizer

import "container/heap"

// merge is one BPE merge rule: the pair's rank (lower merges first) and the id of the merged token.
type merge struct{ rank, id int32 }

// pairKey packs two token ids into a map key.
func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// shortWord is the symbol count up to which bpeSmall (quadratic, no heap) is used.
const shortWord = 64

// bpe merges the symbols ids (one per byte of a pre-token, in order) in place and returns the
// merged ids: repeatedly the adjacent pair with the lowest merge rank is replaced by its merged
// token, the leftmost one on ties, until no adjacent pair has a rule. This is the algorithm of
// Hugging Face tokenizers and of transformers.js.
func bpe(merges map[uint64]merge, ids []int32) []int32 {
	if len(ids) <= shortWord {
		return bpeSmall(merges, ids)
	}
	return bpeHeap(merges, ids)
}

// noRank marks a pair without a merge rule.
const noRank = int32(1<<31 - 1)

// bpeSmall keeps the rank of every adjacent pair in an array: each merge costs one scan for the
// minimum and two map look-ups for the new neighbours.
func bpeSmall(merges map[uint64]merge, ids []int32) []int32 {
	if len(ids) < 2 {
		return ids
	}
	var buf [shortWord]int32
	ranks := buf[:0]
	if len(ids)-1 > len(buf) {
		ranks = make([]int32, 0, len(ids)-1)
	}
	ranks = ranks[:len(ids)-1]
	rank := func(i int) int32 {
		if m, ok := merges[pairKey(ids[i], ids[i+1])]; ok {
			return m.rank
		}
		return noRank
	}
	for i := range ranks {
		ranks[i] = rank(i)
	}
	for len(ids) > 1 {
		best, at := noRank, -1
		for i, r := range ranks {
			if r < best {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		ids[at] = merges[pairKey(ids[at], ids[at+1])].id
		ids = append(ids[:at+1], ids[at+2:]...)
		ranks = append(ranks[:at], ranks[at+1:]...)
		if at < len(ranks) {
			ranks[at] = rank(at)
		}
		if at > 0 {
			ranks[at-1] = rank(at - 1)
		}
	}
	return ids
}

// candidate is a possible merge of symbol left with the symbol after it, as it was when queued.
type candidate struct {
	rank, left, right int32 // left, right: symbol positions in the original word
	lid, rid          int32 // their ids when queued; a later merge changes them and voids it
}

type candidates []candidate

func (c candidates) Len() int { return len(c) }
func (c candidates) Less(i, j int) bool {
	if c[i].rank != c[j].rank {
		return c[i].rank < c[j].rank
	}
	return c[i].left < c[j].left
}
func (c candidates) Swap(i, j int) { c[i], c[j] = c[j], c[i] }
func (c *candidates) Push(x any)   { *c = append(*c, x.(candidate)) }
func (c *candidates) Pop() any {
	old := *c
	x := old[len(old)-1]
	*c = old[:len(old)-1]
	return x
}

// bpeHeap is bpe in O(n log n) for long words: a doubly linked list of symbols and a min-heap of
// candidate merges ordered by (rank, position); stale candidates are skipped when popped.
func bpeHeap(merges map[uint64]merge, ids []int32) []int32 {
	n := len(ids)
	prev := make([]int32, n)
	next := make([]int32, n)
	alive := make([]bool, n)
	for i := range ids {
		prev[i], next[i], alive[i] = int32(i-1), int32(i+1), true
	}
	next[n-1] = -1
	q := make(candidates, 0, n)
	push := func(l int32) {
		r := next[l]
		if r < 0 {
			return
		}
		if m, ok := merges[pairKey(ids[l], ids[r])]; ok {
			heap.Push(&q, candidate{rank: m.rank, left: l, right: r, lid: ids[l], rid: ids[r]})
		}
	}
	for i := range n - 1 {
		push(int32(i))
	}
	for q.Len() > 0 {
		c := heap.Pop(&q).(candidate)
		l, r := c.left, c.right
		if !alive[l] || !alive[r] || next[l] != r || ids[l] != c.lid || ids[r] != c.rid {
			continue
		}
		ids[l] = merges[pairKey(ids[l], ids[r])].id
		alive[r] = false
		next[l] = next[r]
		if next[r] >= 0 {
			prev[next[r]] = l
		}
		if prev[l] >= 0 {
			push(prev[l])
		}
		push(l)
	}
	out := ids[:0]
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, ids[i])
	}
	return out
}
