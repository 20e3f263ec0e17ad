package schemas

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// Config is the whole run configuration (YAML). The resolved config is stored as JSON in
// manifest.json, where capture, aggregate and report read the parts they need. Secrets are
// never stored: the API key is named by an environment variable, other secrets redacted
// (Target.Redacted).
type Config struct {
	Name      string         `yaml:"name" json:"name,omitempty"`
	Seed      int64          `yaml:"seed" json:"seed"`
	Target    Target         `yaml:"target" json:"target"`
	Load      Load           `yaml:"load" json:"load"`
	Workload  Workload       `yaml:"workload" json:"workload"`
	Tokenizer string         `yaml:"tokenizer" json:"tokenizer,omitempty"`
	SLO       SLO            `yaml:"slo" json:"slo"`
	Bias      Bias           `yaml:"bias" json:"bias"`
	Capture   CaptureOptions `yaml:"capture" json:"capture"`
	Search    Search         `yaml:"search" json:"search,omitzero"` // read by `wirebench search` only
}

// Target is the server under test. Headers are extra request headers, where ${NAME} in a value
// is the environment variable NAME where capture runs; APIKeyEnv names the variable holding the
// API key (Authorization: Bearer; x-api-key for the messages API). The manifest keeps neither a
// credential header's value nor a URL's user:password (Target.Redacted), only ${NAME}.
type Target struct {
	URL       string            `yaml:"url" json:"url"`                   // base URL, e.g. http://127.0.0.1:8000
	API       string            `yaml:"api" json:"api"`                   // completions or chat
	Model     string            `yaml:"model" json:"model,omitempty"`     // empty: discovered from /v1/models by replay
	Models    []TargetModel     `yaml:"models" json:"models,omitempty"`   // instead of model: a seeded weighted mix (TargetModel)
	Headers   map[string]string `yaml:"headers" json:"headers,omitempty"` // extra request headers
	APIKeyEnv string            `yaml:"api_key_env" json:"api_key_env,omitempty"`
	IgnoreEOS bool              `yaml:"ignore_eos" json:"ignore_eos,omitempty"`
	// Timeout bounds each whole request (error kind timeout); absent = 30m, 0 = none (a long
	// generation can take many minutes). TTFTTimeout ends a request whose response body has not
	// begun this long after its send, however far its headers have come (error kind
	// ttft_timeout; 0 = 10m), GapTimeout one whose headers or body have begun and then had no
	// byte for this long (gap_timeout; 0 = 60s): a stalled or dripping answer cannot hang the
	// benchmark. A cut request keeps its partial chunks and counts as a goodput miss; its
	// connection is closed. To turn TTFTTimeout or GapTimeout off, give a long value (e.g. 24h).
	// ConnectTimeout bounds each dial, TCP connect and TLS handshake (error kind connect; 0 =
	// 10s); the SYN retransmissions are bounded to match (TCP_SYNCNT).
	Timeout        *Duration `yaml:"timeout" json:"timeout,omitempty"`
	TTFTTimeout    Duration  `yaml:"ttft_timeout" json:"ttft_timeout,omitempty"`
	GapTimeout     Duration  `yaml:"gap_timeout" json:"gap_timeout,omitempty"`
	ConnectTimeout Duration  `yaml:"connect_timeout" json:"connect_timeout,omitempty"`
	// MaxTokens is the max_tokens policy: MaxTokensWorkload (default) or MaxTokensNone.
	MaxTokens  string         `yaml:"max_tokens" json:"max_tokens,omitempty"`
	ExtraBody  map[string]any `yaml:"extra_body" json:"extra_body,omitempty"`
	MetricsURL string         `yaml:"metrics_url" json:"metrics_url,omitempty"` // Prometheus endpoint to scrape
	TLS        TargetTLS      `yaml:"tls" json:"tls,omitzero"`                  // https: CAs, server name, client certificate
	// URLs are several endpoints of one model (replicas without a load balancer in front);
	// replay picks each request's endpoint (schedule endpoint) by Pick: round_robin (default; by
	// weight, smooth weighted round robin: exact shares, no seed) or random (a seeded draw by
	// weight). Every endpoint gets its own connection pool and the same headers and TLS options;
	// URL is then the first one (model discovery, the co-location check).
	URLs []Endpoint `yaml:"urls" json:"urls,omitempty"`
	Pick string     `yaml:"pick" json:"pick,omitempty"`
}

// Endpoint is one entry of target.urls: a base URL and its share of the requests.
type Endpoint struct {
	URL    string  `yaml:"url" json:"url"`
	Weight float64 `yaml:"weight" json:"weight,omitempty"` // > 0; absent = 1
}

// Endpoints returns the base URLs requests go to, by schedule endpoint index: target.urls, or
// target.url alone.
func (t Target) Endpoints() []string {
	if len(t.URLs) == 0 {
		return []string{t.URL}
	}
	out := make([]string, len(t.URLs))
	for i, e := range t.URLs {
		out[i] = e.URL
	}
	return out
}

// TargetModel is one model of target.models: replay draws each request's model by weight from
// the seed (a conversation's turns share their first turn's) and records it in the schedule.
// Weight is its share of the requests relative to the others' (0 = 1). LoRA names an adapter of the base model Name, as the server serves it:
// vLLM serves each --lora-modules NAME=PATH under NAME, so the request's model field carries
// LoRA and Name only labels it (the report shows "LoRA (LoRA of Name)").
type TargetModel struct {
	Name   string  `yaml:"name" json:"name"`
	Weight float64 `yaml:"weight" json:"weight,omitempty"`
	LoRA   string  `yaml:"lora" json:"lora,omitempty"`
}

