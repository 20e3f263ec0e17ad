package schemas

// Where a scheduled request came from (ScheduleRequest.Source): the workload section that made it.
const (
	SourceSynthetic     = "synthetic"
	SourceSharedPrefix  = "shared_prefix"
	SourceConversations = "conversations"
	SourceDataset       = "dataset"
	SourceTrace         = "trace"
)

// ScheduleRequest is one row of schedule/requests.parquet: one planned request, written by
// replay before any traffic and executed by capture. Rows are ordered by seq. Stages run back to
// back from the run start. Inside an open-loop stage seq increases with planned_offset_ns, except
// that the turns of a conversation take consecutive seqs after its first turn. In a closed-loop
// stage a user sends its rows in seq order, each when its previous one has ended plus think_ns;
// a closed-loop stage with duration_ns 0 in the manifest ends when its rows are done, and later
// stages then start that much later than planned.
type ScheduleRequest struct {
	Seq             int64  `parquet:"seq,delta" doc:"request number in the run, unique across workers and hosts"`
	Stage           int32  `parquet:"stage" doc:"stage index into manifest.json stages"`
	Warmup          bool   `parquet:"warmup" doc:"sent but left out of metrics by default"`
	PlannedOffsetNs int64  `parquet:"planned_offset_ns,delta" doc:"duration from the run start to the planned send time (open loop); closed loop: the stage start; conversation turn k>0: the earliest time it may go, turn k-1's planned time + think_ns (it also waits for turn k-1's answer + think_ns)"`
	User            int32  `parquet:"user" doc:"closed-loop user id inside the stage; -1 for open-loop requests"`
	ThinkNs         int64  `parquet:"think_ns" doc:"duration to wait after the previous request of the same closed-loop user or conversation ends (0 for a user's first request and for open-loop requests outside conversations)"`
	Conversation    int64  `parquet:"conversation" doc:"conversation id for multi-turn workloads; -1 otherwise"`
	Turn            int32  `parquet:"turn" doc:"turn number inside the conversation, from 0"`
	DependsOn       int64  `parquet:"depends_on" doc:"seq of the request whose answer this one carries and must follow; -1 for none"`
	PromptID        int64  `parquet:"prompt_id" doc:"key into schedule/prompts.parquet"`
	InputTokens     int32  `parquet:"input_tokens" doc:"prompt length in tokens of the configured tokenizer: text plus the contents of messages_json (system prompt, earlier user turns); the server's earlier answers that capture inserts are not counted"`
	MaxTokens       int32  `parquet:"max_tokens" doc:"output tokens asked for: sent as max_tokens (unless target.max_tokens is none)"`
	PrefixGroup     int32  `parquet:"prefix_group" doc:"shared_prefix: the group; mooncake trace: the first hash id (prompts with equal hash ids share those 512-token blocks); -1 when none"`
	Documents       int32  `parquet:"documents" doc:"documents the request carries: rerank, score, tei_rerank: the documents scored against the query; embeddings: its inputs; 0 for the generating APIs"`
	Model           string `parquet:"model,dict" doc:"the request's model field: target.model, or the one drawn from target.models (a LoRA entry's adapter name); the turns of a conversation share their first turn's"`
	Source          string `parquet:"source,dict" doc:"where the request came from: synthetic, shared_prefix, conversations, dataset, trace, run"`
	// CancelAfterTokens and CancelAfterNs: workload.cancel's seeded choice; capture closes the
	// connection at that point (error kind cancelled_by_client).
	CancelAfterTokens int32 `parquet:"cancel_after_tokens" doc:"workload.cancel.after_tokens: the client closes the connection once this many output tokens have arrived (content events; an event's own token count when the server gives one); 0 = not cancelled by tokens"`
	Endpoint          int32 `parquet:"endpoint" doc:"index into target.urls of the endpoint the request goes to (target.pick); 0 with target.url alone"`
	CancelAfterNs     int64 `parquet:"cancel_after_ns" doc:"workload.cancel.after: the client closes the connection this long after it began the request (the watchdog's 10 ms tick: up to that much later); 0 = not cancelled by time"`
}

// Prompt is one row of schedule/prompts.parquet: a prompt body, stored once and referenced by
// prompt_id, so capture never builds text or tokenizes on its send path. prompt_id runs 0, 1, 2,
// ... in row order.
//
// Request bodies: for the completions API, "prompt" is text (messages_json is then empty). For
// the chat API, "messages" is the array in messages_json followed by {"role": "user",
// "content": text}. For conversation turns (schedule conversation >= 0) messages_json holds the
// system prompt, if any, and the earlier user turns in order; capture inserts after each earlier
// user message the server's actual answer to it as {"role": "assistant", "content": ...}. For
// conversations on the completions API messages_json is empty, turn 0's text starts with the
// system prompt, and capture sends turn k as the prompt it sent for turn k-1, that turn's
// answer, "\n\n" and text.
//
// The responses and messages APIs take the same messages as chat (a system message becomes
// Anthropic's "system" field). Images (images_json) go with the last user message as image
// parts. For the embeddings API inputs_json holds the request's batch of inputs and text is
// empty. For the ranking APIs (rerank, score, tei_rerank) text is the query and inputs_json its
// documents.
type Prompt struct {
	PromptID     int64  `parquet:"prompt_id,delta" doc:"prompt key referenced by schedule requests"`
	InputTokens  int32  `parquet:"input_tokens" doc:"length of the prompt in tokens of the configured tokenizer"`
	Text         string `parquet:"text" doc:"the prompt (completions API) or the content of the last user message (chat API)"`
	MessagesJSON string `parquet:"messages_json" doc:"chat, responses and messages APIs: JSON array of {role, content} messages that precede text (system prompt, earlier turns; for conversations only the earlier user turns, capture interleaves the answers); empty when none"`
	ImagesJSON   string `parquet:"images_json" doc:"JSON array of the images sent with text, each an http(s) URL, a data: URL (base64) or a synthetic reference synthetic:FORMAT:WxH:SEED that capture renders into a data: URL (seeded random pixels, the same bytes for the same reference); empty when none"`
	InputsJSON   string `parquet:"inputs_json" doc:"embeddings API: JSON array of the request's input strings (its batch); ranking APIs (rerank, score, tei_rerank): JSON array of the documents scored against the query in text; empty otherwise"`
}
