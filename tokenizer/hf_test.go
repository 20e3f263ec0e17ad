package tokenizer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tinyJSON returns a small byte-level BPE tokenizer.json: every byte of "abc .<>x" is a token,
// plus merges a+b, ab+c, Ġ+a (Ġ spells the space byte), and any changes edit applies.
func tinyJSON(t *testing.T, edit func(m map[string]any)) string {
	t.Helper()
	vocab := map[string]int{}
	for _, c := range "abcĠ.<>x" {
		vocab[string(c)] = len(vocab)
	}
	for _, tok := range []string{"ab", "abc", "Ġa", "abd", "d"} {
		vocab[tok] = len(vocab)
	}
	m := map[string]any{
		"added_tokens": []any{
			map[string]any{"id": 100, "content": "<x>", "lstrip": false, "rstrip": true},
			map[string]any{"id": 101, "content": "<x>>", "lstrip": true, "rstrip": false},
		},
		"normalizer":    map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
		"decoder":       map[string]any{"type": "ByteLevel"},
		"model": map[string]any{
			"type":   "BPE",
			"vocab":  vocab,
			"merges": [][]string{{"a", "b"}, {"ab", "c"}, {"Ġ", "a"}},
		},
	}
	if edit != nil {
		edit(m)
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func model(m map[string]any) map[string]any { return m["model"].(map[string]any) }

func TestHFEncode(t *testing.T) {
	// ids in tinyJSON: a0 b1 c2 Ġ3 .4 <5 >6 x7 ab8 abc9 Ġa10 abd11 d12, <x>100 <x>>101
	for _, tc := range []struct {
		name string
		edit func(map[string]any)
		in   string
		want []int
	}{
		{"merges", nil, "abc ac", []int{9, 10, 2}},
		{"merge ranks", nil, " abc", []int{3, 9}}, // a+b (rank 0) before Ġ+a (rank 2)
		{"old merge format", func(m map[string]any) { model(m)["merges"] = []string{"a b", "ab c", "Ġ a"} }, "abc ac", []int{9, 10, 2}},
		{"merge order", nil, "abab.", []int{8, 8, 4}},
		{"byte missing from vocab is dropped", nil, "ab!c", []int{8, 2}},
		{"without ignore_merges", nil, "abd", []int{8, 12}},
		{"ignore_merges", func(m map[string]any) { model(m)["ignore_merges"] = true }, "abd", []int{11}},
		{"added token, rstrip", nil, "a<x>  b", []int{0, 100, 1}},
		{"longest added token, lstrip", nil, "a  <x>>b", []int{0, 101, 1}},
		{"added token prefix only", nil, "<x", []int{5, 7}},
		{"add_prefix_space", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "ByteLevel", "add_prefix_space": true, "use_regex": true}
		}, "ac", []int{10, 2}},
		{"Split then ByteLevel without regex", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{
				map[string]any{"type": "Split", "pattern": map[string]any{"String": "."}, "behavior": "Isolated", "invert": false},
				map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
			}}
		}, "a ac.c", []int{0, 10, 2, 4, 2}},
		{"empty", nil, "", []int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := LoadHF(tinyJSON(t, tc.edit))
			if err != nil {
				t.Fatal(err)
			}
			got := tok.Encode(tc.in)
			if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("Encode(%q) = %v; want %v", tc.in, got, tc.want)
			}
			if n := tok.Count(tc.in); n != len(got) {
				t.Errorf("Count(%q) = %d; want %d", tc.in, n, len(got))
			}
		})
	}
}