// Sent is the model field of the model's requests: the adapter for a LoRA, else Name.
func (m TargetModel) Sent() string {
	if m.LoRA != "" {
		return m.LoRA
	}
	return m.Name
}

// Mix returns the models the target's requests go to: target.models, else target.model alone
// with weight 1 (nil when neither is set).
func (t *Target) Mix() []TargetModel {
	if len(t.Models) > 0 {
		return t.Models
	}
	if t.Model == "" {
		return nil
	}
	return []TargetModel{{Name: t.Model, Weight: 1}}
}

// SLO holds latency limits for goodput; zero means no limit.
type SLO struct {
	TTFT  Duration `yaml:"ttft" json:"ttft,omitempty"`
	TPOT  Duration `yaml:"tpot" json:"tpot,omitempty"`
	ITL   Duration `yaml:"itl" json:"itl,omitempty"` // limit on each request's largest inter-chunk gap
	NTPOT Duration `yaml:"ntpot" json:"ntpot,omitempty"`
	E2E   Duration `yaml:"e2e" json:"e2e,omitempty"`
}

// Bias sets how aggregate judges the client's own measurement error. Zero fields take the
// defaults of WithDefaults.
type Bias struct {
	// Tolerance and ToleranceShare: a stage is client-bound when the bound of one of its judged
	// latency percentiles (p50, p90, p99 of TTFT, TPOT, ITL, E2E, NTPOT) is wider than
	// max(Tolerance, ToleranceShare × the percentile). Defaults 500us and 0.01: half a
	// millisecond is below what any LLM serving decision turns on, 1% below run-to-run noise.
	Tolerance      Duration `yaml:"tolerance" json:"tolerance,omitempty"`
	ToleranceShare float64  `yaml:"tolerance_share" json:"tolerance_share,omitempty"`
	// StampAllowance is how long before its kernel receive timestamp an exact event may have
	// reached the host: the software timestamp is taken when the packet enters the network stack,
	// after the NIC's interrupt moderation (loopback: none). Default 20us; on a real NIC set it to
	// the adapter's rx-usecs (ethtool -c) plus a few µs. calibrate reports the loopback figure.
	StampAllowance Duration `yaml:"stamp_allowance" json:"stamp_allowance,omitempty"`
}

// Default bias settings.
const (
	DefaultTolerance      = Duration(500 * time.Microsecond)
	DefaultToleranceShare = 0.01
	DefaultStampAllowance = Duration(20 * time.Microsecond)
)

// WithDefaults returns b with its zero fields set to the defaults.
func (b Bias) WithDefaults() Bias {
	if b.Tolerance == 0 {
		b.Tolerance = DefaultTolerance
	}
	if b.ToleranceShare == 0 {
		b.ToleranceShare = DefaultToleranceShare
	}
	if b.StampAllowance == 0 {
		b.StampAllowance = DefaultStampAllowance
	}
	return b
}

// CaptureOptions are read by capture from the manifest; capture's flags override them. Each is
// the flag's option (capture.Options, or capture.Config.Workers) of the same JSON key, resolved
// in one place: capture's resolve, whose test fails on a key it does not take.
type CaptureOptions struct {
	Workers        int      `yaml:"workers" json:"workers,omitempty"`                 // 0 = the CPUs this process may use
	Connections    int      `yaml:"connections" json:"connections,omitempty"`         // warm connections per worker
	Shards         int      `yaml:"shards" json:"shards,omitempty"`                   // hosts sharing the schedule (capture --shard i/n); 0 = 1
	MaxInflight    int      `yaml:"max_inflight" json:"max_inflight,omitempty"`       // per worker; 0 = unlimited
	MaxConnections int      `yaml:"max_connections" json:"max_connections,omitempty"` // per worker; 0 = what the open-files limit allows
	KeepText       bool     `yaml:"keep_text" json:"keep_text,omitempty"`             // store generated text in raw requests
	DrainTimeout   Duration `yaml:"drain_timeout" json:"drain_timeout,omitempty"`     // wait for in-flight requests after Ctrl-C
	PartRows       int      `yaml:"part_rows" json:"part_rows,omitempty"`             // roll shard parts after this many chunk rows
	PartInterval   Duration `yaml:"part_interval" json:"part_interval,omitempty"`     // ... or after this long
	MemoryBudget   Bytes    `yaml:"memory_budget" json:"memory_budget,omitempty"`     // per worker: response state of the requests in flight; 0 = 256MiB
}

// Duration is a time.Duration written as "250ms", "5s" in YAML and JSON.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if _, nerr := strconv.ParseFloat(string(b), 64); err != nil && nerr == nil {
		return fmt.Errorf("invalid duration %q: a number needs a unit (%ss, %sms, %sm)", b, b, b, b)
	}
	if err != nil {
		return fmt.Errorf("invalid duration %q (want e.g. 250ms, 5s, 2m)", b)
	}
	*d = Duration(v)
	return nil
}

// UnmarshalYAML decodes a YAML scalar and reports a bad value with its line and column.
func (d *Duration) UnmarshalYAML(node ast.Node) error {
	tk := node.GetToken()
	err := d.UnmarshalText([]byte(tk.Value))
	if err != nil {
		return &PositionError{Line: tk.Position.Line, Col: tk.Position.Column, Msg: err.Error()}
	}
	return nil
}

// PositionError is a config error at a known place in the YAML file.
type PositionError struct {
	Line, Col int
	Msg       string
}

func (e *PositionError) Error() string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg) }

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("invalid duration %s: %w", b, err)
	}
	return d.UnmarshalText([]byte(s))
}
