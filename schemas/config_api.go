package schemas

// MessageAPI reports whether the API takes a list of messages (chat, responses, messages).
func MessageAPI(api string) bool { return api == "chat" || api == "responses" || api == "messages" }

// RankAPI reports whether the API ranks documents against a query (rerank, score, tei_rerank):
// one whole JSON answer with a score per document, no output tokens.
func RankAPI(api string) bool { return api == "rerank" || api == "score" || api == "tei_rerank" }

// OutputAPI reports whether the API generates output tokens: every API but embeddings and the
// ranking APIs, which need no output length in the workload.
func OutputAPI(api string) bool { return api != "embeddings" && !RankAPI(api) }

// FixedBodyKey reports whether wirebench sets the request body key k itself for api (tools:
// workload.tools is set), so target.extra_body may not.
func FixedBodyKey(api string, tools bool, k string) bool {
	switch k {
	case "model", "stream", "max_tokens", "prompt", "messages":
		return true
	case "input":
		return api == "responses" || api == "embeddings"
	case "max_output_tokens":
		return api == "responses"
	case "system":
		return api == "messages"
	case "tools", "tool_choice":
		return tools
	case "query", "documents", "top_n":
		return api == "rerank" || (k == "query" && api == "tei_rerank")
	case "texts":
		return api == "tei_rerank"
	case "text_1", "text_2":
		return api == "score"
	}
	return false
}
