package worker

import (
	"fmt"
	"path/filepath"
	"sort"
	"sync/atomic"
	"time"

	"github.com/wirebench/wirebench/capture/wire"
	"github.com/wirebench/wirebench/internal/tlsclient"
	"github.com/wirebench/wirebench/schemas"
)

// bodyWindow is how far ahead of their send time request bodies are built.
const bodyWindow = 2 * time.Second

// load reads the manifest and this worker's share of the schedule and prompts.
func (w *worker) load() error {
	if err := w.loadTarget(); err != nil {
		return err
	}
	maxStage := int32(0)
	for _, s := range w.stages {
		maxStage = max(maxStage, s.Index)
	}
	items, err := w.readShare(maxStage)
	if err != nil {
		return err
	}
	if err := w.readPrompts(items); err != nil {
		return err
	}
	w.sent = make([]atomic.Int64, maxStage+1)
	w.waits = make([]atomic.Int64, maxStage+1)
	if err := w.chain(items); err != nil {
		return err
	}
	w.owned = int64(len(items))
	w.remaining.Store(w.owned)
	return nil
}

// loadTarget reads the manifest's stages and target and prepares what every send needs: the
// body builder, the API, the header, TLS and the endpoints' URLs.
func (w *worker) loadTarget() error {
	m, err := schemas.ReadManifest(filepath.Join(w.cfg.Run, schemas.ManifestName))
	if err != nil {
		return fmt.Errorf("read manifest: %w", err)
	}
	rc, err := m.RunConfig()
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(w.cfg.Run, schemas.ManifestName), err)
	}
	w.tgt = rc.Target
	// The secrets come from the coordinator, not the manifest; metrics_url is the coordinator's.
	w.tgt.URL, w.tgt.Headers, w.tgt.MetricsURL = w.cfg.Target, w.cfg.Headers, ""
	w.stages = m.Stages
	if w.bb, err = newBodyBuilder(w.tgt, rc.Workload.Tools); err != nil {
		return err
	}
	if d := rc.Workload.Documents; d != nil && w.tgt.API == schemas.APIRerank {
		w.bb.topN = d.TopN
	}
	if w.api, err = wire.ParseAPI(w.tgt.API); err != nil {
		return fmt.Errorf("target.api: %w", err)
	}
	if w.header, err = requestHeader(w.tgt); err != nil {
		return err
	}
	if w.tls, err = tlsclient.Config(w.tgt.TLS); err != nil {
		return err
	}
	w.bases = w.cfg.Targets
	if len(w.bases) == 0 {
		w.bases = []string{w.cfg.Target}
	}
	for _, b := range w.bases {
		w.urls = append(w.urls, endpoint(b, w.tgt.API))
	}
	return nil
}

// readShare reads the schedule's requests this worker owns, in seq order.
func (w *worker) readShare(maxStage int32) ([]*item, error) {
	sched, err := schemas.ReadFile[schemas.ScheduleRequest](schemas.FileOf[schemas.ScheduleRequest](w.cfg.Run))
	if err != nil {
		return nil, fmt.Errorf("read schedule: %w", err)
	}
	var items []*item
	for i := range sched {
		r := &sched[i]
		if sh, wk := Owner(r, w.cfg.Shards, w.cfg.Workers); sh != w.cfg.Shard || wk != w.cfg.Worker {
			continue
		}
		if r.Stage < 0 || r.Stage > maxStage {
			return nil, fmt.Errorf("schedule/requests.parquet: seq %d: stage %d is not in manifest stages", r.Seq, r.Stage)
		}
		if r.Endpoint < 0 || int(r.Endpoint) >= len(w.urls) {
			return nil, fmt.Errorf("schedule/requests.parquet: seq %d: endpoint %d, but the target has %d (target.urls)", r.Seq, r.Endpoint, len(w.urls))
		}
		items = append(items, &item{r: *r})
		if r.Model != "" {
			w.bb.addModel(r.Model)
		}
	}
	return items, nil
}

