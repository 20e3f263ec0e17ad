package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wirebench/wirebench/internal/construn"
	"github.com/wirebench/wirebench/schemas"
)

// TestOverloadKeepsItsRate: asked for 1,000 req/s with 20 connections to a server that answers
// in 50 ms (at most 400 req/s on them), the client sends at the rate the connections allow, not
// a fraction of it; every request is sent and answered; the requests that wait go out in the
// order they were planned, so lateness grows steadily; and the load verdict says the client was
// overloaded and kept its rate, naming the limit (its connection cap).
func TestOverloadKeepsItsRate(t *testing.T) {
	url := startSim(t, "--mode", "fixed", "--ttft", "50ms", "--itl", "0")
	run := captureRun(t, url, construn.Stage{Rate: 1000, Duration: 2 * time.Second, MaxTokens: 2})
	_, st, out, _ := footprintRun(t, run, "--workers", "1", "--max-connections", "20", "--connections", "20")
	s := st[0]
	t.Logf("achieved %.0f/s, completed %d of %d, send lag p99 %v; %s", val(s.AchievedRate), s.Completed, s.Requests, time.Duration(val(s.SendLag.P99)), s.LoadReason)
	if s.Requests != 2000 || s.Completed != 2000 {
		t.Errorf("%d requests, %d ok; want all 2000 sent and answered", s.Requests, s.Completed)
	}
	// 20 connections × 1 / 50 ms = 400/s at most; a loaded machine answers slower, never faster.
	if rate := val(s.AchievedRate); rate > 420 || rate < 200 {
		t.Errorf("achieved %.0f/s; want the rate 20 connections answered in 50 ms allow (up to 400/s)", rate)
	}
	if s.LoadDelivered || s.LoadBlame != schemas.BlameClientCap || !strings.Contains(s.LoadReason, "overloaded: the requests it could not send on time queued in the client and went out late, at the rate it kept") {
		t.Errorf("load verdict %v, blame %q: %q; want overloaded, the rate it kept, the connection cap named", s.LoadDelivered, s.LoadBlame, s.LoadReason)
	}
	if !strings.Contains(out, "overloaded") {
		t.Errorf("aggregate output does not say the stage was overloaded:\n%s", out)
	}
	// Waiting requests go out in planned order: a request planned later is never sent more than
	// a millisecond before one planned earlier (sends on different connections may cross by
	// microseconds).
	rows, err := schemas.ReadFile[schemas.MetricRequest](filepath.Join(run, "metrics", "requests.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(rows, func(a, b schemas.MetricRequest) int { return int(a.PlannedNs - b.PlannedNs) })
	crossed, latest := 0, int64(0)
	for _, r := range rows {
		if r.SentNs < latest-int64(time.Millisecond) {
			crossed++
		}
		latest = max(latest, r.SentNs)
	}
	if crossed > 0 {
		t.Errorf("%d of %d requests were sent more than 1 ms before a request planned earlier; want planned order", crossed, len(rows))
	}
}
