package sim

import "unicode"

// prefixCache is an LRU set of prompt block hashes, in fixed arrays (no allocation once full).
// A block's hash chains the hashes of all blocks before it, so a hit on block i means the
// whole prefix up to i is cached, as in vLLM's automatic prefix caching.
type prefixCache struct {
	idx        map[uint64]int32
	key        []uint64
	prev, next []int32
	head, tail int32 // most and least recently used; -1 when empty
}

// maxPrefixCacheBlocks bounds --prefix-cache-blocks: the cache is allocated up front (a map
// entry and three slice entries a block; 1e9 blocks took 4.5 GiB before the first request was
// served), and 2^22 blocks are a thousand times the default.
const maxPrefixCacheBlocks = 1 << 22

func newPrefixCache(capacity int) *prefixCache {
	return &prefixCache{
		idx:  make(map[uint64]int32, capacity),
		key:  make([]uint64, 0, capacity),
		prev: make([]int32, 0, capacity),
		next: make([]int32, 0, capacity),
		head: -1, tail: -1,
	}
}

// lookupInsert returns how many leading blocks were cached, then marks all blocks as most
// recently used (inserting the missing ones, evicting the least recently used). The first block
// is touched last so that it is evicted last: a chain is lost from its end, never its start.
func (c *prefixCache) lookupInsert(blocks []uint64) int {
	hits := 0
	for _, b := range blocks {
		if _, ok := c.idx[b]; !ok {
			break
		}
		hits++
	}
	for i := len(blocks) - 1; i >= 0; i-- {
		c.touch(blocks[i])
	}
	return hits
}

func (c *prefixCache) unlink(i int32) {
	p, n := c.prev[i], c.next[i]
	if p >= 0 {
		c.next[p] = n
	} else {
		c.head = n
	}
	if n >= 0 {
		c.prev[n] = p
	} else {
		c.tail = p
	}
}

func (c *prefixCache) pushFront(i int32) {
	c.prev[i], c.next[i] = -1, c.head
	if c.head >= 0 {
		c.prev[c.head] = i
	}
	c.head = i
	if c.tail < 0 {
		c.tail = i
	}
}

func (c *prefixCache) touch(b uint64) {
	if i, ok := c.idx[b]; ok {
		c.unlink(i)
		c.pushFront(i)
		return
	}
	var i int32
	if len(c.key) < cap(c.key) {
		i = int32(len(c.key))
		c.key, c.prev, c.next = append(c.key, b), append(c.prev, -1), append(c.next, -1)
	} else {
		i = c.tail
		c.unlink(i)
		delete(c.idx, c.key[i])
		c.key[i] = b
	}
	c.idx[b] = i
	c.pushFront(i)
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// blockHasher hashes a token stream into chained block hashes of size tokens each; a partial
// last block is not cached (as in vLLM).
type blockHasher struct {
	size   int
	h      uint64 // running hash of the current block, seeded with the previous block's hash
	n      int    // tokens in the current block
	blocks []uint64
	tokens int
	// chains: with several inputs (an embeddings batch), the number of blocks of each input's
	// own chain; nil: one chain
	chains     []int32
	chainStart int
}

func newBlockHasher(size int) blockHasher { return blockHasher{size: size, h: fnvOffset} }

func (bh *blockHasher) endToken() {
	bh.h = (bh.h ^ ' ') * fnvPrime
	bh.tokens++
	bh.n++
	if bh.n == bh.size {
		bh.blocks = append(bh.blocks, bh.h)
		bh.n = 0 // the next block starts from this hash: the chain
	}
}

// text adds the words of s (a token is a maximal run of non-space characters, as
// tokenizer.CountWords counts them).
func (bh *blockHasher) text(s string) {
	in := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			if in {
				bh.endToken()
				in = false
			}
			continue
		}
		in = true
		for x := uint32(r); ; x >>= 8 {
			bh.h = (bh.h ^ uint64(x&0xff)) * fnvPrime
			if x < 0x100 {
				break
			}
		}
	}
	if in {
		bh.endToken()
	}
}

// id adds one token given by id (prompts sent as token ids).
func (bh *blockHasher) id(v int64) {
	for i := 0; i < 8; i++ {
		bh.h = (bh.h ^ uint64(byte(v>>(8*i)))) * fnvPrime
	}
	bh.endToken()
}

// image adds n tokens standing for one image whose identity hashes to h.
func (bh *blockHasher) image(h uint64, n int) {
	for i := range n {
		bh.id(int64(h) + int64(i))
	}
}

// endChain ends one input of a batch: the next input's blocks start a chain of their own (as
// a separate request's would), and its partial last block is not cached. It returns the
// input's hash, which depends on all of its tokens.
func (bh *blockHasher) endChain() uint64 {
	h := bh.h
	bh.chains = append(bh.chains, int32(len(bh.blocks)-bh.chainStart))
	bh.chainStart, bh.h, bh.n = len(bh.blocks), fnvOffset, 0
	return h
}
