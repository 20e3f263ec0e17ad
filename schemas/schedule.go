package schemas

// ScheduleRequest is one row of schedule/requests.parquet: one planned request, written by
// replay before any traffic and executed by capture. Rows are ordered by seq, and seq increases
// with planned_offset_ns inside an open-loop stage.
type ScheduleRequest struct {
	Seq             int64  `parquet:"seq,delta" doc:"request number in the run, unique across workers and hosts"`
	Stage           int32  `parquet:"stage" doc:"stage index into manifest.json stages"`
	Warmup          bool   `parquet:"warmup" doc:"sent but left out of metrics by default"`
	PlannedOffsetNs int64  `parquet:"planned_offset_ns,delta" doc:"duration from the run start to the planned send time; for closed-loop stages and later conversation turns, the stage start (the send waits on the previous request)"`
	User            int32  `parquet:"user" doc:"closed-loop user id inside the stage; -1 for open-loop requests"`
	ThinkNs         int64  `parquet:"think_ns" doc:"duration to wait after the previous request of the same user or conversation ends; 0 for open loop"`
	Conversation    int64  `parquet:"conversation" doc:"conversation id for multi-turn workloads; -1 otherwise"`
	Turn            int32  `parquet:"turn" doc:"turn number inside the conversation, from 0"`
	DependsOn       int64  `parquet:"depends_on" doc:"seq of the request whose answer this one carries and must follow; -1 for none"`
	PromptID        int64  `parquet:"prompt_id" doc:"key into schedule/prompts.parquet"`
	InputTokens     int32  `parquet:"input_tokens" doc:"prompt length in tokens of the configured tokenizer (excluding earlier turns' answers)"`
	MaxTokens       int32  `parquet:"max_tokens" doc:"max_tokens sent with the request (output tokens asked for)"`
	PrefixGroup     int32  `parquet:"prefix_group" doc:"shared-prefix group or trace prefix id; -1 when none"`
	Source          string `parquet:"source,dict" doc:"where the request came from: synthetic, shared_prefix, conversations, dataset, trace, run"`
}

// Prompt is one row of schedule/prompts.parquet: a prompt body, stored once and referenced by
// prompt_id, so capture never builds text or tokenizes on its send path.
type Prompt struct {
	PromptID     int64  `parquet:"prompt_id,delta" doc:"prompt key referenced by schedule requests"`
	InputTokens  int32  `parquet:"input_tokens" doc:"length of the prompt in tokens of the configured tokenizer"`
	Text         string `parquet:"text" doc:"prompt text (completions API) or the last user message (chat API)"`
	MessagesJSON string `parquet:"messages_json" doc:"for chat: the JSON array of earlier messages that precede text (system prompt, earlier turns); empty when none"`
}
