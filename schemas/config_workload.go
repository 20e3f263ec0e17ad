package schemas

// Workload says what is sent: exactly one source (synthetic, shared_prefix, conversations,
// dataset, trace, run), and optionally images, tools, an embeddings batch size and the
// documents of the ranking APIs, which apply to every request of the source.
type Workload struct {
	Synthetic     *Synthetic     `yaml:"synthetic" json:"synthetic,omitempty"`
	SharedPrefix  *SharedPrefix  `yaml:"shared_prefix" json:"shared_prefix,omitempty"`
	Conversations *Conversations `yaml:"conversations" json:"conversations,omitempty"`
	Dataset       *Dataset       `yaml:"dataset" json:"dataset,omitempty"`
	Trace         *Trace         `yaml:"trace" json:"trace,omitempty"`
	Run           *FromRun       `yaml:"run" json:"run,omitempty"`

	Images *Images `yaml:"images" json:"images,omitempty"` // synthetic images with every prompt
	Tools  *Tools  `yaml:"tools" json:"tools,omitempty"`   // tool definitions in every request
	// Batch is the embeddings API's inputs per request (default 1): each request carries that
	// many prompts of the source as its "input" array.
	Batch int `yaml:"batch" json:"batch,omitempty"`
	// Documents are the documents each request of a ranking API (rerank, score, tei_rerank)
	// scores against its query, the source's prompt.
	Documents *Documents `yaml:"documents" json:"documents,omitempty"`
	// Cancel: a seeded share of requests the client closes mid-stream; nil = none.
	Cancel *Cancel `yaml:"cancel" json:"cancel,omitempty"`
}

// Documents shapes the requests of the ranking APIs (target.api rerank, score, tei_rerank): the
// source's prompt is the query, and each request carries count documents (a distribution),
// each of tokens tokens (a distribution, drawn per document), cut from the same corpus as
// synthetic prompts. A jsonl dataset row's own "documents" array wins over them. top_n (rerank
// only; 0 = all) asks the server for the n best documents. A request's input_tokens is the
// tokens a cross-encoder reads: the sum over its documents of query + document tokens.
type Documents struct {
	Count  LengthDist `yaml:"count" json:"count"`
	Tokens LengthDist `yaml:"tokens" json:"tokens"`
	TopN   int        `yaml:"top_n" json:"top_n,omitempty"`
}

// Images adds synthetic images to every request of the workload (chat, responses and messages
// APIs): count images of width × height pixels in format png or jpeg. Replay draws each image
// from a pool of distinct seeded images (default 16) and stores only a reference
// (synthetic:FORMAT:WxH:SEED) in schedule/prompts.parquet; capture renders each distinct
// reference once, into a base64 data: URL, before it sends anything. Pixels are seeded noise, so
// the encoded size is about what a photograph of that size takes (PNG: 3 bytes a pixel; JPEG at
// quality 90: about a byte a pixel) and no two distinct images share bytes (an image cache on
// the server hits only when the pool repeats an image).
type Images struct {
	Count    int    `yaml:"count" json:"count"`
	Width    int    `yaml:"width" json:"width"`
	Height   int    `yaml:"height" json:"height"`
	Format   string `yaml:"format" json:"format,omitempty"`     // png (default) or jpeg (ImagePNG, ImageJPEG)
	Distinct int    `yaml:"distinct" json:"distinct,omitempty"` // pool size; default 16
}

// Tools sends tool (function) definitions with every request (chat, responses and messages
// APIs): count functions named tool_0, tool_1, ..., each taking one string argument "text",
// and tool_choice choice: auto (default), required or none (Anthropic: auto, any, none).
type Tools struct {
	Count  int    `yaml:"count" json:"count"`
	Choice string `yaml:"choice" json:"choice,omitempty"`
}

