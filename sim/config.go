// Package sim is wirebench's built-in OpenAI-compatible streaming server. It behaves like a
// continuous-batching engine (vLLM's scheduler: at most MaxNumSeqs sequences run, the rest wait
// FIFO; one decode step emits one token to every running sequence), reports its own per-request
// timings as ground truth, injects faults on demand, and costs little CPU so that it is never the
// bottleneck of the measurement it serves.
//
// Timing model (engine mode, the default):
//
//	prefill(seq)  = PrefillBase + uncached_prompt_tokens × PrefillPerToken
//	step duration = TokensPerChunk × ITL × (1 + BatchSlowdown × running) + Σ prefill(admitted this step)
//
// At the end of each step every running sequence gets its next chunk (its first chunk holds one
// token, later chunks TokensPerChunk tokens). Prompt tokens found in the prefix cache (blocks of
// BlockSize tokens, LRU of PrefixCacheBlocks blocks) cost nothing.
//
// Fixed mode (TTFT > 0 or Mode "fixed"): every sequence runs on its own timeline: first chunk
// TTFT after admission, then one chunk every TokensPerChunk × ITL, whatever else runs;
// MaxNumSeqs still bounds how many run, so queueing is exact and predictable.
//
// Tokens are counted with tokenizer.CountWords (a token is a maximal run of non-space
// characters); each generated token is one word from a fixed list followed by a space, so the
// usage the server returns is exact for that tokenizer.
package sim

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Config holds every setting of the simulator; the CLI flags map one to one onto it.
type Config struct {
	// Listen is the address `wirebench sim` listens on (loopback by default). Serve ignores it:
	// the caller passes the listener.
	Listen string
	// Models are the model names served; the first is the default in /v1/models.
	Models []string
	// LoRA are adapters of the first model, each served under its own name (as vLLM serves
	// --lora-modules) with its own extra time before the first token (Adapter.Offset).
	LoRA []Adapter

	// Mode is "engine" (batching model), "fixed" (per-sequence TTFT/ITL) or "" (fixed when TTFT > 0).
	Mode string
	// MaxNumSeqs bounds the running sequences; the rest wait FIFO. 0 = unlimited.
	MaxNumSeqs int
	// PrefillBase and PrefillPerToken give a new sequence's prefill cost (engine mode).
	PrefillBase     time.Duration
	PrefillPerToken time.Duration
	// BlockSize is the prefix-cache block size in tokens; PrefixCacheBlocks the LRU capacity in
	// blocks (0 disables the cache).
	BlockSize         int
	PrefixCacheBlocks int
	// ITL is the decode step per token at batch size 0 (engine) or the fixed inter-token gap.
	ITL time.Duration
	// BatchSlowdown stretches a decode step by (1 + BatchSlowdown × running) in engine mode.
	BatchSlowdown float64
	// TokensPerChunk is K: decode steps yield K tokens per sequence in one chunk (as speculative
	// decoding does); the token rate is unchanged.
	TokensPerChunk int
	// TTFT is the fixed time from admission to the first token (fixed mode).
	TTFT time.Duration

	// DefaultMaxTokens is used when a request has no max_tokens.
	DefaultMaxTokens int
	// MaxModelLen bounds prompt + max_tokens; beyond it a request gets 400, as vLLM does.
	MaxModelLen int

	// ReasoningTokens: chat, responses and messages answers begin with
	// min(ReasoningTokens, limit − 1) reasoning tokens (limit: the request's output limit, which
	// they count against, as OpenAI's max_completion_tokens and Anthropic's max_tokens do).
	// Completions never reason. 0: no reasoning.
	ReasoningTokens int
	// ReasoningField names the chat delta field of reasoning tokens: "reasoning_content" (vLLM's
	// long-standing name, the default when empty) or "reasoning" (newer vLLM).
	ReasoningField string
	// ImageTokens is the prompt tokens of every image in a request (chat image_url parts,
	// responses input_image parts, messages image blocks); images are not fetched or decoded.
	ImageTokens int
	// EmbeddingDim is the length of the vectors /v1/embeddings returns when the request has no
	// dimensions (0: the default, 384).
	EmbeddingDim int

	// StampLead makes the writer take a chunk's send time, then wait StampLead before writing
	// it: a known delay between the reported sent_ns and the wire (for calibration tests).
	StampLead time.Duration
	// CoalesceTail writes every event the engine has published since the previous write in
	// one write, so the last content event goes out with the finish chunk, the usage chunk,
	// the x-sim comment and data: [DONE] (the old behaviour, for tests of how a client bounds
	// the arrival of events that share a read). Off: every SSE event has its own write, as
	// vLLM and uvicorn do.
	CoalesceTail bool

	// Fault rates (probabilities 0..1 per request, summing to at most 1). The request header
	// x-sim-fault forces one: 429, 500, 503, stall, drop, malformed, slow-headers.
	Fault429         float64
	Fault500         float64
	Fault503         float64
	FaultStall       float64
	FaultDrop        float64
	FaultMalformed   float64
	FaultSlowHeaders float64
	// FaultSeed seeds the fault draws (same seed and request order, same faults).
	FaultSeed int64
	// Stall is how long a stall fault pauses mid-stream; SlowHeaders how long a slow-headers
	// fault delays the response headers.
	Stall       time.Duration
	SlowHeaders time.Duration

	// ShutdownGrace is how long Serve lets in-flight streams finish after its context ends
	// before it closes their connections.
	ShutdownGrace time.Duration

	// Saturation: a server that runs out of CPU, or accepts slowly, instead of one that is
	// limited by its model alone.

	// CPUPerRequest is CPU work done by the goroutine serving a generation request once the
	// request is read and decoded, before it reaches the engine and before any response byte
	// (a real server's request handling: validation, templating, tokenization). The work
	// consumes this much CPU time of its thread (Linux; elsewhere wall time), so on a busy
	// machine it takes longer. The engine's clock (queue_ns, the TTFT histograms) starts after
	// it. 0: none.
	CPUPerRequest time.Duration
	// CPUPerToken is the same work per output token, done before the write of each chunk that
	// carries tokens (detokenization and rendering); the chunk's send stamp is taken after it.
	CPUPerToken time.Duration
	// ListenBacklog is the listen socket's accept-queue length for Listen (0: the system's,
	// net.core.somaxconn, as net.Listen). Linux caps it at net.core.somaxconn and admits one
	// more connection than it; a SYN that finds the queue full is dropped and the client
	// retransmits it 1 s, 3 s, 7 s ... later. Serve ignores it: Listen applies it.
	ListenBacklog int
	// AcceptPace makes Serve accept at most one connection every AcceptPace (a slow accept
	// loop); the others wait in the accept queue. 0: unthrottled.
	AcceptPace time.Duration
}

