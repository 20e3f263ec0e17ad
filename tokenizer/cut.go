package tokenizer

import (
	"unicode/utf8"
)

// TokenEnder is implemented by tokenizers that can say where each token ends; all tokenizers of
// this package do. Cut uses it to cut at token boundaries.
type TokenEnder interface {
	// TokenEnds returns the text as the tokenizer sees it (for example NFC-normalized) and, for
	// each token of Encode(text), the byte offset in that text where the token ends. Offsets are
	// non-decreasing and fall on UTF-8 character boundaries.
	TokenEnds(text string) (string, []int)
}

// cutWindow is how many token boundaries on each side of n Cut tries.
const cutWindow = 8

// Cut returns the longest prefix of text, cut at a token boundary, whose own encoding has exactly
// n tokens, and true; or "", false when no such prefix exists (text has fewer than n tokens, or
// re-encoding merges across every boundary near n).
//
// A prefix cut after token k usually re-encodes to k tokens, but not always (the last pre-token
// of the prefix may merge differently, or a character split over two tokens cannot be cut), so
// Cut re-counts candidates: k = n first, then neighbouring boundaries up to cutWindow away, and
// then the cutWindow boundaries after the one found, keeping the longest with n tokens. The end
// of the text counts as a boundary. When the tokenizer normalizes (NFC), the prefix is one of the normalized text,
// which the tokenizer (and so the server) treats the same as the original.
//
// The cost is one tokenization of a head of text (about 16 bytes per wanted token, grown when
// too short) plus about cutWindow+1 Counts of the prefix.
func Cut(t Tokenizer, text string, n int) (string, bool) {
	if n < 0 {
		return "", false
	}
	if n == 0 {
		if t.Count("") == 0 {
			return "", true
		}
		return "", false
	}
	// Tokenize a head of text that probably holds n + cutWindow tokens, growing it as needed.
	head := len(text)
	if want := 16*(n+cutWindow) + 64; want < len(text) {
		head = want
	}
	for {
		h := text[:runeEnd(text, head)]
		s, ends := tokenEnds(t, h)
		if len(ends) > n+cutWindow || len(h) == len(text) {
			return cutAt(t, s, ends, n)
		}
		head *= 4
		if head > len(text) {
			head = len(text)
		}
	}
}

// runeEnd moves i forward to a UTF-8 character boundary of s.
func runeEnd(s string, i int) int {
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}

func cutAt(t Tokenizer, s string, ends []int, n int) (string, bool) {
	if len(ends) < n {
		return "", false
	}
	if len(ends) == n && t.Count(s) == n {
		return s, true
	}
	prefix := func(k int) string { return s[:ends[k-1]] }
	ok := func(k int) bool { return k >= 1 && k <= len(ends) && t.Count(prefix(k)) == n }
	found := 0
	for d := 0; d <= cutWindow && found == 0; d++ {
		switch {
		case ok(n + d):
			found = n + d
		case d > 0 && ok(n-d):
			found = n - d
		}
	}
	if found == 0 {
		return "", false
	}
	// Counts are not monotone in k (a cut can merge differently), so scan the whole window.
	for k, last := found+1, found; k <= min(len(ends), last+cutWindow); k++ {
		if ends[k-1] != ends[found-1] && ok(k) {
			found = k
		}
	}
	return prefix(found), true
}

// tokenEnds uses t's TokenEnder, or else finds the boundaries by decoding prefixes of the ids
// (boundaries whose prefix does not decode to a prefix of text are left out).
func tokenEnds(t Tokenizer, text string) (string, []int) {
	if te, ok := t.(TokenEnder); ok {
		return te.TokenEnds(text)
	}
	ids := t.Encode(text)
	ends := make([]int, 0, len(ids))
	last := 0
	for k := 1; k <= len(ids); k++ {
		p := t.Decode(ids[:k])
		if len(p) >= last && len(p) <= len(text) && text[:len(p)] == p {
			last = len(p)
		}
		ends = append(ends, last)
	}
	return text, ends
}