// Synthetic draws input and output lengths from distributions. Prompt text is cut from a
// built-in public-domain corpus (Newton's Opticks, 1704) at a seeded random word, to exactly the
// drawn number of tokens of the configured tokenizer; with random_tokens each token is drawn at
// random instead (no two prompts share a prefix, so no prefix-cache hits).
type Synthetic struct {
	Input        LengthDist `yaml:"input" json:"input"`
	Output       LengthDist `yaml:"output" json:"output"`
	RandomTokens bool       `yaml:"random_tokens" json:"random_tokens,omitempty"`
}

// Length distribution kinds (LengthDist.Kind).
const (
	DistFixed       = "fixed"
	DistUniform     = "uniform"
	DistNormal      = "normal"
	DistLognormal   = "lognormal"
	DistExponential = "exponential"
	DistEmpirical   = "empirical"
)

// LengthDist is a token-length distribution, clipped to [min, max] (min defaults to 1).
//   - fixed: value
//   - uniform: integers in [min, max]
//   - normal: mean, std
//   - lognormal: mean, std of the lengths themselves (not of their logarithm)
//   - exponential: mean
//   - empirical: file, a CSV histogram with header "tokens,count" (relative to the config file)
type LengthDist struct {
	Kind  string  `yaml:"kind" json:"kind"` // fixed, uniform, normal, lognormal, exponential, empirical
	Value int     `yaml:"value" json:"value,omitempty"`
	Mean  float64 `yaml:"mean" json:"mean,omitempty"`
	Std   float64 `yaml:"std" json:"std,omitempty"`
	Min   int     `yaml:"min" json:"min,omitempty"`
	Max   int     `yaml:"max" json:"max,omitempty"`
	File  string  `yaml:"file" json:"file,omitempty"` // empirical histogram
}

// SharedPrefix is the prefix-cache workload: groups × users_per_group distinct prompts; each is
// its group's shared system prompt of prefix_tokens followed by a question of question_tokens.
// Each request picks one of them at random (seeded). For the chat API the shared prefix is the
// system message; for completions it leads the prompt text.
type SharedPrefix struct {
	Groups         int `yaml:"groups" json:"groups"`
	PrefixTokens   int `yaml:"prefix_tokens" json:"prefix_tokens"`
	UsersPerGroup  int `yaml:"users_per_group" json:"users_per_group"`
	QuestionTokens int `yaml:"question_tokens" json:"question_tokens"`
	OutputTokens   int `yaml:"output_tokens" json:"output_tokens"`
}

// Conversations is the multi-turn workload. In an open-loop stage every arrival starts a
// conversation (rate = new conversations per second); in a closed-loop stage each user holds
// one conversation at a time. Turn k > 0 carries the earlier user turns and the server's actual
// earlier answers (inserted by capture), depends on turn k-1 and waits think_time after it.
type Conversations struct {
	Turns              LengthDist `yaml:"turns" json:"turns"`   // turns per conversation
	Input              LengthDist `yaml:"input" json:"input"`   // tokens of each user turn
	Output             LengthDist `yaml:"output" json:"output"` // output tokens of each answer
	ThinkTime          Duration   `yaml:"think_time" json:"think_time,omitempty"`
	SystemPromptTokens int        `yaml:"system_prompt_tokens" json:"system_prompt_tokens,omitempty"`
}

// Dataset formats (Dataset.Format).
const (
	DatasetShareGPT = "sharegpt"
	DatasetJSONL    = "jsonl"
	DatasetCSV      = "csv"
)

