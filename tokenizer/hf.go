package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
	"golang.org/x/text/unicode/norm"
)

// HF is a byte-level BPE tokenizer read from a Hugging Face tokenizer.json (Llama 3, Qwen 2/3,
// DeepSeek, GPT-2 style). Encode follows the reference pipeline of transformers.js:
//
//  1. split the text on added tokens (longest match first; lstrip/rstrip trim the neighbours);
//  2. per remaining section: the normalizer (NFC or none), then the pre-tokenizer's Split regexes
//     (run with regexp2, which has the lookahead Go's regexp lacks) and the ByteLevel step;
//  3. per pre-token: byte-level BPE over model.vocab and model.merges, cached per pre-token.
//
// Encode returns the text's tokens only: no BOS/EOS or other template tokens of the
// post_processor. An HF is safe for concurrent use.
type HF struct {
	name         string
	byteID       [256]int32         // id of each single byte, -1 when the vocabulary lacks it
	vocab        map[string]int32   // raw bytes of a token → id (used with ignore_merges)
	merges       map[uint64]merge   // pairKey(left id, right id) → rank and merged id
	pieces       []string           // id → raw bytes (added tokens: their content)
	added        []addedToken       // sorted by content, longest first within a shared prefix
	addedFirst   [256]bool          // first bytes of added tokens
	splits       []*regexp2.Regexp  // Split pre-tokenizers in order (Isolated behaviour)
	nfc          bool               // normalizer NFC
	prefixSpace  bool               // ByteLevel add_prefix_space
	ignoreMerges bool               // model.ignore_merges: a pre-token in the vocabulary is one token
	mu           sync.RWMutex       // guards cache
	cache        map[string][]int32 // pre-token → ids
}

type addedToken struct {
	content string
	id      int32
	lstrip  bool
	rstrip  bool
}

// cacheWords bounds the pre-token cache; it is emptied when full. cacheLen is the longest
// pre-token (bytes) cached: longer ones rarely repeat.
const (
	cacheWords = 1 << 17
	cacheLen   = 256
)

// gpt2Split is the ByteLevel pre-tokenizer's own regex (use_regex: true).
const gpt2Split = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// jsRegexFixes are the rewrites transformers.js applies before compiling a pattern; applying them
// too keeps the two implementations identical (the case-insensitive group matches the same ASCII
// letters either way).
var jsRegexFixes = []struct{ from, to string }{
	{`(?i:'s|'t|'re|'ve|'m|'ll|'d)`, `(?:'([sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))`},
}

// ErrUnsupported is wrapped by LoadHF when a tokenizer.json uses a feature this package does not
// implement (a model other than BPE, a normalizer other than NFC, a pre-tokenizer without
// ByteLevel, ...).
var ErrUnsupported = errors.New("unsupported tokenizer.json feature")

// tokenizerJSON is the part of tokenizer.json that byte-level BPE needs.
type tokenizerJSON struct {
	AddedTokens []struct {
		ID      int    `json:"id"`
		Content string `json:"content"`
		LStrip  bool   `json:"lstrip"`
		RStrip  bool   `json:"rstrip"`
	} `json:"added_tokens"`
	Normalizer   *component `json:"normalizer"`
	PreTokenizer *component `json:"pre_tokenizer"`
	Decoder      *component `json:"decoder"`
	Model        struct {
		Type                    string          `json:"type"`
		Vocab                   map[string]int  `json:"vocab"`
		Merges                  json.RawMessage `json:"merges"`
		Dropout                 *float64        `json:"dropout"`
		ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
		ByteFallback            bool            `json:"byte_fallback"`
		IgnoreMerges            bool            `json:"ignore_merges"`
	} `json:"model"`
}

