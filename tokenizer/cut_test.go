package tokenizer

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestCutWhitespace(t *testing.T) {
	for _, tc := range []struct {
		text   string
		n      int
		want   string
		wantOK bool
	}{
		{"one two three", 2, "one two", true},
		{"one two three", 3, "one two three", true},
		{"  one  two  ", 1, "  one", true},
		{"  one  two  ", 2, "  one  two  ", true}, // the end of the text is a boundary too
		{"one two", 3, "", false},                 // too few tokens
		{"one two", 0, "", true},
		{"one", -1, "", false},
		{"", 1, "", false},
		{"héllo wörld", 1, "héllo", true},
	} {
		got, ok := Cut(Whitespace{}, tc.text, tc.n)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("Cut(whitespace, %q, %d) = (%q, %v); want (%q, %v)", tc.text, tc.n, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestCutTiny(t *testing.T) {
	tok, err := LoadHF(tinyJSON(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	// "abc ac" is [abc, Ġa, c]: the boundaries are after "abc", "abc a" and "abc ac".
	for _, tc := range []struct {
		n    int
		want string
	}{
		{1, "abc"},
		{2, "abc a"},
		{3, "abc ac"},
	} {
		if got, ok := Cut(tok, "abc ac", tc.n); got != tc.want || !ok {
			t.Errorf("Cut(tiny, %q, %d) = (%q, %v); want (%q, true)", "abc ac", tc.n, got, ok, tc.want)
		}
	}
}

func TestHFTokenEnds(t *testing.T) {
	spaced := func(m map[string]any) {
		m["pre_tokenizer"] = map[string]any{"type": "ByteLevel", "add_prefix_space": true, "use_regex": true}
	}
	for _, tc := range []struct {
		name string
		edit func(map[string]any)
		in   string
		want []int
	}{
		{"plain", nil, "abc ac", []int{3, 5, 6}},                          // abc, Ġa, c
		{"added token", nil, "a<x> b", []int{1, 4, 6}},                    // a, <x>, b (rstrip drops the space)
		{"prefix space", spaced, "ac", []int{1, 2}},                       // Ġa (the space is not in the text), c
		{"prefix space after added", spaced, "a<x>ac", []int{1, 4, 5, 6}}, // Ġa, <x>, Ġa, c
	} {
		tok, err := LoadHF(tinyJSON(t, tc.edit))
		if err != nil {
			t.Fatal(err)
		}
		if _, got := tok.TokenEnds(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("%s: TokenEnds(%q) = %v; want %v (ids %v)", tc.name, tc.in, got, tc.want, tok.Encode(tc.in))
		}
	}
}

// noEnds hides a tokenizer's TokenEnds, so Cut falls back to decoding prefixes.
type noEnds struct{ Tokenizer }

// TestCutProperties checks Cut on every fixture string and every n against a brute force over
// the token boundaries: Cut must return the longest boundary prefix that re-encodes to exactly n
// tokens, and false when there is none.
func TestCutProperties(t *testing.T) {
	rows := readFixture(t, "testdata/qwen3_ids.jsonl")
	o200k, err := LoadTiktoken("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	toks := []Tokenizer{Whitespace{}, o200k, noEnds{o200k}}
	if testing.Short() {
		t.Log("-short: Qwen 3 left out")
	} else {
		toks = append(toks, qwen3(t))
	}
	for _, tok := range toks {
		_, slow := tok.(noEnds) // its boundaries are found by decoding every prefix
		t.Run(fmt.Sprintf("%T", tok), func(t *testing.T) { testCutProperties(t, tok, rows, slow) })
	}
}

func testCutProperties(t *testing.T, tok Tokenizer, rows []fixtureRow, sample bool) {
	{
		for i, r := range rows {
			s, ends := tokenEnds(tok, r.Text)
			// The brute force is quadratic: a third of the short strings, a few long ones.
			if i%3 != 0 || (len(ends) > 32 && i%30 != 0) || (sample && i%12 != 0) {
				continue
			}
			// longest[n]: the longest boundary prefix with n tokens; the text's end is a boundary.
			longest := map[int]string{0: ""}
			for _, e := range append(ends, len(s)) {
				if c := tok.Count(s[:e]); c > 0 {
					longest[c] = s[:e]
				}
			}
			for n := 0; n <= len(ends)+1; n++ {
				want, wantOK := longest[n]
				got, ok := Cut(tok, r.Text, n)
				if got != want || ok != wantOK {
					t.Errorf("%s: Cut(%q, %d) = (%q, %v); want (%q, %v)", tok.Name(), r.Text, n, got, ok, want, wantOK)
				}
			}
		}
	}
}

func TestCutLongText(t *testing.T) {
	// Only a head of a long text is tokenized, and the result is still exact.
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 20000)
	o200k, err := LoadTiktoken("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 7, 64, 1000} {
		got, ok := Cut(o200k, text, n)
		if !ok || o200k.Count(got) != n || !strings.HasPrefix(text, got) {
			t.Errorf("Cut(o200k, long, %d) = (%.40q..., %v) with %d tokens; want a prefix with %d", n, got, ok, o200k.Count(got), n)
		}
	}
}
