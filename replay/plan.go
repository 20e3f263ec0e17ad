package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/wirebench/wirebench/schemas"
)

// batchRows is how many rows are buffered before they go to the Parquet writer.
const batchRows = 8192

// Row groups end after this many request rows, or prompt rows, or prompt text bytes, so the
// Parquet writers (which hold a row group in memory until it ends) stay in bounded memory.
const (
	requestGroupRows = 1 << 20
	promptGroupRows  = 1 << 18
	promptGroupBytes = 64 << 20
)

// closedMinCycle bounds the rows planned for a closed-loop stage given by duration only: a user
// is assumed to need at least this long (plus think time) per request, so the plan holds
// concurrency × ⌈duration / (think_time + closedMinCycle)⌉ rows. Capture stops the stage at its
// duration; rows left over are not sent.
const closedMinCycle = 20 * time.Millisecond

// stage is one expanded stage of the load plan.
type stage struct {
	info schemas.StageInfo
	spec schemas.StageSpec
}

// expandStages turns load into stages: warmup first, then explicit stages, then the sweep.
// Offsets are filled in by the planner (stages run back to back).
func expandStages(l schemas.Load) []stage {
	var out []stage
	add := func(s schemas.StageSpec, warmup bool) {
		info := schemas.StageInfo{Index: int32(len(out)), Name: s.Name, Warmup: warmup}
		if s.Rate > 0 {
			info.Mode, info.Arrival, info.Rate = schemas.ModeOpen, s.Arrival, s.Rate
			if s.Arrival == schemas.ArrivalGamma {
				info.Burstiness = s.Burstiness
			}
		} else {
			info.Mode, info.Concurrency = schemas.ModeClosed, int32(s.Concurrency)
		}
		info.DurationNs = int64(s.Duration)
		if info.Name == "" {
			if info.Mode == schemas.ModeOpen {
				info.Name = fmt.Sprintf("%s-%grps", s.Arrival, s.Rate)
			} else {
				info.Name = fmt.Sprintf("closed-c%d", s.Concurrency)
			}
			if warmup {
				info.Name = "warmup"
			}
		}
		out = append(out, stage{info: info, spec: s})
	}
	if l.Warmup != nil {
		add(*l.Warmup, true)
	}
	for _, s := range l.Stages {
		add(s, false)
	}
	if sw := l.Sweep; sw != nil {
		for i, r := range sw.Rates() {
			add(schemas.StageSpec{Name: fmt.Sprintf("sweep-%02d", i), Rate: r, Duration: sw.Duration, Arrival: sw.Arrival, Burstiness: sw.Burstiness}, false)
		}
	}
	return out
}

// turn is one request of a unit of work drawn from a workload: a single request, or one turn of
// a conversation (a unit holds the whole conversation).
type turn struct {
	promptID int64
	input    int32
	output   int32
	group    int32 // prefix group, -1 none
	think    int64 // conversations: wait after the previous turn, ns
	docs     int32 // documents (ranking APIs) or inputs (embeddings) the request carries
}

// source draws units of work; it adds the prompts it makes to the output.
type source interface {
	// unit appends the next unit to buf, at most limit requests (a closed-loop stage's last
	// conversation may be cut short), and returns it.
	unit(buf []turn, limit int64) ([]turn, error)
	// multiTurn reports whether units are conversations.
	multiTurn() bool
	// name is the schedule's source column.
	name() string
}

// message is one chat message in Prompt.MessagesJSON.
type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func messagesJSON(ms []message) string {
	if len(ms) == 0 {
		return ""
	}
	b, _ := json.Marshal(ms) // strings only: cannot fail
	return string(b)
}

// stageStats collects the per-stage figures of --dry-run and the log.
type stageStats struct {
	requests int64
	in, out  *hdrhistogram.Histogram
}

func newStageStats() *stageStats {
	return &stageStats{in: hdrhistogram.New(1, 10_000_000, 4), out: hdrhistogram.New(1, 10_000_000, 4)}
}

// output buffers rows and hands full batches to one writer goroutine per file, so that drawing
// the plan and compressing the two files use separate cores; in dry-run mode its writers are
// nil and rows are only counted.
type output struct {
	ctx      context.Context // stops planning (Ctrl-C, SIGTERM); nil = never
	reqW     *schemas.Writer[schemas.ScheduleRequest]
	promptW  *schemas.Writer[schemas.Prompt]
	reqA     *asyncWriter[schemas.ScheduleRequest]
	promptA  *asyncWriter[schemas.Prompt]
	reqs     []schemas.ScheduleRequest
	prompts  []schemas.Prompt
	nReq     int64
	nPrompt  int64
	stats    []*stageStats
	images   *imagePicker // workload.images: draws the images of each new prompt; nil when none
	models   *modelPicker // each request's model; nil when there is none (a dry run)
	perModel map[string]int64
	traffic  *traffic // sets every row's cancel and endpoint columns; nil: left as they are
	// keep: a private output (see batched) keeps its prompt rows in kept, indexed by id,
	// instead of writing them.
	keep bool
	kept []schemas.Prompt
}

