package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/goccy/go-yaml"

	"github.com/wirebench/wirebench/sim"
)

// SimCmd serves the built-in OpenAI-compatible streaming server. Its flags are sim.Config's
// fields (the struct tags there).
type SimCmd struct {
	ConfigFile    simConfigFile `name:"config" help:"YAML or JSON file of flag values, keyed by flag name (max-num-seqs: 8). Flags given on the command line win." type:"path" placeholder:"FILE"`
	ExitWithStdin bool          `name:"exit-with-stdin" help:"Stop when standard input ends (its writer closed it or died): for a program that starts the simulator as its child and may be killed without stopping it."`
	sim.Config    `embed:""`
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

// config is the simulator's configuration: the flags, with --lora parsed.
func (c *SimCmd) config() (sim.Config, error) {
	cfg := c.Config
	cfg.LoRA = nil
	for _, f := range c.LoRAFlags {
		a, err := sim.ParseAdapter(f)
		if err != nil {
			return sim.Config{}, err
		}
		cfg.LoRA = append(cfg.LoRA, a)
	}
	return cfg, nil
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
	if c.ExitWithStdin {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			log.Info("standard input ended: stopping (--exit-with-stdin)")
			cancel()
		}()
	}
	ln, err := sim.Listen(ctx, c.Listen, c.ListenBacklog)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	fmt.Fprintf(os.Stdout, "http://%s\n", ln.Addr())
	log.Info("sim listening", "url", "http://"+ln.Addr().String(), "models", c.Models, "lora", c.LoRAFlags, "mode", c.Mode,
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
