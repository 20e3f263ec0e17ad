package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/alecthomas/kong"
	"github.com/goccy/go-yaml"

	"github.com/wirebench/wirebench/sim"
)

// SimCmd serves the built-in OpenAI-compatible streaming server.
type SimCmd struct {
	Config simConfigFile `help:"YAML or JSON file of flag values, keyed by flag name (max-num-seqs: 8). Flags given on the command line win." type:"path" placeholder:"FILE"`
	Listen string        `help:"Address to listen on (loopback by default; the base URL is printed first on stdout)." default:"127.0.0.1:8000"`
	Model  []string      `help:"Model name(s) served; requests for other models get 404 with an OpenAI error." default:"sim"`
	LoRA   []string      `name:"lora" help:"LoRA adapters of the first --model, each NAME:OFFSET (e.g. sql:+5ms), served under NAME (as vLLM serves --lora-modules) with OFFSET added to each of its sequences' prefill (fixed mode: TTFT + OFFSET)." placeholder:"NAME:OFFSET"`

	Mode              string        `help:"Timing model: engine (continuous batching), fixed (every sequence TTFT then ITL), or empty: fixed when --ttft > 0." enum:",engine,fixed" default:""`
	MaxNumSeqs        int           `help:"Most sequences running at once; the rest wait FIFO (queue time). 0 = unlimited." default:"256"`
	PrefillBase       time.Duration `help:"Engine mode: fixed cost of a new sequence's prefill." default:"2ms"`
	PrefillPerToken   time.Duration `help:"Engine mode: prefill cost per prompt token not found in the prefix cache." default:"20us"`
	BlockSize         int           `help:"Prefix cache block size in tokens." default:"16"`
	PrefixCacheBlocks int           `help:"Prefix cache capacity in blocks (LRU); 0 disables it." default:"4096"`
	ITL               time.Duration `name:"itl" help:"Decode step per token at batch size 0 (engine mode), or the fixed inter-token gap (fixed mode)." default:"10ms"`
	BatchSlowdown     float64       `help:"Engine mode: a decode step lasts itl × (1 + batch-slowdown × running)." default:"0.01"`
	TokensPerChunk    int           `help:"Tokens per streamed chunk after the first (speculative decoding); the token rate is unchanged." default:"1"`
	TTFT              time.Duration `name:"ttft" help:"Fixed mode: time from admission to the first token; > 0 selects fixed mode unless --mode says otherwise." default:"0s"`
	DefaultMaxTokens  int           `help:"Output tokens when a request sets no max_tokens." default:"256"`
	MaxModelLen       int           `help:"Largest prompt + max_tokens; longer requests get 400 as in vLLM." default:"32768"`
	StampLead         time.Duration `help:"Take each chunk's send time, then wait this long before writing it: a known delay between the reported sent_ns and the wire (calibration tests)." default:"0s"`
	CoalesceTail      bool          `help:"Write the events ready at once in one write, the last content event with the finish and usage chunks, the x-sim comment and [DONE] (the old behaviour, for tests of upper-bound arrival times). Off: every SSE event has its own write, as from vLLM and uvicorn."`

	ReasoningTokens int    `help:"Chat, responses and messages answers begin with min(N, limit - 1) reasoning tokens (counted in the output limit and the usage; completions never reason)." default:"0"`
	ReasoningField  string `help:"Chat delta field of reasoning tokens: reasoning_content (vLLM's long-standing name) or reasoning (newer vLLM)." enum:"reasoning_content,reasoning" default:"reasoning_content"`
	ImageTokens     int    `help:"Prompt tokens of every image part (chat image_url, responses input_image, messages image); images are not fetched or decoded." default:"576"`
	EmbeddingDim    int    `help:"Length of the vectors /v1/embeddings returns when the request has no dimensions." default:"384"`

	Fault429         float64       `name:"fault-429" help:"Rate (0..1) of requests answered 429 before streaming." default:"0"`
	Fault500         float64       `name:"fault-500" help:"Rate (0..1) of requests answered 500 before streaming." default:"0"`
	Fault503         float64       `name:"fault-503" help:"Rate (0..1) of requests answered 503 before streaming." default:"0"`
	FaultStall       float64       `help:"Rate (0..1) of streams that pause for --stall halfway through." default:"0"`
	FaultDrop        float64       `help:"Rate (0..1) of streams whose connection is dropped halfway through." default:"0"`
	FaultMalformed   float64       `help:"Rate (0..1) of streams with malformed SSE halfway through (an event with cut JSON, one event without its blank line)." default:"0"`
	FaultSlowHeaders float64       `help:"Rate (0..1) of requests whose response headers come --slow-headers late." default:"0"`
	FaultSeed        int64         `help:"Seed of the fault draws." default:"1"`
	Stall            time.Duration `help:"Length of a stall fault." default:"1s"`
	SlowHeaders      time.Duration `help:"Delay of a slow-headers fault." default:"1s"`
	ShutdownGrace    time.Duration `help:"On SIGINT/SIGTERM, how long in-flight streams may finish before their connections are closed." default:"3s"`

	CPUPerRequest time.Duration `name:"cpu-per-request" help:"Saturation: CPU time each generation request burns on its own goroutine after it is read and before it reaches the engine or any response byte leaves (request handling, tokenization). Runs on the simulator's CPUs, competing with a client on the same machine." default:"0s"`
	CPUPerToken   time.Duration `name:"cpu-per-token" help:"Saturation: CPU time burnt per output token before the write of the chunk that carries it (detokenization, rendering)." default:"0s"`
	ListenBacklog int           `name:"listen-backlog" help:"Length of the listen socket's accept queue; 0 = the system's (net.core.somaxconn, which also caps it). A full queue drops SYNs: clients retransmit them after 1 s, 3 s, 7 s." default:"0"`
	AcceptPace    time.Duration `name:"accept-pace" help:"Accept at most one connection every D (a slow accept loop); 0 = unthrottled." default:"0s"`
}