// readPrompts gives each item its prompt and prepares the prompts' images.
func (w *worker) readPrompts(items []*item) error {
	need := make(map[int64]*schemas.Prompt, len(items))
	for _, it := range items {
		need[it.r.PromptID] = nil
	}
	prompts, err := schemas.ReadFile[schemas.Prompt](schemas.FileOf[schemas.Prompt](w.cfg.Run))
	if err != nil {
		return fmt.Errorf("read prompts: %w", err)
	}
	for i := range prompts {
		if _, ok := need[prompts[i].PromptID]; ok {
			p := prompts[i]
			need[p.PromptID] = &p
			if err := w.bb.prepareImages(p.ImagesJSON); err != nil {
				return fmt.Errorf("schedule/prompts.parquet: prompt_id %d: %w", p.PromptID, err)
			}
		}
	}
	for _, it := range items {
		if it.prompt = need[it.r.PromptID]; it.prompt == nil {
			return fmt.Errorf("schedule/requests.parquet: seq %d: prompt_id %d is not in schedule/prompts.parquet", it.r.Seq, it.r.PromptID)
		}
	}
	return nil
}

// chain links the items into chains and keeps the chains' first items as roots, by planned
// time: a conversation turn follows the turn it depends on; a closed-loop user's requests
// follow each other in seq order.
func (w *worker) chain(items []*item) error {
	bySeq := make(map[int64]*item, len(items))
	for _, it := range items {
		bySeq[it.r.Seq] = it
	}
	hasPrev := make(map[*item]bool)
	lastOfUser := map[int64]*item{}
	// Items come in seq order, and a closed-loop user's conversations are numbered one after
	// another, so a user's next conversation follows the last turn of the previous one.
	for _, it := range items {
		switch {
		case it.r.DependsOn >= 0:
			p := bySeq[it.r.DependsOn]
			if p == nil || p.next != nil {
				return fmt.Errorf("schedule/requests.parquet: seq %d: depends_on %d is not an earlier turn of conversation %d", it.r.Seq, it.r.DependsOn, it.r.Conversation)
			}
			p.next, hasPrev[it] = it, true
		case it.r.User >= 0:
			k := int64(it.r.Stage)<<32 | int64(it.r.User)
			if p := lastOfUser[k]; p != nil && p.next == nil {
				p.next, hasPrev[it] = it, true
			}
		}
		if it.r.User >= 0 {
			lastOfUser[int64(it.r.Stage)<<32|int64(it.r.User)] = it
		}
	}
	for _, it := range items {
		if !hasPrev[it] {
			w.roots = append(w.roots, it)
		}
	}
	sort.SliceStable(w.roots, func(i, j int) bool { return w.roots[i].r.PlannedOffsetNs < w.roots[j].r.PlannedOffsetNs })
	return nil
}

func (w *worker) allChained() []*item {
	var out []*item
	for _, r := range w.roots {
		for it := r.next; it != nil; it = it.next {
			out = append(out, it)
		}
	}
	return out
}

// buildUntil builds the bodies of roots planned before offset (ns from the start).
func (w *worker) buildUntil(offset int64) error {
	for i := w.built.Load(); i < int64(len(w.roots)) && w.roots[i].r.PlannedOffsetNs < offset; i++ {
		if err := w.buildRoot(w.roots[i]); err != nil {
			return err
		}
		w.built.Store(i + 1)
	}
	return nil
}

func (w *worker) buildRoot(it *item) error {
	body, hist, err := w.bb.build(it.r.Model, it.r.MaxTokens, it.prompt, nil, "")
	if err != nil {
		return fmt.Errorf("seq %d: %w", it.r.Seq, err)
	}
	it.body = body
	if it.next != nil {
		it.hist = hist
	}
	return nil
}

// buildLoop keeps request bodies built bodyWindow ahead of their send time.
func (w *worker) buildLoop() {
	for !w.stopping.Load() && w.built.Load() < int64(len(w.roots)) {
		if err := w.buildUntil(time.Now().UnixNano() - w.startNs + int64(bodyWindow)); err != nil {
			w.log.Error("build request body", "err", err)
			w.stop()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
