// Package tokenizer counts and cuts text in tokens for replay (exact prompt lengths) and
// aggregate (output tokens when the server sends no usage). Encodings are offline.
package tokenizer

import (
	"fmt"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokenizer encodes text to token ids and back.
type Tokenizer interface {
	Name() string
	Encode(text string) []int
	Decode(ids []int) string
	// Count returns len(Encode(text)), possibly faster.
	Count(text string) int
}

// Load returns the tokenizer named by spec:
//   - "whitespace" (default when empty): a token is a maximal run of non-space characters; the
//     built-in simulator counts tokens the same way, so its usage is exact for it.
//   - "o200k_base", "cl100k_base": offline tiktoken encodings (see Tiktoken).
//   - a path to a Hugging Face tokenizer.json, or to a directory holding one (byte-level BPE:
//     Llama 3, Qwen 2/3, DeepSeek; see HF).
func Load(spec string) (Tokenizer, error) {
	switch spec {
	case "", "whitespace":
		return Whitespace{}, nil
	case "o200k_base", "cl100k_base":
		return LoadTiktoken(spec)
	}
	if _, err := os.Stat(spec); err != nil {
		return nil, fmt.Errorf("tokenizer %q: not a known name (whitespace, %s) nor a readable tokenizer.json: %w",
			spec, strings.Join(tiktokenNames, ", "), err)
	}
	return LoadHF(spec)
}

// Whitespace is the simulator's tokenizer: a token is a maximal run of non-space characters.
// Encode returns the token positions' ordinal numbers (ids carry no vocabulary).
type Whitespace struct{}

func (Whitespace) Name() string { return "whitespace" }

func (Whitespace) Encode(text string) []int {
	n := CountWords(text)
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	return ids
}

// Decode cannot recover words from ordinals; it returns one placeholder word per id.
func (Whitespace) Decode(ids []int) string { return strings.TrimSpace(strings.Repeat("w ", len(ids))) }

func (Whitespace) Count(text string) int { return CountWords(text) }

// TokenEnds returns text and the byte offset where each word ends.
func (Whitespace) TokenEnds(text string) (string, []int) {
	var ends []int
	in := false
	for i, r := range text {
		if unicode.IsSpace(r) {
			if in {
				ends = append(ends, i)
			}
			in = false
		} else {
			in = true
		}
	}
	if in {
		ends = append(ends, len(text))
	}
	return text, ends
}

// CountWords counts maximal runs of non-space characters without allocating.
func CountWords(text string) int {
	n, in := 0, false
	for _, r := range text {
		if unicode.IsSpace(r) {
			in = false
		} else if !in {
			in = true
			n++
		}
	}
	return n
}

// snapEnds moves token end offsets that fall inside a UTF-8 character (a character split over
// two byte-level tokens) to that character's end, keeping them within text and non-decreasing.
func snapEnds(text string, ends []int) {
	for i := len(ends) - 1; i >= 0; i-- {
		e := min(ends[i], len(text))
		for e < len(text) && !utf8.RuneStart(text[e]) {
			e++
		}
		if i+1 < len(ends) {
			e = min(e, ends[i+1])
		}
		ends[i] = e
	}
}
