package schemas

// MessageAPI reports whether the API takes a list of messages (chat, responses, messages).
func MessageAPI(api string) bool { return api == "chat" || api == "responses" || api == "messages" }

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
	}
	return false
}