// Adapter is a LoRA adapter the simulator serves. Offset is added to each of its sequences'
// prefill: in fixed mode the first token comes TTFT + Offset after admission; in engine mode
// the sequence's prefill cost grows by Offset, so the step that admits it (and every sequence
// in that step) lasts that much longer, as an adapter's extra compute would.
type Adapter struct {
	Name   string
	Offset time.Duration
}

// ParseAdapter parses an adapter flag NAME:OFFSET (e.g. sql:+5ms; OFFSET a Go duration, a
// leading + allowed; NAME alone: offset 0).
func ParseAdapter(s string) (Adapter, error) {
	name, off, found := strings.Cut(s, ":")
	a := Adapter{Name: name}
	if name == "" {
		return a, fmt.Errorf("lora %q: want NAME:OFFSET, e.g. sql:+5ms", s)
	}
	if found {
		d, err := time.ParseDuration(strings.TrimPrefix(off, "+"))
		if err != nil {
			return a, fmt.Errorf("lora %q: offset: %w", s, err)
		}
		a.Offset = d
	}
	return a, nil
}

// DefaultConfig returns the defaults of `wirebench sim`: a small, quick engine.
func DefaultConfig() Config {
	return Config{
		Listen:            "127.0.0.1:8000",
		Models:            []string{"sim"},
		MaxNumSeqs:        256,
		PrefillBase:       2 * time.Millisecond,
		PrefillPerToken:   20 * time.Microsecond,
		BlockSize:         16,
		PrefixCacheBlocks: 4096,
		ITL:               10 * time.Millisecond,
		BatchSlowdown:     0.01,
		TokensPerChunk:    1,
		DefaultMaxTokens:  256,
		MaxModelLen:       32768,
		ReasoningField:    reasoningContent,
		ImageTokens:       576,
		EmbeddingDim:      384,
		Stall:             time.Second,
		SlowHeaders:       time.Second,
		ShutdownGrace:     3 * time.Second,
	}
}

