package tokenizer_test

import (
	"fmt"

	"github.com/wirebench/wirebench/tokenizer"
)

func ExampleLoad() {
	tok, err := tokenizer.Load("cl100k_base")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(tok.Encode("hello world"), tok.Count("hello world"))
	// Output: [15339 1917] 2
}

func ExampleCut() {
	tok, err := tokenizer.Load("o200k_base")
	if err != nil {
		fmt.Println(err)
		return
	}
	prompt, ok := tokenizer.Cut(tok, "The quick brown fox jumps over the lazy dog.", 4)
	fmt.Printf("%q %v %d\n", prompt, ok, tok.Count(prompt))
	// Output: "The quick brown fox" true 4
}
