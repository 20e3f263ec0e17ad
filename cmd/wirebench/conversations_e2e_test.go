package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// TestCaptureConversationsAndClosedLoop runs multi-turn conversations (open-loop arrivals) and a
// closed-loop stage against the simulator with 2 workers and checks the ordering rules capture
// promises: a later turn is sent only after the earlier turn's answer plus think time, on the
// same worker, carrying the real earlier answers (the simulator's prompt count proves it); a
// closed-loop user never has two requests in flight.
func TestCaptureConversationsAndClosedLoop(t *testing.T) {
	url := startSim(t, "--ttft", "10ms", "--itl", "2ms")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "conv.yaml")
	conf := fmt.Sprintf(`target: {url: %q, api: chat, model: sim, ignore_eos: true, timeout: 30s}
load:
  stages:
    - {rate: 5, duration: 2s, arrival: constant}
    - {concurrency: 3, requests: 12, think_time: 50ms}
workload:
  conversations:
    turns: {kind: fixed, value: 3}
    input: {kind: fixed, value: 10}
    output: {kind: fixed, value: 5}
    think_time: 100ms
    system_prompt_tokens: 20
`, url)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if _, stderr, err := wirebench(t, 60*time.Second, "replay", cfg, "-o", run); err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	if _, stderr, err := wirebench(t, 60*time.Second, "capture", run, "--workers", "2", "--quiet"); err != nil {
		t.Fatalf("capture: %v\n%s", err, stderr)
	}
	sched, err := schemas.ReadFile[schemas.ScheduleRequest](filepath.Join(run, "schedule", "requests.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	_, reqs, _ := rawFiles(t, run)
	if len(reqs) != len(sched) {
		t.Fatalf("%d raw requests; want every one of the %d planned", len(reqs), len(sched))
	}
	plan := map[int64]schemas.ScheduleRequest{}
	for _, s := range sched {
		plan[s.Seq] = s
	}
	got := map[int64]schemas.RawRequest{}
	for _, r := range reqs {
		if _, dup := got[r.Seq]; dup {
			t.Fatalf("seq %d sent twice", r.Seq)
		}
		if r.ErrorKind != "" || r.DoneNs == nil || r.UsagePrompt == nil || r.UsageComplete == nil {
			t.Fatalf("seq %d failed or has no usage: %s %s", r.Seq, r.ErrorKind, r.ErrorMessage)
		}
		got[r.Seq] = r
	}
	var laterTurns int
	for _, s := range sched {
		r := got[s.Seq]
		if s.DependsOn < 0 {
			// A first turn (or a closed-loop user's next conversation) carries no earlier answer.
			if *r.UsagePrompt != s.InputTokens {
				t.Errorf("seq %d (first turn): the server counted %d prompt tokens; want %d", s.Seq, *r.UsagePrompt, s.InputTokens)
			}
			continue
		}
		laterTurns++
		prev, ok := got[s.DependsOn]
		if !ok {
			t.Fatalf("seq %d depends on %d, which was not sent", s.Seq, s.DependsOn)
		}
		if r.SendStartNs < *prev.DoneNs+s.ThinkNs {
			t.Errorf("seq %d (turn %d) started %v after its previous turn's answer; want at least the think time %v",
				s.Seq, s.Turn, time.Duration(r.SendStartNs-*prev.DoneNs), time.Duration(s.ThinkNs))
		}
		if r.Worker != prev.Worker {
			t.Errorf("seq %d ran on worker %d, its previous turn on %d; want one worker per conversation", s.Seq, r.Worker, prev.Worker)
		}
		// The simulator counts the words of every message: system prompt and user turns (the
		// schedule's input_tokens) plus the earlier answers, which capture must have inserted.
		want := s.InputTokens
		for d := s.DependsOn; d >= 0; d = plan[d].DependsOn {
			want += *got[d].UsageComplete
		}
		if *r.UsagePrompt != want {
			t.Errorf("seq %d (turn %d): the server counted %d prompt tokens; want %d (turns so far + earlier answers)", s.Seq, s.Turn, *r.UsagePrompt, want)
		}
	}
	if laterTurns == 0 {
		t.Fatal("the schedule has no later conversation turns to check")
	}
	// Closed loop: each user's requests one after another, think time apart.
	byUser := map[int32][]schemas.RawRequest{}
	for _, s := range sched {
		if s.User >= 0 {
			byUser[s.User] = append(byUser[s.User], got[s.Seq])
		}
	}
	if len(byUser) != 3 {
		t.Fatalf("closed-loop users = %d; want 3", len(byUser))
	}
	for u, rs := range byUser {
		sort.Slice(rs, func(i, j int) bool { return rs[i].SendStartNs < rs[j].SendStartNs })
		for i := 1; i < len(rs); i++ {
			if rs[i].SendStartNs < *rs[i-1].DoneNs {
				t.Errorf("user %d: seq %d started before seq %d ended; a closed-loop user has one request in flight", u, rs[i].Seq, rs[i-1].Seq)
			}
		}
	}
}