// Help is shown under `wirebench sim --help`.
func (c *SimCmd) Help() string {
	return `Serves POST /v1/completions and /v1/chat/completions (streaming SSE and JSON), /v1/responses
(OpenAI Responses) and /v1/messages (Anthropic Messages) (streaming typed SSE events and JSON),
/v1/embeddings, /v1/rerank, /v1/score (vLLM) and /rerank (TEI) (JSON), GET /v1/models, /health
and /metrics (vLLM metric names). Every request may force a fault with the header x-sim-fault:
429|500|503|stall|drop|malformed|slow-headers.

Reasoning: --reasoning-tokens N starts every chat, responses and messages answer with N
reasoning tokens (reasoning_content/reasoning deltas, reasoning_text deltas, a thinking block).
Tools: a request with tools gets one call of the first tool, its arguments {"text":"<words>"}
streamed as the answer's tokens. Images: --image-tokens prompt tokens each. Embeddings: one
engine sequence per request, ready after its prefill (fixed mode: TTFT). Rerank and score: one
sequence of every (query, document) pair, ready after its prefill (fixed mode: TTFT for the
first document, then one ITL per further document).

Token counting: a token is a maximal run of non-space characters (prompt: all message
contents); output token i is a word from a fixed list followed by a space, so usage is exact.

Ground truth: every stream ends with the SSE comment
  : x-sim {"queue_ns":Q,"prefill_ns":P,"decode_ns":D,"sent_ns":[t0,t1,...],"sent_end_ns":[e0,e1,...],"model":M}
just before its terminal event (data: [DONE], response.completed, message_stop); sent_ns is
time.Now().UnixNano() (CLOCK_REALTIME) taken just before writing each event carrying tokens,
sent_end_ns just after that write returned (on loopback the event arrives between the two), M
the model (or adapter) that served it. Non-streaming responses carry x-sim-queue-ns,
x-sim-prefill-ns, x-sim-decode-ns, x-sim-sent-ns and x-sim-model headers.`
}

