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
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Config holds every setting of the simulator. `wirebench sim` embeds it: its flags are these
// fields (kong's name, help, default and enum tags; --lora, a list of NAME:OFFSET in LoRAFlags,
// is parsed by the command into LoRA), and DefaultConfig reads the same default tags.
type Config struct {
	// Listen is the address `wirebench sim` listens on (loopback by default). Serve ignores it:
	// the caller passes the listener.
	Listen string `help:"Address to listen on (loopback by default; the base URL is printed first on stdout)." default:"127.0.0.1:8000"`
	// Models are the model names served; the first is the default in /v1/models.
	Models []string `name:"model" help:"Model name(s) served; requests for other models get 404 with an OpenAI error." default:"sim"`
	// LoRAFlags is --lora as given, NAME:OFFSET each (ParseAdapter); `wirebench sim` parses it
	// into LoRA. It is declared here so that --lora follows --model in the help. Serve ignores it.
	LoRAFlags []string `name:"lora" help:"LoRA adapters of the first --model, each NAME:OFFSET (e.g. sql:+5ms), served under NAME (as vLLM serves --lora-modules) with OFFSET added to each of its sequences' prefill (fixed mode: TTFT + OFFSET)." placeholder:"NAME:OFFSET"`
	// LoRA are adapters of the first model, each served under its own name (as vLLM serves
	// --lora-modules) with its own extra time before the first token (Adapter.Offset).
	LoRA []Adapter `kong:"-"`

	// Mode is "engine" (batching model), "fixed" (per-sequence TTFT/ITL) or "" (fixed when TTFT > 0).
	Mode string `help:"Timing model: engine (continuous batching), fixed (every sequence TTFT then ITL), or empty: fixed when --ttft > 0." enum:",engine,fixed" default:""`
	// MaxNumSeqs bounds the running sequences; the rest wait FIFO. 0 = unlimited.
	MaxNumSeqs int `help:"Most sequences running at once; the rest wait FIFO (queue time). 0 = unlimited." default:"256"`
	// PrefillBase and PrefillPerToken give a new sequence's prefill cost (engine mode).
	PrefillBase     time.Duration `help:"Engine mode: fixed cost of a new sequence's prefill." default:"2ms"`
	PrefillPerToken time.Duration `help:"Engine mode: prefill cost per prompt token not found in the prefix cache." default:"20us"`
	// BlockSize is the prefix-cache block size in tokens; PrefixCacheBlocks the LRU capacity in
	// blocks (0 disables the cache).
	BlockSize         int `help:"Prefix cache block size in tokens." default:"16"`
	PrefixCacheBlocks int `help:"Prefix cache capacity in blocks (LRU, at most 4194304); 0 disables it." default:"4096"`
	// ITL is the decode step per token at batch size 0 (engine) or the fixed inter-token gap.
	ITL time.Duration `name:"itl" help:"Decode step per token at batch size 0 (engine mode), or the fixed inter-token gap (fixed mode)." default:"10ms"`
	// BatchSlowdown stretches a decode step by (1 + BatchSlowdown × running) in engine mode.
	BatchSlowdown float64 `help:"Engine mode: a decode step lasts itl × (1 + batch-slowdown × running)." default:"0.01"`
	// TokensPerChunk is K: decode steps yield K tokens per sequence in one chunk (as speculative
	// decoding does); the token rate is unchanged.
	TokensPerChunk int `help:"Tokens per streamed chunk after the first (speculative decoding); the token rate is unchanged." default:"1"`
	// TTFT is the fixed time from admission to the first token (fixed mode).
	TTFT time.Duration `name:"ttft" help:"Fixed mode: time from admission to the first token; > 0 selects fixed mode unless --mode says otherwise." default:"0s"`

	// DefaultMaxTokens is used when a request has no max_tokens.
	DefaultMaxTokens int `help:"Output tokens when a request sets no max_tokens." default:"256"`
	// MaxModelLen bounds prompt + max_tokens; beyond it a request gets 400, as vLLM does.
	MaxModelLen int `help:"Largest prompt + max_tokens; longer requests get 400 as in vLLM." default:"32768"`

	// StampLead makes the writer take a chunk's send time, then wait StampLead before writing
	// it: a known delay between the reported sent_ns and the wire (for calibration tests).
	StampLead time.Duration `help:"Take each chunk's send time, then wait this long before writing it: a known delay between the reported sent_ns and the wire (calibration tests)." default:"0s"`
	// CoalesceTail writes every event the engine has published since the previous write in
	// one write, so the last content event goes out with the finish chunk, the usage chunk,
	// the x-sim comment and data: [DONE] (the old behaviour, for tests of how a client bounds
	// the arrival of events that share a read). Off: every SSE event has its own write, as
	// vLLM and uvicorn do.
	CoalesceTail bool `help:"Write the events ready at once in one write, the last content event with the finish and usage chunks, the x-sim comment and [DONE] (the old behaviour, for tests of upper-bound arrival times). Off: every SSE event has its own write, as from vLLM and uvicorn."`

	// ReasoningTokens: chat, responses and messages answers begin with
	// min(ReasoningTokens, limit − 1) reasoning tokens (limit: the request's output limit, which
	// they count against, as OpenAI's max_completion_tokens and Anthropic's max_tokens do).
	// Completions never reason. 0: no reasoning.
	ReasoningTokens int `help:"Chat, responses and messages answers begin with min(N, limit - 1) reasoning tokens (counted in the output limit and the usage; completions never reason)." default:"0"`
	// ReasoningField names the chat delta field of reasoning tokens: "reasoning_content" (vLLM's
	// long-standing name, the default when empty) or "reasoning" (newer vLLM).
	ReasoningField string `help:"Chat delta field of reasoning tokens: reasoning_content (vLLM's long-standing name) or reasoning (newer vLLM)." enum:"reasoning_content,reasoning" default:"reasoning_content"`
	// ImageTokens is the prompt tokens of every image in a request (chat image_url parts,
	// responses input_image parts, messages image blocks); images are not fetched or decoded.
	ImageTokens int `help:"Prompt tokens of every image part (chat image_url, responses input_image, messages image); images are not fetched or decoded." default:"576"`
	// EmbeddingDim is the length of the vectors /v1/embeddings returns when the request has no
	// dimensions (0: the default, 384).
	EmbeddingDim int `help:"Length of the vectors /v1/embeddings returns when the request has no dimensions (at most 65536)." default:"384"`

	// Fault rates (probabilities 0..1 per request, summing to at most 1). The request header
	// x-sim-fault forces one: 429, 500, 503, stall, drop, malformed, slow-headers.
	Fault429         float64 `name:"fault-429" help:"Rate (0..1) of requests answered 429 before streaming." default:"0"`
	Fault500         float64 `name:"fault-500" help:"Rate (0..1) of requests answered 500 before streaming." default:"0"`
	Fault503         float64 `name:"fault-503" help:"Rate (0..1) of requests answered 503 before streaming." default:"0"`
	FaultStall       float64 `help:"Rate (0..1) of streams that pause for --stall halfway through." default:"0"`
	FaultDrop        float64 `help:"Rate (0..1) of streams whose connection is dropped halfway through." default:"0"`
	FaultMalformed   float64 `help:"Rate (0..1) of streams with malformed SSE halfway through (an event with cut JSON, one event without its blank line)." default:"0"`
	FaultSlowHeaders float64 `help:"Rate (0..1) of requests whose response headers come --slow-headers late." default:"0"`
	// FaultSeed seeds the fault draws (same seed and request order, same faults).
	FaultSeed int64 `help:"Seed of the fault draws." default:"1"`
	// Stall is how long a stall fault pauses mid-stream; SlowHeaders how long a slow-headers
	// fault delays the response headers.
	Stall       time.Duration `help:"Length of a stall fault." default:"1s"`
	SlowHeaders time.Duration `help:"Delay of a slow-headers fault." default:"1s"`

	// ShutdownGrace is how long Serve lets in-flight streams finish after its context ends
	// before it closes their connections.
	ShutdownGrace time.Duration `help:"On SIGINT/SIGTERM, how long in-flight streams may finish before their connections are closed." default:"3s"`

	// Saturation: a server that runs out of CPU, or accepts slowly, instead of one that is
	// limited by its model alone.

	// CPUPerRequest is CPU work done by the goroutine serving a generation request once the
	// request is read and decoded, before it reaches the engine and before any response byte
	// (a real server's request handling: validation, templating, tokenization). The work
	// consumes this much CPU time of its thread (Linux; elsewhere wall time), so on a busy
	// machine it takes longer. The engine's clock (queue_ns, the TTFT histograms) starts after
	// it. 0: none.
	CPUPerRequest time.Duration `name:"cpu-per-request" help:"Saturation: CPU time each generation request burns on its own goroutine after it is read and before it reaches the engine or any response byte leaves (request handling, tokenization). Runs on the simulator's CPUs, competing with a client on the same machine." default:"0s"`
	// CPUPerToken is the same work per output token, done before the write of each chunk that
	// carries tokens (detokenization and rendering); the chunk's send stamp is taken after it.
	CPUPerToken time.Duration `name:"cpu-per-token" help:"Saturation: CPU time burnt per output token before the write of the chunk that carries it (detokenization, rendering)." default:"0s"`
	// ListenBacklog is the listen socket's accept-queue length for Listen (0: the system's,
	// net.core.somaxconn, as net.Listen). Linux caps it at net.core.somaxconn and admits one
	// more connection than it; a SYN that finds the queue full is dropped and the client
	// retransmits it 1 s, 3 s, 7 s ... later. Serve ignores it: Listen applies it.
	ListenBacklog int `name:"listen-backlog" help:"Length of the listen socket's accept queue; 0 = the system's (net.core.somaxconn, which also caps it). A full queue drops SYNs: clients retransmit them after 1 s, 3 s, 7 s." default:"0"`
	// AcceptPace makes Serve accept at most one connection every AcceptPace (a slow accept
	// loop); the others wait in the accept queue. 0: unthrottled.
	AcceptPace time.Duration `name:"accept-pace" help:"Accept at most one connection every D (a slow accept loop); 0 = unthrottled." default:"0s"`
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

// DefaultConfig returns the defaults of `wirebench sim`, a small, quick engine: the default
// tags of Config's fields, which are also the flags' defaults (kong reads the tags).
func DefaultConfig() Config {
	var c Config
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		if def := v.Type().Field(i).Tag.Get("default"); def != "" {
			if err := setDefault(v.Field(i), def); err != nil {
				panic(fmt.Sprintf("sim.Config.%s: default %q: %v", v.Type().Field(i).Name, def, err))
			}
		}
	}
	return c
}