// Dataset reads prompts from a file (relative to the config file):
//   - sharegpt: a JSON array of {"conversations": [{"from": "human"|"gpt", "value": ...}]}; the
//     first human turn is the prompt and its answer's token count is max_tokens; with
//     whole_conversation (chat API) the conversation up to its last answered human turn is sent.
//   - jsonl: one object a line with "prompt" (string) or "messages" ([{role, content}]), an
//     optional "max_tokens" and optional "images" (an array of http(s) URLs, data: URLs or bare
//     base64 image data, sent with the prompt on the chat, responses and messages APIs).
//   - csv: a header row; the prompt_column (default "prompt"), optional max_tokens_column
//     (default "max_tokens") and optional image_column (one image a row, as in jsonl).
//
// Rows outside the token bounds are dropped; the rest are shuffled with the seed and used in
// turn (cycling when the plan has more requests than rows). Rows without max_tokens take it
// from output.
type Dataset struct {
	Format            string      `yaml:"format" json:"format"`
	File              string      `yaml:"file" json:"file"`
	PromptColumn      string      `yaml:"prompt_column" json:"prompt_column,omitempty"`
	MaxTokensColumn   string      `yaml:"max_tokens_column" json:"max_tokens_column,omitempty"`
	ImageColumn       string      `yaml:"image_column" json:"image_column,omitempty"`
	WholeConversation bool        `yaml:"whole_conversation" json:"whole_conversation,omitempty"`
	MinInputTokens    int         `yaml:"min_input_tokens" json:"min_input_tokens,omitempty"`
	MaxInputTokens    int         `yaml:"max_input_tokens" json:"max_input_tokens,omitempty"`
	MinOutputTokens   int         `yaml:"min_output_tokens" json:"min_output_tokens,omitempty"`
	MaxOutputTokens   int         `yaml:"max_output_tokens" json:"max_output_tokens,omitempty"`
	Output            *LengthDist `yaml:"output" json:"output,omitempty"`
}

// Trace formats (Trace.Format).
const (
	TraceAzure    = "azure"
	TraceBurstGPT = "burstgpt"
	TraceMooncake = "mooncake"
)

// Trace replays a timestamped production trace at its own times, as one open-loop stage:
//   - azure: Azure LLM inference trace CSV, TIMESTAMP,ContextTokens,GeneratedTokens
//   - burstgpt: BurstGPT CSV, Timestamp (s),Model,Request tokens,Response tokens,...; rows with
//     0 response tokens (failed in the trace) are skipped
//   - mooncake: JSONL {timestamp (ms), input_length, output_length, hash_ids}; prompts with equal
//     hash ids share those prefix blocks of block_tokens tokens (default 512)
//
// Times are measured from the first kept request. time_scale multiplies them (0.5 = twice as
// fast); rate instead rescales them to that mean rate. start and duration cut a window of the
// trace (in trace time), max_requests caps the count.
type Trace struct {
	Format      string   `yaml:"format" json:"format"`
	File        string   `yaml:"file" json:"file"`
	TimeScale   float64  `yaml:"time_scale" json:"time_scale,omitempty"`
	Rate        float64  `yaml:"rate" json:"rate,omitempty"`
	Start       Duration `yaml:"start" json:"start,omitempty"`
	Duration    Duration `yaml:"duration" json:"duration,omitempty"`
	MaxRequests int      `yaml:"max_requests" json:"max_requests,omitempty"`
	BlockTokens int      `yaml:"block_tokens" json:"block_tokens,omitempty"`
}

// FromRun replays the exact schedule (requests, prompts and stages) of an earlier run directory,
// e.g. to send run A's workload to server B. load must be empty.
type FromRun struct {
	Dir string `yaml:"dir" json:"dir"`
}

// Cancel makes a seeded share of requests end on the client's side mid-stream, as users who
// abandon an answer: replay picks them (schedule cancel_after_tokens or cancel_after_ns) and
// capture closes their connection once after_tokens output tokens have arrived, or after the
// duration after from the request's start. Such a request ends with the error kind
// cancelled_by_client: counted per stage (stages.parquet cancelled), out of every latency figure
// and goodput's denominator. Set exactly one of after_tokens and after.
type Cancel struct {
	Share       float64  `yaml:"share" json:"share"`                         // (0, 1]
	AfterTokens int      `yaml:"after_tokens" json:"after_tokens,omitempty"` // > 0
	After       Duration `yaml:"after" json:"after,omitempty"`               // > 0
}
