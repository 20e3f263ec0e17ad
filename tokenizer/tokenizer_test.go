package tokenizer

import "testing"

func TestCountWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"   ", 0},
		{"hello", 1},
		{" hello  world\n", 2},
		{"a\tb\nc d", 4},
		{"héllo wörld ünïcode", 3},
	} {
		if got := CountWords(tc.in); got != tc.want {
			t.Errorf("CountWords(%q) = %d; want %d", tc.in, got, tc.want)
		}
	}
}
