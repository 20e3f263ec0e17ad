package schemas

// The APIs a target may speak (Target.API).
const (
	APICompletions = "completions" // /v1/completions
	APIChat        = "chat"        // /v1/chat/completions
	APIResponses   = "responses"   // /v1/responses
	APIMessages    = "messages"    // Anthropic /v1/messages
	APIEmbeddings  = "embeddings"  // /v1/embeddings
	APIRerank      = "rerank"      // /v1/rerank
	APIScore       = "score"       // vLLM /v1/score
	APITEIRerank   = "tei_rerank"  // Hugging Face TEI /rerank
)

// How replay picks each request's endpoint among target.urls (Target.Pick).
const (
	PickRoundRobin = "round_robin" // smooth weighted round robin (the default)
	PickRandom     = "random"      // a seeded draw by weight
)

// The max_tokens policies (Target.MaxTokens).
const (
	// MaxTokensWorkload (the default) sends each request's planned output length (schedule
	// max_tokens) as max_tokens.
	MaxTokensWorkload = "workload"
	// MaxTokensNone sends no max_tokens, so the server decides when to stop (the planned length
	// stays in the schedule for reference).
	MaxTokensNone = "none"
)

// MessageAPI reports whether the API takes a list of messages (chat, responses, messages).
func MessageAPI(api string) bool { return api == APIChat || api == APIResponses || api == APIMessages }

// RankAPI reports whether the API ranks documents against a query (rerank, score, tei_rerank):
// one whole JSON answer with a score per document, no output tokens.
func RankAPI(api string) bool { return api == APIRerank || api == APIScore || api == APITEIRerank }

// OutputAPI reports whether the API generates output tokens: every API but embeddings and the
// ranking APIs, which need no output length in the workload.
func OutputAPI(api string) bool { return api != APIEmbeddings && !RankAPI(api) }

// FixedBodyKey reports whether wirebench sets the request body key k itself for api (tools:
// workload.tools is set), so target.extra_body may not.
func FixedBodyKey(api string, tools bool, k string) bool {
	switch k {
	case "model", "stream", "max_tokens", "prompt", "messages":
		return true
	case "input":
		return api == APIResponses || api == APIEmbeddings
	case "max_output_tokens":
		return api == APIResponses
	case "system":
		return api == APIMessages
	case "tools", "tool_choice":
		return tools
	case "query", "documents", "top_n":
		return api == APIRerank || (k == "query" && api == APITEIRerank)
	case "texts":
		return api == APITEIRerank
	case "text_1", "text_2":
		return api == APIScore
	}
	return false
}