func TestHFDecode(t *testing.T) {
	tok, err := LoadHF(tinyJSON(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ids  []int
		want string
	}{
		{[]int{9, 10, 1, 2}, "abc abc"},
		{[]int{0, 100, 1}, "a<x>b"},
		{[]int{0, -1, 5000, 1}, "ab"}, // unknown ids are skipped
		{nil, ""},
	} {
		if got := tok.Decode(tc.ids); got != tc.want {
			t.Errorf("Decode(%v) = %q; want %q", tc.ids, got, tc.want)
		}
	}
}

func TestLoadHFErrors(t *testing.T) {
	for _, tc := range []struct {
		name        string
		edit        func(map[string]any)
		want        string // in the error text
		unsupported bool   // wraps ErrUnsupported
	}{
		{"model type", func(m map[string]any) { model(m)["type"] = "WordPiece" }, `model.type "WordPiece"`, true},
		{"normalizer", func(m map[string]any) { m["normalizer"] = map[string]any{"type": "Lowercase"} }, `normalizer.type "Lowercase"`, true},
		{"nested normalizer", func(m map[string]any) {
			m["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{map[string]any{"type": "NFC"}, map[string]any{"type": "NFKC"}}}
		}, `normalizer.normalizers[1].type "NFKC"`, true},
		{"no ByteLevel", func(m map[string]any) { m["pre_tokenizer"] = map[string]any{"type": "Whitespace"} }, `pre_tokenizer.type "Whitespace"`, true},
		{"Split behaviour", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{
				map[string]any{"type": "Split", "pattern": map[string]any{"Regex": "a"}, "behavior": "Removed"},
				map[string]any{"type": "ByteLevel"},
			}}
		}, `pre_tokenizer.pretokenizers[0].behavior "Removed"`, true},
		{"bad regex", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{
				map[string]any{"type": "Split", "pattern": map[string]any{"Regex": "(a"}, "behavior": "Isolated"},
				map[string]any{"type": "ByteLevel"},
			}}
		}, "pre_tokenizer.pretokenizers[0].pattern.Regex: compile", false},
		{"decoder", func(m map[string]any) { m["decoder"] = map[string]any{"type": "Metaspace"} }, `decoder.type "Metaspace"`, true},
		{"byte fallback", func(m map[string]any) { model(m)["byte_fallback"] = true }, "model.byte_fallback", true},
		{"unknown merge token", func(m map[string]any) { model(m)["merges"] = [][]string{{"a", "q"}} }, `model.merges[0] ["a" "q"]: token not in model.vocab`, false},
		{"bad merge line", func(m map[string]any) { model(m)["merges"] = []string{"ab"} }, `model.merges[0] "ab"`, false},
		{"merges type", func(m map[string]any) { model(m)["merges"] = 7 }, "model.merges: want", false},
		{"vocab outside the alphabet", func(m map[string]any) { model(m)["vocab"] = map[string]int{"a b": 0} }, `model.vocab["a b"]: not in the byte-level alphabet`, false},
		{"empty vocab", func(m map[string]any) { model(m)["vocab"] = map[string]int{} }, "model.vocab: empty", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tinyJSON(t, tc.edit)
			_, err := LoadHF(path)
			if err == nil {
				t.Fatalf("LoadHF = nil error; want one containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("LoadHF error = %q; want it to contain %q and the path", err, tc.want)
			}
			if got := errors.Is(err, ErrUnsupported); got != tc.unsupported {
				t.Errorf("errors.Is(%q, ErrUnsupported) = %v; want %v", err, got, tc.unsupported)
			}
		})
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(bad, []byte(`{"model": {"vocab": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadHF(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("LoadHF(truncated JSON) error = %v; want one naming %s", err, bad)
	}
	if _, err := LoadHF(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadHF(missing) error = %v; want os.ErrNotExist", err)
	}
}

func TestLoad(t *testing.T) {
	path := tinyJSON(t, nil)
	for _, tc := range []struct {
		spec, name string
	}{
		{"", "whitespace"},
		{"whitespace", "whitespace"},
		{"o200k_base", "o200k_base"},
		{"cl100k_base", "cl100k_base"},
		{path, path},
		{filepath.Dir(path), filepath.Join(filepath.Dir(path), "tokenizer.json")}, // a directory
	} {
		tok, err := Load(tc.spec)
		if err != nil {
			t.Errorf("Load(%q) error: %v", tc.spec, err)
			continue
		}
		if tok.Name() != tc.name {
			t.Errorf("Load(%q).Name() = %q; want %q", tc.spec, tok.Name(), tc.name)
		}
	}
	_, err := Load("p50k_base")
	if err == nil || !strings.Contains(err.Error(), `"p50k_base"`) || !strings.Contains(err.Error(), "o200k_base") {
		t.Errorf("Load(p50k_base) error = %v; want one naming the spec and the known names", err)
	}
}