// start begins the writer goroutines; finish must follow.
func (o *output) start() {
	if o.reqW == nil {
		return
	}
	o.reqA = newAsyncWriter(o.reqW, requestGroupRows, 0, nil)
	o.promptA = newAsyncWriter(o.promptW, promptGroupRows, promptGroupBytes, func(p *schemas.Prompt) int {
		return len(p.Text) + len(p.MessagesJSON) + len(p.ImagesJSON) + len(p.InputsJSON)
	})
	o.reqs = <-o.reqA.free
	o.prompts = <-o.promptA.free
}

func (o *output) addRequest(r schemas.ScheduleRequest) error {
	if err := o.cancelled(o.nReq); err != nil {
		return err
	}
	if o.models != nil {
		r.Model = o.models.pick(&r)
		o.perModel[r.Model]++
	}
	o.traffic.apply(&r)
	st := o.stats[r.Stage]
	st.requests++
	st.in.RecordValue(int64(r.InputTokens))
	st.out.RecordValue(int64(r.MaxTokens))
	o.nReq++
	if o.reqA == nil {
		return nil
	}
	o.reqs = append(o.reqs, r)
	if len(o.reqs) >= batchRows {
		var err error
		o.reqs, err = o.reqA.send(o.reqs)
		return err
	}
	return nil
}

// addPrompt stores a prompt and returns its id (prompt ids are 0, 1, 2, ... in order).
func (o *output) addPrompt(text, messagesJSON string, tokens int) (int64, error) {
	return o.addPromptImages(text, messagesJSON, "", tokens)
}

// addPromptImages stores a prompt with its images_json; without images of its own a prompt gets
// workload.images' when configured.
func (o *output) addPromptImages(text, messagesJSON, images string, tokens int) (int64, error) {
	id := o.nPrompt
	if images == "" && o.images != nil {
		images = o.images.pick()
	}
	return id, o.addPromptRow(schemas.Prompt{PromptID: id, InputTokens: int32(tokens), Text: text, MessagesJSON: messagesJSON, ImagesJSON: images})
}

// addPromptRow stores a prompt row as is (replaying an earlier run keeps its ids).
func (o *output) addPromptRow(p schemas.Prompt) error {
	if err := o.cancelled(o.nPrompt); err != nil {
		return err
	}
	o.nPrompt++
	if o.keep {
		o.kept = append(o.kept, p)
		return nil
	}
	if o.promptA == nil {
		return nil
	}
	o.prompts = append(o.prompts, p)
	if len(o.prompts) >= batchRows {
		var err error
		o.prompts, err = o.promptA.send(o.prompts)
		return err
	}
	return nil
}

// finish writes the last batches and waits for the writer goroutines; it is safe to call twice.
func (o *output) finish() error {
	if o.reqA == nil {
		return nil
	}
	err := o.promptA.finish(o.prompts)
	if rerr := o.reqA.finish(o.reqs); err == nil {
		err = rerr
	}
	o.prompts, o.reqs = nil, nil
	return err
}

// cancelled returns ctx's error (Ctrl-C, SIGTERM) once every batchRows rows (n rows so far), so
// a plan of millions of rows stops within a batch.
func (o *output) cancelled(n int64) error {
	if o.ctx == nil || n%batchRows != 0 {
		return nil
	}
	return o.ctx.Err()
}

// errWriterFailed stops planning when a writer goroutine has failed; finish returns its error.
var errWriterFailed = errors.New("schedule writer failed")

// asyncWriter writes batches on its own goroutine with two buffers in rotation. It ends a row
// group every maxRows rows or maxBytes bytes (by size), so the Parquet writer's memory stays
// bounded.
type asyncWriter[T any] struct {
	w                *schemas.Writer[T]
	ch               chan []T
	free             chan []T
	done             chan struct{}
	err              error
	failed           atomic.Bool
	maxRows          int
	maxBytes         int
	size             func(*T) int
	groupRows, bytes int
	finished         bool
}

func newAsyncWriter[T any](w *schemas.Writer[T], maxRows, maxBytes int, size func(*T) int) *asyncWriter[T] {
	a := &asyncWriter[T]{w: w, ch: make(chan []T, 1), free: make(chan []T, 2), done: make(chan struct{}), maxRows: maxRows, maxBytes: maxBytes, size: size}
	a.free <- make([]T, 0, batchRows)
	a.free <- make([]T, 0, batchRows)
	go a.run()
	return a
}

func (a *asyncWriter[T]) run() {
	defer close(a.done)
	for b := range a.ch {
		if a.err == nil {
			a.err = a.write(b)
			if a.err != nil {
				a.failed.Store(true)
			}
		}
		clear(b) // drop references to prompt text
		a.free <- b[:0]
	}
}

func (a *asyncWriter[T]) write(b []T) error {
	if len(b) == 0 {
		return nil
	}
	if err := a.w.Write(b); err != nil {
		return err
	}
	a.groupRows += len(b)
	if a.size != nil {
		for i := range b {
			a.bytes += a.size(&b[i])
		}
	}
	if a.groupRows >= a.maxRows || (a.maxBytes > 0 && a.bytes >= a.maxBytes) {
		a.groupRows, a.bytes = 0, 0
		return a.w.Flush()
	}
	return nil
}

