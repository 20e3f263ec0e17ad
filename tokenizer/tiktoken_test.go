package tokenizer

import (
	"slices"
	"testing"
)

func TestTiktoken(t *testing.T) {
	for _, tc := range []struct {
		enc, in string
		want    []int
	}{
		// Ids as given by OpenAI's tiktoken.
		{"o200k_base", "hello world", []int{24912, 2375}},
		{"o200k_base", "hello  world", []int{24912, 220, 2375}},
		{"cl100k_base", "hello world", []int{15339, 1917}},
		{"cl100k_base", "hello   world", []int{15339, 256, 1917}},
		{"cl100k_base", "", []int{}},
	} {
		tok, err := LoadTiktoken(tc.enc)
		if err != nil {
			t.Fatal(err)
		}
		got := tok.Encode(tc.in)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s Encode(%q) = %v; want %v", tc.enc, tc.in, got, tc.want)
		}
		if n := tok.Count(tc.in); n != len(tc.want) {
			t.Errorf("%s Count(%q) = %d; want %d", tc.enc, tc.in, n, len(tc.want))
		}
		if s := tok.Decode(got); s != tc.in {
			t.Errorf("%s Decode(%v) = %q; want %q", tc.enc, got, s, tc.in)
		}
	}
}

func TestTiktokenRoundTrip(t *testing.T) {
	rows := readFixture(t, "testdata/qwen3_ids.jsonl") // only its varied strings
	for _, enc := range tiktokenNames {
		tok, err := LoadTiktoken(enc)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			ids := tok.Encode(r.Text)
			if got := tok.Decode(ids); got != r.Text {
				t.Errorf("%s Decode(Encode(%q)) = %q", enc, r.Text, got)
			}
			if n := tok.Count(r.Text); n != len(ids) {
				t.Errorf("%s Count(%q) = %d; want %d", enc, r.Text, n, len(ids))
			}
			s, ends := tok.TokenEnds(r.Text)
			if s != r.Text || len(ends) != len(ids) || (len(ends) > 0 && ends[len(ends)-1] != len(s)) {
				t.Errorf("%s TokenEnds(%q) = %q, %v; want the text and %d ends, the last %d", enc, r.Text, s, ends, len(ids), len(s))
			}
		}
	}
}

func TestLoadTiktokenUnknown(t *testing.T) {
	if _, err := LoadTiktoken("r50k_base"); err == nil {
		t.Error("LoadTiktoken(r50k_base) = nil error; want unknown encoding")
	}
}