// reasoningContent is vLLM's long-standing name of the reasoning delta field.
const reasoningContent = "reasoning_content"

// fixed reports whether the configuration selects fixed mode.
func (c *Config) fixed() bool { return c.Mode == "fixed" || (c.Mode == "" && c.TTFT > 0) }

// Validate checks the configuration and names the first bad field.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, a...)))
	}
	if len(c.Models) == 0 {
		bad("model", "at least one model name is required")
	}
	names := map[string]bool{}
	for _, m := range c.Models {
		if m == "" {
			bad("model", "empty model name")
		}
		names[m] = true
	}
	for _, a := range c.LoRA {
		switch {
		case a.Name == "":
			bad("lora", "empty adapter name")
		case names[a.Name]:
			bad("lora", "%q is served twice", a.Name)
		case a.Offset < 0:
			bad("lora", "%s: offset %v is negative", a.Name, a.Offset)
		}
		names[a.Name] = true
	}
	switch c.Mode {
	case "", "engine", "fixed":
	default:
		bad("mode", "%q is not engine or fixed", c.Mode)
	}
	if c.MaxNumSeqs < 0 {
		bad("max-num-seqs", "%d is negative", c.MaxNumSeqs)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"prefill-base", c.PrefillBase}, {"prefill-per-token", c.PrefillPerToken}, {"itl", c.ITL},
		{"ttft", c.TTFT}, {"stamp-lead", c.StampLead}, {"stall", c.Stall},
		{"slow-headers", c.SlowHeaders}, {"shutdown-grace", c.ShutdownGrace},
		{"cpu-per-request", c.CPUPerRequest}, {"cpu-per-token", c.CPUPerToken}, {"accept-pace", c.AcceptPace}} {
		if d.v < 0 {
			bad(d.name, "%v is negative", d.v)
		}
	}
	if c.ListenBacklog < 0 {
		bad("listen-backlog", "%d is negative", c.ListenBacklog)
	}
	if c.BlockSize < 1 {
		bad("block-size", "%d must be at least 1", c.BlockSize)
	}
	if c.PrefixCacheBlocks < 0 {
		bad("prefix-cache-blocks", "%d is negative", c.PrefixCacheBlocks)
	}
	if c.BatchSlowdown < 0 {
		bad("batch-slowdown", "%v is negative", c.BatchSlowdown)
	}
	if c.TokensPerChunk < 1 {
		bad("tokens-per-chunk", "%d must be at least 1", c.TokensPerChunk)
	}
	if c.DefaultMaxTokens < 1 {
		bad("default-max-tokens", "%d must be at least 1", c.DefaultMaxTokens)
	}
	if c.MaxModelLen < 1 {
		bad("max-model-len", "%d must be at least 1", c.MaxModelLen)
	}
	if c.ReasoningTokens < 0 {
		bad("reasoning-tokens", "%d is negative", c.ReasoningTokens)
	}
	switch c.ReasoningField {
	case "", reasoningContent, "reasoning":
	default:
		bad("reasoning-field", "%q is not reasoning_content or reasoning", c.ReasoningField)
	}
	if c.ImageTokens < 0 {
		bad("image-tokens", "%d is negative", c.ImageTokens)
	}
	if c.EmbeddingDim < 0 {
		bad("embedding-dim", "%d is negative", c.EmbeddingDim)
	}
	sum := 0.0
	for _, r := range []struct {
		name string
		v    float64
	}{{"fault-429", c.Fault429}, {"fault-500", c.Fault500}, {"fault-503", c.Fault503},
		{"fault-stall", c.FaultStall}, {"fault-drop", c.FaultDrop},
		{"fault-malformed", c.FaultMalformed}, {"fault-slow-headers", c.FaultSlowHeaders}} {
		if r.v < 0 || r.v > 1 {
			bad(r.name, "rate %v is not in [0, 1]", r.v)
		}
		sum += r.v
	}
	if sum > 1+1e-9 {
		bad("fault-*", "rates sum to %v, more than 1", sum)
	}
	return errors.Join(errs...)
}
