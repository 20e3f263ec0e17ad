package replay

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/wirebench/wirebench/tokenizer"
)

// BenchmarkPlan3M plans the large case: 5,000 QPS × 600 s Poisson (3 million requests)
// of 64-token synthetic prompts, written to Parquet. Run with -benchtime=1x and
// /usr/bin/time -v for the peak RSS.
func BenchmarkPlan3M(b *testing.B) {
	dir := b.TempDir()
	cfg := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(cfg, []byte(`
seed: 7
target: {url: "http://127.0.0.1:8000", model: sim, ignore_eos: true}
load:
  stages:
    - {rate: 5000, duration: 600s, arrival: poisson}
workload:
  synthetic:
    input: {kind: fixed, value: 64}
    output: {kind: fixed, value: 16}
`), 0o644); err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	for b.Loop() {
		out := filepath.Join(dir, "run")
		if err := Run(context.Background(), Options{ConfigPath: cfg, Out: out, Force: true}, log); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(3e6*float64(b.N)/b.Elapsed().Seconds(), "requests/s")
}

// BenchmarkTextGen cuts one 256-token prompt from the corpus.
func BenchmarkTextGen(b *testing.B) {
	for _, name := range []string{"whitespace", "o200k_base"} {
		b.Run(name, func(b *testing.B) {
			tok, err := tokenizer.Load(name)
			if err != nil {
				b.Fatal(err)
			}
			g := newTextGen(tok)
			i := 0
			for b.Loop() {
				g.at(i*7919%g.positions(), 256)
				i++
			}
		})
	}
}
