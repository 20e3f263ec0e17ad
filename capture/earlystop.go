package capture

import (
	"fmt"
	"time"

	"github.com/wirebench/wirebench/capture/internal/worker"
	"github.com/wirebench/wirebench/schemas"
)

// endSample is a worker's cumulative sends of a stage at a time inside the stage window.
type endSample struct{ sent, nowNs int64 }

// sampleStages keeps, for every open-loop stage whose window contains the sample's time, the
// worker's cumulative sends of that stage.
func (c *coord) sampleStages(worker int, p *worker.Progress) {
	if c.cfg.StopBelowFidelity <= 0 {
		return
	}
	for _, st := range c.m.Stages {
		start := c.startNs + st.OffsetNs
		if st.Mode != schemas.ModeOpen || st.DurationNs <= 0 || p.NowNs < start || p.NowNs > start+st.DurationNs || int(st.Index) >= len(p.Sent) {
			continue
		}
		if c.atEnd == nil {
			c.atEnd, c.judged = map[int32]map[int]endSample{}, map[int32]bool{}
		}
		if c.atEnd[st.Index] == nil {
			c.atEnd[st.Index] = map[int]endSample{}
		}
		c.atEnd[st.Index][worker] = endSample{sent: p.Sent[st.Index], nowNs: p.NowNs}
	}
}

// judgeStages looks at each open-loop stage once its window has ended and every worker has
// reported since (progress comes once a second): fidelity = sends seen / sends due by the time
// of each worker's last sample inside the window. Below Config.StopBelowFidelity it stops
// sending; the run ends complete, and the manifest says why requests are missing.
func (c *coord) judgeStages(now int64) {
	for _, st := range c.m.Stages {
		end := c.startNs + st.OffsetNs + st.DurationNs
		if st.Mode != schemas.ModeOpen || st.DurationNs <= 0 || c.judged[st.Index] || now < end+int64(1500*time.Millisecond) {
			continue
		}
		if c.judged == nil {
			c.judged = map[int32]bool{}
		}
		c.judged[st.Index] = true
		samples := c.atEnd[st.Index]
		planned := c.planned[st.Index]
		if len(samples) == 0 || planned == 0 {
			continue
		}
		var sent int64
		var frac float64
		for _, smp := range samples {
			sent += smp.sent
			frac += float64(smp.nowNs-(c.startNs+st.OffsetNs)) / float64(st.DurationNs)
		}
		frac /= float64(len(samples))
		if frac < 0.5 { // too little of the window seen to judge
			continue
		}
		fid := float64(sent) / (float64(planned) * frac)
		if fid < c.cfg.StopBelowFidelity {
			c.earlyStop = fmt.Sprintf("stopped early after stage %d (%s): %.0f%% of its planned sends went out on time, below the %.0f%% limit (StopBelowFidelity); later stages were not sent",
				st.Index, st.Name, 100*fid, 100*c.cfg.StopBelowFidelity)
			c.log.Warn("stopping early: the client cannot keep up", "stage", st.Index, "fidelity", fmt.Sprintf("%.3f", fid), "limit", c.cfg.StopBelowFidelity)
			c.stopAll()
			return
		}
	}
}

// askWatch asks Config.Watch about the current stage and stops sending when it answers why.
func (c *coord) askWatch(tr *tracker, now int64) {
	s, ok := tr.summary(now)
	if !ok {
		return
	}
	if why := c.cfg.Watch(s.live()); why != "" {
		c.earlyStop = fmt.Sprintf("stopped early in stage %d: %s; the rest of the schedule was not sent", s.stage, why)
		c.log.Warn("stopping early", "stage", s.stage, "why", why)
		c.stopAll()
	}
}

// checkFirstSecond stops the run when every request planned in the first second has failed. It
// reports whether to check again (results still pending).
func (c *coord) checkFirstSecond() bool {
	var sent, ok, failed int64
	firstErr := ""
	for _, p := range c.procs {
		if p.last == nil {
			if p.exit == nil {
				return true // no news yet
			}
			continue
		}
		sent += p.last.FirstSent
		ok += p.last.FirstOK
		failed += p.last.FirstFailed
		if firstErr == "" {
			firstErr = p.last.FirstError
		}
	}
	switch {
	case ok > 0 || sent == 0:
		return false
	case failed < sent:
		return true
	}
	c.failure = fmt.Errorf("%w: %d of %d failed (first: %s); check the target %s", ErrTargetDown, failed, sent, firstErr, c.cfg.Target)
	c.log.Error("stopping the run", "err", c.failure)
	c.stopAll()
	return false
}
