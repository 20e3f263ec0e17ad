package tokenizer

import (
	"fmt"
	"strings"

	tiktoken "github.com/tiktoken-go/tokenizer"
)

// Tiktoken is an OpenAI tiktoken encoding (o200k_base, cl100k_base) with its vocabulary compiled
// into the binary (github.com/tiktoken-go/tokenizer), so it works offline. Like tiktoken's
// encode_ordinary, special-token text such as "<|endoftext|>" is encoded as ordinary text.
// A Tiktoken is safe for concurrent use.
type Tiktoken struct {
	name  string
	codec tiktoken.Codec
}

// tiktokenNames are the encodings Load accepts by name.
var tiktokenNames = []string{string(tiktoken.O200kBase), string(tiktoken.Cl100kBase)}

// LoadTiktoken returns the named tiktoken encoding: "o200k_base" or "cl100k_base".
func LoadTiktoken(name string) (*Tiktoken, error) {
	switch name {
	case string(tiktoken.O200kBase), string(tiktoken.Cl100kBase):
	default:
		return nil, fmt.Errorf("tiktoken encoding %q: unknown (known: %s)", name, strings.Join(tiktokenNames, ", "))
	}
	c, err := tiktoken.Get(tiktoken.Encoding(name))
	if err != nil {
		return nil, fmt.Errorf("tiktoken encoding %q: %w", name, err)
	}
	return &Tiktoken{name: name, codec: c}, nil
}

// Name returns the encoding's name.
func (t *Tiktoken) Name() string { return t.name }

// Encode returns the token ids of text.
func (t *Tiktoken) Encode(text string) []int {
	ids, _, _ := t.codec.Encode(text) // errors only in the strict UTF-8 mode, which is not set
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

// Count returns len(Encode(text)) without building the id slice.
func (t *Tiktoken) Count(text string) int {
	n, _ := t.codec.Count(text)
	return n
}

// Decode returns the text of ids; bytes that do not form valid UTF-8 become U+FFFD. An unknown
// id gives "".
func (t *Tiktoken) Decode(ids []int) string {
	u := make([]uint, len(ids))
	for i, id := range ids {
		u[i] = uint(id)
	}
	s, err := t.codec.Decode(u)
	if err != nil {
		return ""
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// TokenEnds returns text and the byte offset where each token ends; a token that ends inside a
// UTF-8 character gets the offset of that character's end.
func (t *Tiktoken) TokenEnds(text string) (string, []int) {
	_, toks, _ := t.codec.Encode(text)
	ends := make([]int, len(toks))
	end := 0
	for i, tok := range toks {
		end += len(tok)
		ends[i] = end
	}
	snapEnds(text, ends)
	return text, ends
}