// component is a normalizer, pre-tokenizer or decoder node.
type component struct {
	Type          string       `json:"type"`
	Normalizers   []*component `json:"normalizers"`
	PreTokenizers []*component `json:"pretokenizers"`
	Pattern       *struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior       string `json:"behavior"`
	Invert         bool   `json:"invert"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	UseRegex       *bool  `json:"use_regex"`
}

// LoadHF reads a Hugging Face tokenizer.json (or a directory holding one) whose model is
// byte-level BPE. Features it cannot reproduce exactly are errors wrapping ErrUnsupported that
// name the field.
func LoadHF(path string) (*HF, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read tokenizer: %w", err)
	}
	var j tokenizerJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	h, err := newHF(&j)
	if err != nil {
		return nil, fmt.Errorf("tokenizer %s: %w", path, err)
	}
	h.name = path
	return h, nil
}

// newHF builds the tokenizer of a parsed tokenizer.json: the model's options checked, the
// normalizer and pre-tokenizer steps, the vocabulary, the merges and the added tokens.
func newHF(j *tokenizerJSON) (*HF, error) {
	m := &j.Model
	if err := checkModel(j); err != nil {
		return nil, err
	}
	h := &HF{ignoreMerges: m.IgnoreMerges, cache: make(map[string][]int32)}
	if err := h.setNormalizer(j.Normalizer, "normalizer"); err != nil {
		return nil, err
	}
	byteLevel, err := h.setPreTokenizer(j.PreTokenizer, "pre_tokenizer")
	if err != nil {
		return nil, err
	}
	if !byteLevel {
		return nil, fmt.Errorf("pre_tokenizer: no ByteLevel step: %w (only byte-level BPE is implemented)", ErrUnsupported)
	}
	if d := j.Decoder; d != nil && d.Type != "ByteLevel" {
		return nil, fmt.Errorf("decoder.type %q: %w (want ByteLevel)", d.Type, ErrUnsupported)
	}
	if err := h.setVocab(j); err != nil {
		return nil, err
	}
	if err := h.setMerges(m.Vocab, m.Merges); err != nil {
		return nil, err
	}
	if err := h.setAdded(j); err != nil {
		return nil, err
	}
	return h, nil
}

// checkModel refuses a model that is not BPE or has options byte-level BPE here does not
// reproduce.
func checkModel(j *tokenizerJSON) error {
	m := &j.Model
	switch {
	case m.Type != "BPE":
		return fmt.Errorf("model.type %q: %w (want BPE)", m.Type, ErrUnsupported)
	case m.Dropout != nil && *m.Dropout != 0:
		return fmt.Errorf("model.dropout %v: %w", *m.Dropout, ErrUnsupported)
	case m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "":
		return fmt.Errorf("model.continuing_subword_prefix %q: %w", *m.ContinuingSubwordPrefix, ErrUnsupported)
	case m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "":
		return fmt.Errorf("model.end_of_word_suffix %q: %w", *m.EndOfWordSuffix, ErrUnsupported)
	case m.ByteFallback:
		return fmt.Errorf("model.byte_fallback: %w", ErrUnsupported)
	case len(m.Vocab) == 0:
		return errors.New("model.vocab: empty")
	}
	return nil
}

// setVocab reads the vocabulary and the added tokens' ids into h.pieces, h.vocab and h.byteID.
func (h *HF) setVocab(j *tokenizerJSON) error {
	m := &j.Model
	// The vocabulary is stored as raw bytes: byte-level tokens spell each byte as one rune of the
	// GPT-2 alphabet, which is undone once here instead of on every Encode and Decode.
	maxID := 0
	for _, id := range m.Vocab {
		maxID = max(maxID, id)
	}
	for _, a := range j.AddedTokens {
		maxID = max(maxID, a.ID)
	}
	if maxID >= 1<<31-1 {
		return fmt.Errorf("model.vocab: id %d too large", maxID)
	}
	h.pieces = make([]string, maxID+1)
	h.vocab = make(map[string]int32, len(m.Vocab))
	for i := range h.byteID {
		h.byteID[i] = -1
	}
	for tok, id := range m.Vocab {
		if id < 0 {
			return fmt.Errorf("model.vocab[%q]: negative id %d", tok, id)
		}
		raw, ok := fromByteLevel(tok)
		if !ok {
			return fmt.Errorf("model.vocab[%q]: not in the byte-level alphabet", tok)
		}
		h.pieces[id] = raw
		h.vocab[raw] = int32(id)
		if len(raw) == 1 {
			h.byteID[raw[0]] = int32(id)
		}
	}
	return nil
}

// setMerges reads the merge rules, each a pair of tokens of vocab.
func (h *HF) setMerges(vocab map[string]int, raw json.RawMessage) error {
	pairs, err := parseMerges(raw)
	if err != nil {
		return err
	}
	h.merges = make(map[uint64]merge, len(pairs))
	for rank, p := range pairs {
		a, aok := vocab[p[0]]
		b, bok := vocab[p[1]]
		c, cok := vocab[p[0]+p[1]]
		if !aok || !bok || !cok {
			return fmt.Errorf("model.merges[%d] %q: token not in model.vocab", rank, p)
		}
		k := pairKey(int32(a), int32(b))
		if _, dup := h.merges[k]; !dup { // the first (lowest) rank of a duplicated rule wins
			h.merges[k] = merge{rank: int32(rank), id: int32(c)}
		}
	}
	return nil
}

// setAdded reads the added tokens, longest first.
func (h *HF) setAdded(j *tokenizerJSON) error {
	for i, a := range j.AddedTokens {
		if a.Content == "" || a.ID < 0 {
			return fmt.Errorf("added_tokens[%d]: empty content or negative id", i)
		}
		h.pieces[a.ID] = a.Content
		h.added = append(h.added, addedToken{content: a.Content, id: int32(a.ID), lstrip: a.LStrip, rstrip: a.RStrip})
		h.addedFirst[a.Content[0]] = true
	}
	// Longest first, so the first match at a position is the longest one.
	slices.SortStableFunc(h.added, func(a, b addedToken) int { return len(b.content) - len(a.content) })
	return nil
}

func (h *HF) setNormalizer(c *component, field string) error {
	if c == nil {
		return nil
	}
	switch c.Type {
	case "NFC":
		h.nfc = true
	case "Sequence":
		for i, n := range c.Normalizers {
			if err := h.setNormalizer(n, fmt.Sprintf("%s.normalizers[%d]", field, i)); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%s.type %q: %w (want NFC or none)", field, c.Type, ErrUnsupported)
	}
	return nil
}

// setPreTokenizer records the Split regexes and reports whether a ByteLevel step was seen.
func (h *HF) setPreTokenizer(c *component, field string) (bool, error) {
	if c == nil {
		return false, nil
	}
	switch c.Type {
	case "Sequence":
		byteLevel := false
		for i, p := range c.PreTokenizers {
			bl, err := h.setPreTokenizer(p, fmt.Sprintf("%s.pretokenizers[%d]", field, i))
			if err != nil {
				return false, err
			}
			byteLevel = byteLevel || bl
		}
		return byteLevel, nil
	case "ByteLevel":
		h.prefixSpace = c.AddPrefixSpace
		if c.UseRegex == nil || *c.UseRegex {
			if err := h.addSplit(gpt2Split, field); err != nil {
				return false, err
			}
		}
		return true, nil
	case "Split":
		switch {
		case c.Pattern == nil:
			return false, fmt.Errorf("%s.pattern: missing", field)
		case c.Behavior != "Isolated":
			return false, fmt.Errorf("%s.behavior %q: %w (want Isolated)", field, c.Behavior, ErrUnsupported)
		case c.Invert:
			return false, fmt.Errorf("%s.invert: %w", field, ErrUnsupported)
		case c.Pattern.Regex != nil:
			return false, h.addSplit(*c.Pattern.Regex, field+".pattern.Regex")
		case c.Pattern.String != nil:
			return false, h.addSplit(regexp2.Escape(*c.Pattern.String), field+".pattern.String")
		}
		return false, fmt.Errorf("%s.pattern: neither Regex nor String", field)
	}
	return false, fmt.Errorf("%s.type %q: %w (want Sequence, Split or ByteLevel)", field, c.Type, ErrUnsupported)
}

func (h *HF) addSplit(pattern, field string) error {
	for _, f := range jsRegexFixes {
		pattern = strings.ReplaceAll(pattern, f.from, f.to)
	}
	// ECMAScript|Unicode gives \s the JavaScript meaning (U+0085 is not a space, U+FEFF is),
	// as in the reference; Hugging Face's Rust tokenizers differ on those two code points only.
	re, err := regexp2.Compile(pattern, regexp2.ECMAScript|regexp2.Unicode)
	if err != nil {
		return fmt.Errorf("%s: compile %q: %w", field, pattern, err)
	}
	h.splits = append(h.splits, re)
	return nil
}

// parseMerges accepts both serialisations: ["a b", ...] (tokenizers < 0.20) and [["a", "b"], ...].
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err == nil {
		return pairs, nil
	}
	var lines []string
	if err := json.Unmarshal(raw, &lines); err != nil {
		return nil, fmt.Errorf("model.merges: want [[a, b], ...] or [\"a b\", ...]: %w", err)
	}
	pairs = make([][2]string, len(lines))
	for i, l := range lines {
		a, b, ok := strings.Cut(l, " ")
		if !ok {
			return nil, fmt.Errorf("model.merges[%d] %q: want two tokens separated by a space", i, l)
		}
		pairs[i] = [2]string{a, b}
	}
	return pairs, nil
}

// byteLevelRune is GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the
// other 68 bytes are spelled U+0100 + n in byte order.
var byteLevelRune, runeByte = func() ([256]rune, map[rune]byte) {
	var br [256]rune
	rb := make(map[rune]byte, 256)
	n := rune(0)
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			br[b] = rune(b)
		} else {
			br[b] = 256 + n
			n++
		}
		rb[br[b]] = byte(b)
	}
	return br, rb
}()

// fromByteLevel turns a token spelled in the byte-level alphabet back into its raw bytes.
func fromByteLevel(tok string) (string, bool) {
	var sb strings.Builder
	sb.Grow(len(tok))
	for _, r := range tok {
		b, ok := runeByte[r]
		if !ok {
			return "", false
		}
		sb.WriteByte(b)
	}
	return sb.String(), true
}

// Name returns the path the tokenizer was loaded from.
func (h *HF) Name() string { return h.name }

// Encode returns the token ids of text.
func (h *HF) Encode(text string) []int {
	ids := make([]int, 0, len(text)/3+1)
	h.encode(text, func(_, _ int, toks []int32) {
		for _, t := range toks {
			ids = append(ids, int(t))
		}
	})
	return ids
}

// Count returns len(Encode(text)).
func (h *HF) Count(text string) int {
	n := 0
	h.encode(text, func(_, _ int, toks []int32) { n += len(toks) })
	return n
}

// Decode returns the text of ids; unknown ids are skipped. Bytes that do not form valid UTF-8
// (a cut inside a character) are replaced by U+FFFD, as the reference does.
func (h *HF) Decode(ids []int) string {
	var sb strings.Builder
	for _, id := range ids {
		if id >= 0 && id < len(h.pieces) {
			sb.WriteString(h.pieces[id])
		}
	}
	return strings.ToValidUTF8(sb.String(), "\uFFFD")
}

// TokenEnds returns the text as tokenized (NFC-normalized when the tokenizer normalizes) and the
// byte offset in it where each token ends. Tokens that end inside a UTF-8 character share the
// offset of the character's end.
func (h *HF) TokenEnds(text string) (string, []int) {
	text = h.prepare(text)
	var ends []int
	h.encode(text, func(start, _ int, toks []int32) {
		end := start
		for _, t := range toks {
			end += len(h.pieces[t])
			ends = append(ends, min(max(end, 0), len(text)))
		}
	})
	snapEnds(text, ends)
	return text, ends
}

// prepare makes text valid UTF-8 (as a JSON request body carries it) and normalizes it.
func (h *HF) prepare(text string) string {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	if h.nfc && !norm.NFC.IsNormalString(text) {
		text = norm.NFC.String(text)
	}
	return text
}

// encode calls emit with the byte span [start, end) of each added token or pre-token of the
// prepared text and its ids (a span that carries ByteLevel's added prefix space starts one byte
// early). Offsets are into the text as normalized section by section, which is
// the prepared text whenever normalization does not change across a section boundary.
func (h *HF) encode(text string, emit func(start, end int, ids []int32)) {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	var one [1]int32
	start := 0      // start of the pending section
	rstrip := false // the previous added token strips whitespace on its right
	for i := 0; i < len(text); {
		if !h.addedFirst[text[i]] {
			i++
			continue
		}
		a, ok := h.addedAt(text, i)
		if !ok {
			i++
			continue
		}
		sec := text[start:i]
		off := start
		if rstrip {
			trimmed := strings.TrimLeftFunc(sec, unicode.IsSpace)
			off += len(sec) - len(trimmed)
			sec = trimmed
		}
		if a.lstrip {
			sec = strings.TrimRightFunc(sec, unicode.IsSpace)
		}
		h.encodeSection(sec, off, emit)
		one[0] = a.id
		emit(i, i+len(a.content), one[:])
		i += len(a.content)
		start, rstrip = i, a.rstrip
	}
	sec := text[start:]
	off := start
	if rstrip {
		trimmed := strings.TrimLeftFunc(sec, unicode.IsSpace)
		off += len(sec) - len(trimmed)
		sec = trimmed
	}
	h.encodeSection(sec, off, emit)
}

// addedAt returns the longest added token that starts at text[i:].
func (h *HF) addedAt(text string, i int) (addedToken, bool) {
	for _, a := range h.added {
		if strings.HasPrefix(text[i:], a.content) {
			return a, true
		}
	}
	return addedToken{}, false
}

// encodeSection normalizes, pre-tokenizes and encodes text between added tokens.
func (h *HF) encodeSection(sec string, off int, emit func(start, end int, ids []int32)) {
	if sec == "" {
		return
	}
	if h.nfc && !norm.NFC.IsNormalString(sec) {
		sec = norm.NFC.String(sec)
	}
	if h.prefixSpace && sec[0] != ' ' {
		// The added space is part of the first pre-token but not of the text: that span starts
		// one byte early (at -1 for the text's first section), so its tokens' lengths add up.
		sec = " " + sec
		off--
	}
	h.split(sec, 0, func(s, e int) {
		emit(off+s, off+e, h.word(sec[s:e]))
	})
}

// split calls f with the spans of sec that Split pre-tokenizers number level.. produce: the
// matches of the regex and the text between them, in order (behaviour Isolated).
func (h *HF) split(sec string, level int, f func(s, e int)) {
	if level == len(h.splits) {
		f(0, len(sec))
		return
	}
	sub := func(s, e int) {
		if level+1 == len(h.splits) {
			f(s, e)
			return
		}
		h.split(sec[s:e], level+1, func(s2, e2 int) { f(s+s2, s+e2) })
	}
	idx, err := h.splits[level].FindAllStringIndex(sec, -1)
	if err != nil { // only a match timeout, which is not set: keep the section whole
		sub(0, len(sec))
		return
	}
	prev := 0
	for _, m := range idx {
		if m[0] > prev {
			sub(prev, m[0])
		}
		if m[1] > m[0] {
			sub(m[0], m[1])
		}
		prev = m[1]
	}
	if prev < len(sec) {
		sub(prev, len(sec))
	}
}

// word returns the ids of one pre-token (raw bytes), from the cache when it was seen before.
// The returned slice must not be modified.
func (h *HF) word(w string) []int32 {
	h.mu.RLock()
	ids, ok := h.cache[w]
	h.mu.RUnlock()
	if ok {
		return ids
	}
	ids = h.bpeWord(w)
	if len(w) <= cacheLen {
		h.mu.Lock()
		if len(h.cache) >= cacheWords {
			clear(h.cache)
		}
		h.cache[strings.Clone(w)] = ids
		h.mu.Unlock()
	}
	return ids
}

func (h *HF) bpeWord(w string) []int32 {
	if h.ignoreMerges {
		if id, ok := h.vocab[w]; ok {
			return []int32{id}
		}
	}
	ids := make([]int32, 0, len(w))
	for i := 0; i < len(w); i++ {
		if id := h.byteID[w[i]]; id >= 0 { // a byte missing from the vocabulary is dropped
			ids = append(ids, id)
		}
	}
	return slices.Clip(bpe(h.merges, ids))
}