// setDefault sets f from its default tag, as kong parses the flag's value.
func setDefault(f reflect.Value, def string) error {
	var err error
	switch f.Interface().(type) {
	case time.Duration:
		var d time.Duration
		d, err = time.ParseDuration(def)
		f.SetInt(int64(d))
	case string:
		f.SetString(def)
	case []string:
		f.Set(reflect.ValueOf(strings.Split(def, ",")))
	case int, int64:
		var n int64
		n, err = strconv.ParseInt(def, 10, 64)
		f.SetInt(n)
	case float64:
		var x float64
		x, err = strconv.ParseFloat(def, 64)
		f.SetFloat(x)
	default:
		err = fmt.Errorf("type %s has no default parser", f.Type())
	}
	return err
}

// reasoningContent is vLLM's long-standing name of the reasoning delta field.
const reasoningContent = "reasoning_content"

// fixed reports whether the configuration selects fixed mode.
func (c *Config) fixed() bool { return c.Mode == "fixed" || (c.Mode == "" && c.TTFT > 0) }

// Validate checks the configuration and names the first bad field.
func (c *Config) Validate() error {
	var p problems
	c.validateNames(&p)
	c.validateEngine(&p)
	c.validateAnswers(&p)
	c.validateFaults(&p)
	return errors.Join(p...)
}

// problems collects Validate's errors, each naming its flag.
type problems []error

func (p *problems) bad(field, format string, a ...any) {
	*p = append(*p, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, a...)))
}

// validateNames checks the model and adapter names: at least one model, none empty or twice.
func (c *Config) validateNames(p *problems) {
	bad := p.bad
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
}

// validateEngine checks the timing model: mode, durations, sizes.
func (c *Config) validateEngine(p *problems) {
	bad := p.bad
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
	if c.PrefixCacheBlocks < 0 || c.PrefixCacheBlocks > maxPrefixCacheBlocks {
		bad("prefix-cache-blocks", "%d is not in [0, %d]", c.PrefixCacheBlocks, maxPrefixCacheBlocks)
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
}

// validateAnswers checks what the answers hold: reasoning, image tokens, embeddings.
func (c *Config) validateAnswers(p *problems) {
	bad := p.bad
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
	if c.EmbeddingDim < 0 || c.EmbeddingDim > maxEmbedDims {
		bad("embedding-dim", "%d is not in [0, %d]", c.EmbeddingDim, maxEmbedDims)
	}
}

// validateFaults checks the fault rates: each in [0, 1], their sum at most 1.
func (c *Config) validateFaults(p *problems) {
	bad := p.bad
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
}
