// Package tokenizer counts and cuts text in tokens for replay (exact prompt lengths) and
// aggregate (output tokens when the server sends no usage). Encodings are offline.
package tokenizer

import (
	"fmt"
	"strings"
	"unicode"
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
//   - a path to a Hugging Face tokenizer.json (byte-level BPE: Llama 3, Qwen 3, DeepSeek).
//   - "o200k_base", "cl100k_base": offline tiktoken encodings.
func Load(spec string) (Tokenizer, error) {
	switch {
	case spec == "" || spec == "whitespace":
		return Whitespace{}, nil
	}
	return loadOther(spec)
}

// loadOther is replaced as encodings are added.
var loadOther = func(spec string) (Tokenizer, error) {
	return nil, fmt.Errorf("tokenizer %q: unknown (known: whitespace)", spec)
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
