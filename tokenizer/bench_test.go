package tokenizer

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user+system CPU time. Benchmarks report tokens per CPU second too:
// on a shared machine the wall-clock rate mostly measures the other processes.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportRate reports tokens/s (wall clock) and tokens/cpu-s for b.N encodings of n tokens.
func reportRate(b *testing.B, n int, cpu time.Duration) {
	total := float64(n) * float64(b.N)
	b.ReportMetric(total/b.Elapsed().Seconds(), "tokens/s")
	b.ReportMetric(total/cpu.Seconds(), "tokens/cpu-s")
}

// benchText is about 64 KiB of varied English, code, numbers and other scripts: the fixture's
// strings joined, repeated.
func benchText(b *testing.B) string {
	b.Helper()
	rows := readFixture(b, "testdata/qwen3_ids.jsonl")
	var sb strings.Builder
	for sb.Len() < 64<<10 {
		for _, r := range rows {
			sb.WriteString(r.Text)
			sb.WriteByte(' ')
		}
	}
	return sb.String()
}

// benchEncode reports tokens/s of Encode over benchText. The pre-token cache is warm after the
// first iteration, as it is when replay cuts many prompts from one corpus.
func benchEncode(b *testing.B, tok Tokenizer) {
	text := benchText(b)
	n := len(tok.Encode(text))
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	cpu := cpuTime(b)
	for b.Loop() {
		tok.Encode(text)
	}
	reportRate(b, n, cpuTime(b)-cpu)
}

func BenchmarkEncodeQwen3(b *testing.B) { benchEncode(b, qwen3(b)) }

// BenchmarkEncodeQwen3Cold empties the pre-token cache before every run: the cost of text never
// seen before.
func BenchmarkEncodeQwen3Cold(b *testing.B) {
	tok := qwen3(b)
	text := benchText(b)
	n := len(tok.Encode(text))
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	cpu := cpuTime(b)
	for b.Loop() {
		tok.mu.Lock()
		clear(tok.cache)
		tok.mu.Unlock()
		tok.Encode(text)
	}
	reportRate(b, n, cpuTime(b)-cpu)
}

func BenchmarkEncodeO200k(b *testing.B) {
	tok, err := LoadTiktoken("o200k_base")
	if err != nil {
		b.Fatal(err)
	}
	benchEncode(b, tok)
}

func BenchmarkEncodeCl100k(b *testing.B) {
	tok, err := LoadTiktoken("cl100k_base")
	if err != nil {
		b.Fatal(err)
	}
	benchEncode(b, tok)
}

// BenchmarkCut cuts a 1,024-token prompt from a long corpus, as replay's synthetic workload does.
func BenchmarkCut(b *testing.B) {
	corpus := strings.Repeat(benchText(b), 4)
	for _, name := range []string{"qwen3", "o200k_base"} {
		b.Run(name, func(b *testing.B) {
			var tok Tokenizer
			if name == "qwen3" {
				tok = qwen3(b)
			} else {
				var err error
				if tok, err = LoadTiktoken(name); err != nil {
					b.Fatal(err)
				}
			}
			cpu := cpuTime(b)
			for b.Loop() {
				if _, ok := Cut(tok, corpus, 1024); !ok {
					b.Fatal("Cut found no 1,024-token prefix")
				}
			}
			b.ReportMetric(float64((cpuTime(b)-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkLoadQwen3 is the start-up cost of reading Qwen 3's 11 MB tokenizer.json.
func BenchmarkLoadQwen3(b *testing.B) {
	qwen3(b)
	root, err := moduleRoot()
	if err != nil {
		b.Fatal(err)
	}
	path := root + "/.cache/tokenizer/qwen3-3.7.2-tokenizer.json"
	if _, err := os.Stat(path); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := LoadHF(path); err != nil {
			b.Fatal(err)
		}
	}
}