func (c *SimCmd) config() (sim.Config, error) {
	var lora []sim.Adapter
	for _, f := range c.LoRA {
		a, err := sim.ParseAdapter(f)
		if err != nil {
			return sim.Config{}, err
		}
		lora = append(lora, a)
	}
	return sim.Config{
		LoRA:   lora,
		Listen: c.Listen, Models: c.Model, Mode: c.Mode, MaxNumSeqs: c.MaxNumSeqs,
		PrefillBase: c.PrefillBase, PrefillPerToken: c.PrefillPerToken, BlockSize: c.BlockSize,
		PrefixCacheBlocks: c.PrefixCacheBlocks, ITL: c.ITL, BatchSlowdown: c.BatchSlowdown,
		TokensPerChunk: c.TokensPerChunk, TTFT: c.TTFT, DefaultMaxTokens: c.DefaultMaxTokens,
		MaxModelLen: c.MaxModelLen, StampLead: c.StampLead, CoalesceTail: c.CoalesceTail,
		ReasoningTokens: c.ReasoningTokens, ReasoningField: c.ReasoningField, ImageTokens: c.ImageTokens,
		EmbeddingDim: c.EmbeddingDim,
		Fault429:     c.Fault429, Fault500: c.Fault500, Fault503: c.Fault503, FaultStall: c.FaultStall,
		FaultDrop: c.FaultDrop, FaultMalformed: c.FaultMalformed, FaultSlowHeaders: c.FaultSlowHeaders,
		FaultSeed: c.FaultSeed, Stall: c.Stall, SlowHeaders: c.SlowHeaders, ShutdownGrace: c.ShutdownGrace,
		CPUPerRequest: c.CPUPerRequest, CPUPerToken: c.CPUPerToken, ListenBacklog: c.ListenBacklog,
		AcceptPace: c.AcceptPace,
	}, nil
}

func (c *SimCmd) Run(ctx context.Context, log *slog.Logger) error {
	var srv *sim.Server
	cfg, err := c.config()
	if err == nil {
		srv, err = sim.New(cfg, log)
	}
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	defer srv.Close()
	ln, err := sim.Listen(ctx, c.Listen, c.ListenBacklog)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	fmt.Fprintf(os.Stdout, "http://%s\n", ln.Addr())
	log.Info("sim listening", "url", "http://"+ln.Addr().String(), "models", c.Model, "lora", c.LoRA, "mode", c.Mode,
		"max_num_seqs", c.MaxNumSeqs, "itl", c.ITL, "ttft", c.TTFT)
	if c.CPUPerRequest > 0 || c.CPUPerToken > 0 || c.ListenBacklog > 0 || c.AcceptPace > 0 {
		log.Info("sim saturation", "cpu_per_request", c.CPUPerRequest, "cpu_per_token", c.CPUPerToken,
			"listen_backlog", c.ListenBacklog, "accept_pace", c.AcceptPace)
	}
	if lim := sim.SomaxConn(); lim > 0 && c.ListenBacklog > lim {
		log.Warn("listen backlog capped by the kernel", "listen_backlog", c.ListenBacklog, "net.core.somaxconn", lim)
	}
	if err := srv.Serve(ctx, ln); err != nil {
		return err
	}
	log.Info("sim stopped")
	return nil
}

// simConfigFile is --config: before flags are resolved it loads the file and adds a resolver,
// so values come from the command line first, then the file, then the defaults.
type simConfigFile string

func (f simConfigFile) BeforeResolve(k *kong.Kong, kctx *kong.Context, trace *kong.Path) error {
	path := string(kctx.FlagValue(trace.Flag).(simConfigFile))
	if path == "" {
		return nil
	}
	values, err := loadFlagFile(path)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, fl := range kctx.Flags() {
		known[fl.Name] = true
	}
	var unknown []string
	for key := range values {
		if !known[key] || key == "config" {
			unknown = append(unknown, key)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("%s: unknown key(s) %s (keys are flag names, e.g. max-num-seqs)", path, strings.Join(unknown, ", "))
	}
	kctx.AddResolver(kong.ResolverFunc(func(_ *kong.Context, _ *kong.Path, fl *kong.Flag) (any, error) {
		v, ok := values[fl.Name]
		if !ok {
			return nil, nil
		}
		return v, nil
	}))
	return nil
}

// loadFlagFile reads a YAML or JSON object of flag values; keys may use - or _. Values are
// turned into the strings the flags would take (lists joined with commas).
func loadFlagFile(path string) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make(map[string]any, len(raw))
	for k, v := range raw {
		key := strings.ReplaceAll(k, "_", "-")
		switch x := v.(type) {
		case nil:
			return nil, fmt.Errorf("%s: %s: empty value", path, k)
		case []any:
			parts := make([]string, len(x))
			for i, p := range x {
				parts[i] = fmt.Sprint(p)
			}
			out[key] = strings.Join(parts, ",")
		case map[string]any:
			return nil, fmt.Errorf("%s: %s: want a value, not a mapping", path, k)
		default:
			out[key] = fmt.Sprint(x)
		}
	}
	if len(raw) == 0 && len(strings.TrimSpace(string(data))) > 0 {
		return nil, errors.New(path + ": want a mapping of flag names to values")
	}
	return out, nil
}
