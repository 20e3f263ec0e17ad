package replay

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
	"github.com/wirebench/wirebench/tokenizer"
)

func planConfig(t *testing.T, yaml string) ([]schemas.ScheduleRequest, []schemas.Prompt, *schemas.Manifest) {
	t.Helper()
	run := filepath.Join(t.TempDir(), "run")
	plan1(t, writeConfig(t, yaml), run)
	reqs, prompts := schedule(t, run)
	m, err := schemas.ReadManifest(filepath.Join(run, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	return reqs, prompts, m
}

func promptMap(ps []schemas.Prompt) map[int64]schemas.Prompt {
	m := make(map[int64]schemas.Prompt, len(ps))
	for _, p := range ps {
		m[p.PromptID] = p
	}
	return m
}

func TestConversations(t *testing.T) {
	reqs, prompts, _ := planConfig(t, `target: {url: "http://127.0.0.1:8000", model: m, api: chat}
load:
  stages:
    - {rate: 4, duration: 2s, arrival: constant}
    - {concurrency: 2, requests: 7, think_time: 50ms}
workload:
  conversations:
    turns: {kind: fixed, value: 3}
    input: {kind: fixed, value: 5}
    output: {kind: fixed, value: 9}
    think_time: 2s
    system_prompt_tokens: 4
`)
	ps := promptMap(prompts)
	// Open stage: 8 conversations × 3 turns; closed stage: 7 requests (the last conversation cut).
	if len(reqs) != 24+7 || len(prompts) != len(reqs) {
		t.Fatalf("%d requests, %d prompts; want 31 and one prompt per turn (none left unused by the cut conversation)", len(reqs), len(prompts))
	}
	for i, r := range reqs[:24] {
		conv, turn := int64(i/3), int32(i%3)
		start := int64(conv) * 250_000_000
		wantPlanned := start + int64(turn)*2_000_000_000
		wantDep, wantThink := int64(-1), int64(0)
		if turn > 0 {
			wantDep, wantThink = r.Seq-1, 2_000_000_000
		}
		if r.Conversation != conv || r.Turn != turn || r.DependsOn != wantDep || r.ThinkNs != wantThink || r.PlannedOffsetNs != wantPlanned || r.User != -1 {
			t.Fatalf("row %d = %+v; want conversation %d turn %d depends_on %d think %d planned %d", i, r, conv, turn, wantDep, wantThink, wantPlanned)
		}
		p := ps[r.PromptID]
		var msgs []message
		json.Unmarshal([]byte(p.MessagesJSON), &msgs)
		// system + earlier user turns, in order
		if len(msgs) != 1+int(turn) || msgs[0].Role != "system" || tokenizer.CountWords(p.Text) != 5 {
			t.Fatalf("row %d prompt: %d messages, text %q; want system + %d user messages and a 5-token text", i, len(msgs), p.Text, turn)
		}
		for k := 1; k < len(msgs); k++ {
			prev := ps[reqs[i-int(turn)+k-1].PromptID]
			if msgs[k].Role != "user" || msgs[k].Content != prev.Text {
				t.Fatalf("row %d: message %d = %+v; want turn %d's user text", i, k, msgs[k], k-1)
			}
		}
		if want := int32(4 + 5*(turn+1)); r.InputTokens != want || p.InputTokens != want {
			t.Fatalf("row %d: input tokens %d (prompt %d); want %d (system + user turns so far)", i, r.InputTokens, p.InputTokens, want)
		}
	}
	for i, r := range reqs[24:] {
		wantUser := int32((i / 3) % 2)
		if r.Stage != 1 || r.User != wantUser || r.PlannedOffsetNs != 2_000_000_000 || r.Turn != int32(i%3) {
			t.Errorf("closed row %d = %+v; want stage 1, user %d, planned at the stage start, turn %d", i, r, wantUser, i%3)
		}
	}
}

func TestClosedLoop(t *testing.T) {
	reqs, _, m := planConfig(t, `target: {url: "http://127.0.0.1:8000", model: m}
load:
  stages:
    - {concurrency: 2, duration: 1s, think_time: 80ms}
    - {rate: 10, duration: 1s, arrival: constant}
    - {concurrency: 3, requests: 10, think_time: 100ms}
workload:
  synthetic: {input: {kind: fixed, value: 3}, output: {kind: fixed, value: 2}}
`)
	// Stage 0 by duration: 2 users × ⌈1 s / (80 ms + 20 ms)⌉ = 20 rows.
	if m.Stages[0].Requests != 20 || m.Stages[1].Requests != 10 || m.Stages[2].Requests != 10 {
		t.Fatalf("stage requests = %d, %d, %d; want 20, 10, 10", m.Stages[0].Requests, m.Stages[1].Requests, m.Stages[2].Requests)
	}
	if m.Stages[0].OffsetNs != 0 || m.Stages[1].OffsetNs != 1e9 || m.Stages[2].OffsetNs != 2e9 || m.Stages[2].DurationNs != 0 {
		t.Errorf("stages = %+v; want stage 0 at 0, stage 1 at 1 s, stage 2 at 2 s until done (0 ns)", m.Stages)
	}
	for i, r := range reqs[30:] {
		think := int64(100_000_000)
		if i < 3 {
			think = 0 // each user's first request goes at once
		}
		if r.User != int32(i%3) || r.ThinkNs != think || r.PlannedOffsetNs != 2e9 {
			t.Errorf("row %d: user %d think %d planned %d; want user %d think %d planned 2e9", 30+i, r.User, r.ThinkNs, r.PlannedOffsetNs, i%3, think)
		}
	}
}

func TestSharedPrefix(t *testing.T) {
	for _, api := range []string{"chat", "completions"} {
		reqs, prompts, _ := planConfig(t, `target: {url: "http://127.0.0.1:8000", model: m, api: `+api+`}
load: {stages: [{rate: 100, duration: 2s}]}
workload:
  shared_prefix: {groups: 3, prefix_tokens: 50, users_per_group: 4, question_tokens: 10, output_tokens: 7}
`)
		if len(prompts) != 12 {
			t.Fatalf("%s: %d prompts; want 3 groups × 4 users", api, len(prompts))
		}
		ps := promptMap(prompts)
		prefix := map[int32]string{}
		for _, r := range reqs {
			p := ps[r.PromptID]
			var pre string
			if api == "chat" {
				var msgs []message
				json.Unmarshal([]byte(p.MessagesJSON), &msgs)
				if len(msgs) != 1 || msgs[0].Role != "system" {
					t.Fatalf("chat prompt %d messages = %s; want one system message", p.PromptID, p.MessagesJSON)
				}
				pre = msgs[0].Content
			} else {
				pre, _, _ = strings.Cut(p.Text, "\n")
			}
			if tokenizer.CountWords(pre) != 50 || r.InputTokens != 60 || r.MaxTokens != 7 {
				t.Fatalf("%s: request %+v with prefix of %d tokens; want 50 + 10 input, 7 output", api, r, tokenizer.CountWords(pre))
			}
			if old, ok := prefix[r.PrefixGroup]; ok && old != pre {
				t.Fatalf("%s: group %d has two different prefixes", api, r.PrefixGroup)
			}
			prefix[r.PrefixGroup] = pre
		}
		if len(prefix) != 3 {
			t.Errorf("%s: %d prefix groups used; want 3", api, len(prefix))
		}
	}
}

func TestDatasetWorkload(t *testing.T) {
	reqs, prompts, _ := planConfig(t, `target: {url: "http://127.0.0.1:8000", model: m, api: chat}
load: {stages: [{rate: 10, duration: 1s, arrival: constant}]}
workload:
  dataset:
    format: jsonl
    file: `+mustAbs(t, "testdata/jsonl/good.jsonl")+`
    output: {kind: fixed, value: 33}
    max_input_tokens: 4
`)
	// good.jsonl: 4, 3 (2 messages: "be brief" + "hello there" = 4 tokens) and 4 tokens; all fit.
	if len(prompts) != 3 || len(reqs) != 10 {
		t.Fatalf("%d prompts, %d requests; want 3 (each row stored once), 10", len(prompts), len(reqs))
	}
	ps := promptMap(prompts)
	seen := map[string]int{}
	for _, r := range reqs {
		p := ps[r.PromptID]
		seen[p.Text]++
		want := map[string]int32{"one two three four": 5, "hello there": 7, "no max tokens here": 33}[p.Text]
		if r.MaxTokens != want {
			t.Errorf("prompt %q: max_tokens %d; want %d", p.Text, r.MaxTokens, want)
		}
		if p.Text == "hello there" && p.MessagesJSON != `[{"role":"system","content":"be brief"}]` {
			t.Errorf("messages row: MessagesJSON = %s; want the system message", p.MessagesJSON)
		}
	}
	for text, n := range seen {
		if n < 3 {
			t.Errorf("prompt %q used %d times in 10 requests over 3 rows; want cycling (3 or 4)", text, n)
		}
	}
}

func TestMooncakePrefixSharing(t *testing.T) {
	reqs, prompts, m := planConfig(t, `target: {url: "http://127.0.0.1:8000", model: m}
workload:
  trace: {format: mooncake, file: `+mustAbs(t, "testdata/mooncake/good.jsonl")+`, block_tokens: 512, time_scale: 2}
`)
	ps := promptMap(prompts)
	text := func(i int) []string { return strings.Fields(ps[reqs[i].PromptID].Text) }
	want := []struct {
		planned int64
		input   int32
		group   int32
	}{{0, 1030, 0}, {54_000_000, 700, 0}, {100_000_000, 600, 7}}
	for i, w := range want {
		r := reqs[i]
		if r.PlannedOffsetNs != w.planned || r.InputTokens != w.input || r.PrefixGroup != w.group || len(text(i)) != int(w.input) {
			t.Errorf("row %d = %+v (%d words); want planned %d, %d input tokens, prefix group %d", i, r, len(text(i)), w.planned, w.input, w.group)
		}
	}
	a, b, c := text(0), text(1), text(2)
	if strings.Join(a[:700], " ") != strings.Join(b, " ") {
		t.Error("requests with hash ids [0 1 2] and [0 1] do not share their first 700 tokens")
	}
	if strings.Join(a[:512], " ") == strings.Join(c[:512], " ") {
		t.Error("requests with hash ids [0 ...] and [7 ...] share their first block")
	}
	if m.Stages[0].Arrival != "trace" || m.Stages[0].Requests != 3 {
		t.Errorf("stage = %+v; want one trace stage of 3 requests", m.Stages[0])
	}
}

func TestTraceScaling(t *testing.T) {
	dir := realTraces(t)
	for _, tc := range []struct {
		extra string
		rate  float64 // want this mean rate (0: don't check)
		n     int
	}{
		{"rate: 20, max_requests: 1000", 20, 1000},
		{"duration: 60s", 0, 0},
		{"start: 60s, duration: 30s, time_scale: 0.5", 0, 0},
	} {
		reqs, _, m := planConfig(t, `target: {url: "http://127.0.0.1:8000", model: m}
workload:
  trace: {format: azure, file: `+filepath.Join(dir, "azure-llm-2023-conv.csv")+`, `+tc.extra+`}
`)
		last := reqs[len(reqs)-1].PlannedOffsetNs
		for i := 1; i < len(reqs); i++ {
			if reqs[i].PlannedOffsetNs < reqs[i-1].PlannedOffsetNs {
				t.Fatalf("%s: planned offsets decrease at row %d", tc.extra, i)
			}
		}
		if tc.rate > 0 {
			got := float64(len(reqs)-1) / time.Duration(last).Seconds()
			if math.Abs(got-tc.rate)/tc.rate > 1e-6 || len(reqs) != tc.n {
				t.Errorf("%s: %d requests at %.4f/s; want %d at %g/s", tc.extra, len(reqs), got, tc.n, tc.rate)
			}
		}
		if strings.Contains(tc.extra, "duration: 60s") && !strings.Contains(tc.extra, "time_scale") && last >= 60e9 {
			t.Errorf("%s: last request at %v; want < 60s", tc.extra, time.Duration(last))
		}
		if strings.Contains(tc.extra, "time_scale: 0.5") && last >= 15e9 {
			t.Errorf("%s: last request at %v; want < 15s (30 s of trace at twice the speed)", tc.extra, time.Duration(last))
		}
		if m.Stages[0].Requests != int64(len(reqs)) {
			t.Errorf("%s: manifest says %d requests; schedule has %d", tc.extra, m.Stages[0].Requests, len(reqs))
		}
	}
}

func TestConversationsCompletions(t *testing.T) {
	reqs, prompts, _ := planConfig(t, `target: {url: "http://127.0.0.1:8000", model: m, api: completions}
load: {stages: [{rate: 2, duration: 1s, arrival: constant}]}
workload:
  conversations:
    turns: {kind: fixed, value: 2}
    input: {kind: fixed, value: 5}
    output: {kind: fixed, value: 3}
    system_prompt_tokens: 4
`)
	ps := promptMap(prompts)
	for i, r := range reqs {
		p := ps[r.PromptID]
		words := 5
		if r.Turn == 0 {
			words = 4 + 5 // the system prompt leads the first turn
		}
		if p.MessagesJSON != "" || tokenizer.CountWords(p.Text) != words || r.InputTokens != int32(4+5*(r.Turn+1)) {
			t.Errorf("row %d (turn %d): text of %d words, messages %q, input %d; want %d words, no messages, input %d", i, r.Turn, tokenizer.CountWords(p.Text), p.MessagesJSON, r.InputTokens, words, 4+5*(r.Turn+1))
		}
	}
}