// send hands b to the writer and returns an empty buffer to fill next.
func (a *asyncWriter[T]) send(b []T) ([]T, error) {
	if a.failed.Load() {
		return b[:0], errWriterFailed // the real error comes from finish
	}
	a.ch <- b
	return <-a.free, nil
}

func (a *asyncWriter[T]) finish(last []T) error {
	if a.finished {
		return a.err
	}
	a.finished = true
	if len(last) > 0 {
		a.ch <- last
	}
	close(a.ch)
	<-a.done
	return a.err
}

// planStages writes the rows of every stage; stages run back to back and set info.OffsetNs.
func planStages(ctx context.Context, stages []stage, src source, seed int64, out *output) error {
	sp := &stagePlanner{src: src, out: out}
	var start int64
	for i := range stages {
		st := &stages[i]
		if err := ctx.Err(); err != nil {
			return err
		}
		st.info.OffsetNs = start
		n0 := sp.seq
		var err error
		if st.info.Mode == schemas.ModeOpen {
			err = sp.open(st, start, rand.New(rand.NewPCG(uint64(seed), 1000+uint64(i))))
		} else {
			err = sp.closed(st, start)
		}
		if err != nil {
			return err
		}
		st.info.Requests = sp.seq - n0
		start += st.info.DurationNs
	}
	return nil
}

// stagePlanner writes the rows of the stages in turn; seq and conv number the requests and the
// conversations across stages.
type stagePlanner struct {
	src   source
	out   *output
	seq   int64
	conv  int64
	units []turn
}

// open plans an open-loop stage starting at start: a unit of work at each arrival, the later
// turns of a conversation each its think time after the one before.
func (sp *stagePlanner) open(st *stage, start int64, rng *rand.Rand) error {
	arr := newArrivals(st.spec.Arrival, st.spec.Rate, st.spec.Burstiness, st.spec.Duration.D(), rng)
	for {
		off, ok := arr.next()
		if !ok {
			return nil
		}
		var err error
		if sp.units, err = sp.src.unit(sp.units[:0], math.MaxInt64); err != nil {
			return err
		}
		planned, prev := start+off, int64(-1)
		for k, t := range sp.units {
			if k > 0 {
				planned += t.think
			}
			r := sp.row(st, t, planned)
			sp.converse(&r, k, t, prev)
			if prev, err = sp.add(r); err != nil {
				return err
			}
		}
		sp.endUnit()
	}
}

// closed plans a closed-loop stage starting at start: units of work handed to its users in
// turn, each user's next request sent think_time after its previous answer. A stage given by
// duration only holds rows for the fastest users it could have (closedMinCycle).
func (sp *stagePlanner) closed(st *stage, start int64) error {
	c := st.spec.Concurrency
	total := int64(st.spec.Requests)
	if total == 0 {
		per := int64(math.Ceil(float64(st.spec.Duration) / float64(st.spec.ThinkTime.D()+closedMinCycle)))
		total = int64(c) * per
	}
	started := make([]bool, c)
	var done int64
	for u := 0; done < total; u++ {
		var err error
		if sp.units, err = sp.src.unit(sp.units[:0], total-done); err != nil {
			return err
		}
		user := u % c
		prev := int64(-1)
		for k, t := range sp.units {
			r := sp.row(st, t, start)
			r.User = int32(user)
			if started[user] {
				r.ThinkNs = int64(st.spec.ThinkTime)
			}
			sp.converse(&r, k, t, prev)
			started[user] = true
			if prev, err = sp.add(r); err != nil {
				return err
			}
			done++
		}
		sp.endUnit()
	}
	return nil
}

// row is the request of turn t in stage st, planned at offset planned (ns), numbered seq.
func (sp *stagePlanner) row(st *stage, t turn, planned int64) schemas.ScheduleRequest {
	return schemas.ScheduleRequest{
		Seq: sp.seq, Stage: st.info.Index, Warmup: st.info.Warmup, PlannedOffsetNs: planned,
		User: -1, Conversation: -1, DependsOn: -1, PromptID: t.promptID,
		InputTokens: t.input, MaxTokens: t.output, PrefixGroup: t.group, Source: sp.src.name(), Documents: t.docs,
	}
}

// converse makes r turn k of the current conversation, after request prev, when the source
// makes conversations.
func (sp *stagePlanner) converse(r *schemas.ScheduleRequest, k int, t turn, prev int64) {
	if !sp.src.multiTurn() {
		return
	}
	r.Conversation, r.Turn, r.DependsOn = sp.conv, int32(k), prev
	if k > 0 {
		r.ThinkNs = t.think
	}
}

// add writes r and returns its seq.
func (sp *stagePlanner) add(r schemas.ScheduleRequest) (int64, error) {
	if err := sp.out.addRequest(r); err != nil {
		return 0, err
	}
	sp.seq++
	return r.Seq, nil
}

// endUnit ends a unit of work: a conversation, when the source makes them.
func (sp *stagePlanner) endUnit() {
	if sp.src.multiTurn() {
		sp.conv++
	}
}
