package capture

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/wirebench/wirebench/capture/internal/worker"
	"github.com/wirebench/wirebench/schemas"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// tracker holds the workers' latest progress and renders it once a second: a live line per stage
// on a terminal, a log line otherwise.
type tracker struct {
	stages  []schemas.StageInfo
	planned map[int32]int64 // this host's planned requests per stage
	shards  int
	startNs int64
	last    map[int]*worker.Progress
	prevCPU map[int][2]int64 // worker -> (cpu ns, now ns) of the previous render
	util    map[int]float64
	live    io.Writer // nil: log lines
	log     *slog.Logger
	shown   int32 // stage of the live line; -1 none
}

func newTracker(stages []schemas.StageInfo, planned map[int32]int64, shards int, live io.Writer, log *slog.Logger) *tracker {
	return &tracker{stages: stages, planned: planned, shards: shards, last: map[int]*worker.Progress{},
		prevCPU: map[int][2]int64{}, util: map[int]float64{}, live: live, log: log, shown: -1}
}

func (t *tracker) update(worker int, p *worker.Progress) {
	if prev, ok := t.prevCPU[worker]; ok && p.NowNs > prev[1] {
		t.util[worker] = float64(p.CPUNs-prev[0]) / float64(p.NowNs-prev[1])
	}
	t.prevCPU[worker] = [2]int64{p.CPUNs, p.NowNs}
	t.last[worker] = p
}

// stageSummary is the host-wide state of one stage.
type stageSummary struct {
	stage                       int32
	name                        string // the stage's name, as the report labels it
	elapsed                     time.Duration
	sent, planned, done, errors int64
	inflight                    int64
	rate, target                float64
	ttftP50, ttftP99            time.Duration // of the stage's first tokens so far: none while ttftCount is 0
	ttftCount                   int64
	utilMax                     float64
	// draining: every planned send is out (a closed-loop stage: its time is up), so what is
	// left is answers in flight and sent/elapsed would only fall.
	draining bool
}

// ttft returns the TTFT p50 and p99 as shown, to three significant digits: "–" (never 0)
// before the stage's first token has come.
func (s *stageSummary) ttft() (p50, p99 string) {
	if s.ttftCount == 0 {
		return "–", "–"
	}
	return sig3(s.ttftP50).String(), sig3(s.ttftP99).String()
}

// sig3 rounds d to three significant digits (6.258687s → 6.26s, 21.375ms → 21.4ms), at least
// to the microsecond.
func sig3(d time.Duration) time.Duration {
	unit := time.Microsecond
	for unit*1000 <= d {
		unit *= 10
	}
	return d.Round(unit)
}

func (t *tracker) summary(now int64) (stageSummary, bool) {
	s := stageSummary{stage: -1}
	for _, p := range t.last {
		s.stage = max(s.stage, p.Stage)
	}
	if s.stage < 0 {
		return s, false
	}
	var info *schemas.StageInfo
	for i := range t.stages {
		if t.stages[i].Index == s.stage {
			info = &t.stages[i]
		}
	}
	h := hdrhistogram.New(1, 600_000_000, 2)
	for _, p := range t.last {
		if int(s.stage) < len(p.Sent) {
			s.sent += p.Sent[s.stage]
			s.done += p.Done[s.stage]
			s.errors += p.Errors[s.stage]
		}
		s.inflight += p.Inflight
		if p.Stage == s.stage && len(p.TTFT) > 0 {
			if wh, err := hdrhistogram.Decode(p.TTFT); err == nil {
				h.Merge(wh)
			}
		}
	}
	for _, u := range t.util {
		s.utilMax = max(s.utilMax, u)
	}
	s.planned = t.planned[s.stage]
	if info != nil {
		s.name = info.Name
		s.elapsed = time.Duration(now - (t.startNs + info.OffsetNs))
		s.target = info.Rate / float64(max(t.shards, 1))
		s.draining = s.planned > 0 && s.sent >= s.planned ||
			info.Mode == schemas.ModeClosed && info.DurationNs > 0 && s.elapsed > time.Duration(info.DurationNs)
	}
	if s.elapsed > 0 {
		s.rate = float64(s.sent) / s.elapsed.Seconds()
	}
	if s.ttftCount = h.TotalCount(); s.ttftCount > 0 {
		s.ttftP50 = time.Duration(h.ValueAtQuantile(50)) * time.Microsecond
		s.ttftP99 = time.Duration(h.ValueAtQuantile(99)) * time.Microsecond
	}
	return s, true
}

func (t *tracker) render(now int64) {
	s, ok := t.summary(now)
	if !ok {
		return
	}
	if t.live == nil {
		attrs := []any{"stage", s.stage, "name", s.name, "phase", "sending", "elapsed", s.elapsed.Round(time.Second), "sent", s.sent, "planned", s.planned}
		if s.draining {
			attrs[5] = "draining" // no rate: sent/elapsed only falls while the answers come in
		} else {
			attrs = append(attrs, "rate", fmt.Sprintf("%.1f", s.rate), "target_rate", people(s.target))
		}
		p50, p99 := s.ttft()
		attrs = append(attrs, "inflight", s.inflight, "errors", s.errors,
			"ttft_p50", p50, "ttft_p99", p99, "worker_util_max", fmt.Sprintf("%.2f", s.utilMax))
		t.log.Info("progress", attrs...)
		return
	}
	if t.shown >= 0 && t.shown != s.stage {
		fmt.Fprintln(t.live)
	}
	t.shown = s.stage
	const width = 20
	frac := 0.0
	if s.planned > 0 {
		frac = min(float64(s.sent)/float64(s.planned), 1)
	}
	bar := strings.Repeat("#", int(frac*width)) + strings.Repeat(".", width-int(frac*width))
	rate := fmt.Sprintf("%.0f req/s", s.rate)
	if s.target > 0 {
		rate = fmt.Sprintf("%.0f/%s req/s", s.rate, people(s.target))
	}
	if s.draining {
		rate = "draining"
	}
	p50, p99 := s.ttft()
	fmt.Fprintf(t.live, "\r\033[Kstage %s [%s] %s  %d/%d sent  %s  inflight %d  errors %d  ttft p50 %s p99 %s  util %.0f%%",
		s.name, bar, s.elapsed.Round(time.Second), s.sent, s.planned, rate, s.inflight, s.errors, p50, p99, 100*s.utilMax)
}

// people is a rate as a person reads it: at most two decimals, no float noise
// (20.000000000000004 → "20", 5.743 → "5.74").
func people(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// finish ends the live line.
func (t *tracker) finish() {
	if t.live != nil && t.shown >= 0 {
		fmt.Fprintln(t.live)
	}
}

// live is the summary as Config.Watch sees it.
func (s stageSummary) live() Live {
	return Live{Stage: s.stage, Elapsed: s.elapsed, Planned: s.planned, Sent: s.sent, Done: s.done, Errors: s.errors,
		Inflight: s.inflight, TTFTCount: s.ttftCount, TTFTP50: s.ttftP50}
}
