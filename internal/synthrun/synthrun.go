// Package synthrun writes synthetic multi-host runs: one run directory per host, as `wirebench
// capture --shard h/H` leaves it (manifest, raw request and chunk parts per worker rolled every
// part interval, workers.parquet), written directly with the schemas writers and a fixed seed.
// They stand in for captures far larger than this machine could send, to measure what aggregate
// does with them (bench/scale).
package synthrun

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/wirebench/wirebench/schemas"
)

// Config is the shape of a synthetic run.
type Config struct {
	Dir       string        // parent directory: host h is written to Dir/host-HH
	Hosts     int           // hosts (shards)
	Workers   int           // worker processes per host
	Rate      float64       // requests per second per host (Poisson)
	Duration  time.Duration // one open-loop stage this long
	PartEvery time.Duration // a worker rolls its parts every this much planned time (capture's part_interval); 0 = 10s
	Seed      uint64        // the same seed writes the same rows
}

// Result is what was written.
type Result struct {
	Dirs     []string // one run directory per host, in shard order
	Requests int64
	Chunks   int64
	Bytes    int64 // Parquet bytes on disk
}

// The synthetic server: TTFT = TTFTBase + an exponential queue of mean TTFTQueue; output
// tokens uniform in [MinTokens, MaxTokens], one content event each, then a usage event and
// [DONE]; inter-token gaps uniform in [ITLMin, ITLMax].
const (
	StartNs    = int64(1_800_000_000_000_000_000) // the run's start (CLOCK_REALTIME)
	TTFTBase   = 40 * time.Millisecond
	TTFTQueue  = 20 * time.Millisecond
	ITLMin     = 10 * time.Millisecond
	ITLMax     = 20 * time.Millisecond
	MinTokens  = 7
	MaxTokens  = 23
	InputMin   = 64
	InputMax   = 1024
	sendLagNs  = 30_000 // mean of the exponential lateness of a send
	readLagNs  = 20_000 // user-space time after the kernel stamp
	batchRows  = 4096   // requests per Write call
	bytesPerEv = 120    // size of a content event on the wire
	// ClockMaxErrorNs is every host's kernel maxerror: separate machines (one boot id each)
	// synchronised to a local time source.
	ClockMaxErrorNs = 100_000
)

// Write writes the run: every host's parts (hosts in parallel, up to GOMAXPROCS at once), then
// every host's manifest, which names the parts with their row counts.
func Write(cfg Config) (*Result, error) {
	if cfg.Hosts < 1 || cfg.Workers < 1 || cfg.Rate <= 0 || cfg.Duration <= 0 {
		return nil, fmt.Errorf("synthrun: hosts %d, workers %d, rate %g, duration %v: want all > 0", cfg.Hosts, cfg.Workers, cfg.Rate, cfg.Duration)
	}
	if cfg.PartEvery <= 0 {
		cfg.PartEvery = 10 * time.Second
	}
	hosts := make([]*host, cfg.Hosts)
	errs := make([]error, cfg.Hosts)
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for h := range cfg.Hosts {
		hosts[h] = &host{cfg: cfg, shard: h, dir: filepath.Join(cfg.Dir, fmt.Sprintf("host-%02d", h))}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[h] = hosts[h].write()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	res := &Result{}
	// Seqs interleave hosts and workers, whose Poisson streams differ in length: the stage plans
	// seqs 0 to the highest, each host the requests it wrote (shard_planned).
	var plan int64
	for _, h := range hosts {
		plan = max(plan, h.maxSeq+1)
		res.Requests += h.requests
		res.Chunks += h.chunks
		res.Bytes += h.bytes
		res.Dirs = append(res.Dirs, h.dir)
	}
	for _, h := range hosts {
		if err := h.manifest(plan).Write(filepath.Join(h.dir, schemas.ManifestName)); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// host is one host's run directory being written.
type host struct {
	cfg      Config
	shard    int
	dir      string
	files    []schemas.FileEntry
	workers  []schemas.Worker
	requests int64
	maxSeq   int64 // the highest seq written
	chunks   int64
	bytes    int64
}

// write writes each worker's parts, then workers.parquet.
func (h *host) write() error {
	for w := range h.cfg.Workers {
		if err := h.writeWorker(w); err != nil {
			return err
		}
	}
	path := filepath.Join(h.dir, "raw", "workers.parquet")
	if err := schemas.WriteFile(path, h.workers, producer); err != nil {
		return err
	}
	h.files = append(h.files, schemas.FileEntry{Path: "raw/workers.parquet", Kind: "workers", Rows: int64(len(h.workers))})
	return nil
}

var producer = schemas.Producer{Command: "synthrun"}

// writeWorker writes one worker's requests: a Poisson stream of rate Rate/Workers with its own
// seed; request k of worker w of host h has seq (k·Workers + w)·Hosts + h, unique in the run.
func (h *host) writeWorker(w int) error {
	c := h.cfg
	rng := rand.New(rand.NewPCG(c.Seed, uint64(h.shard*c.Workers+w)))
	rate := c.Rate / float64(c.Workers)
	endNs := StartNs + int64(c.Duration)
	p := &part{host: h, worker: w}
	at := float64(StartNs)
	var sent, reads, readBytes int64
	for k := int64(0); ; k++ {
		at += rng.ExpFloat64() / rate * 1e9
		planned := int64(at)
		if planned >= endNs {
			break
		}
		if n := int((planned - StartNs) / int64(c.PartEvery)); n != p.num {
			if err := p.roll(n); err != nil {
				return err
			}
		}
		seq := (k*int64(c.Workers)+int64(w))*int64(c.Hosts) + int64(h.shard)
		n := p.request(rng, seq, planned)
		h.maxSeq = max(h.maxSeq, seq)
		if len(p.rb) >= batchRows {
			if err := p.flush(); err != nil {
				return err
			}
		}
		sent++
		reads += int64(n)
		readBytes += int64(n) * bytesPerEv
	}
	if err := p.close(); err != nil {
		return err
	}
	h.workers = append(h.workers, schemas.Worker{Worker: int32(w), Shard: int32(h.shard), CPU: int32(w), GOMAXPROCS: 4,
		WallNs: int64(c.Duration), CPUUserNs: sent * 40_000, CPUSysNs: sent * 20_000, Requests: sent, Reads: reads, BytesRead: readBytes, InflightPeak: int32(math.Ceil(rate * 0.4))})
	return nil
}

// part is a worker's open pair of part files.
type part struct {
	host   *host
	worker int
	num    int
	reqs   *schemas.Writer[schemas.RawRequest]
	chunks *schemas.Writer[schemas.RawChunk]
	rb     []schemas.RawRequest
	cb     []schemas.RawChunk
}

// request appends one request and its events; it returns the number of events.
func (p *part) request(rng *rand.Rand, seq, planned int64) int {
	sent := planned + int64(rng.ExpFloat64()*sendLagNs)
	tokens := MinTokens + rng.IntN(MaxTokens-MinTokens+1)
	input := int32(InputMin + rng.IntN(InputMax-InputMin+1))
	first := sent + int64(TTFTBase) + int64(rng.ExpFloat64()*float64(TTFTQueue))
	t, prev := first, sent+5_000
	for i := range tokens + 2 {
		if i > 0 && i < tokens {
			t += int64(ITLMin) + rng.Int64N(int64(ITLMax-ITLMin))
		}
		kind, content, tok := "content", int32(6), ptr[int32](1)
		switch i {
		case tokens:
			kind, content, tok = "usage", 0, nil
		case tokens + 1:
			kind, content, tok = "done", 0, nil
		}
		p.cb = append(p.cb, schemas.RawChunk{Seq: seq, Index: int32(i), RxKernelNs: t, RxUserNs: t + readLagNs, RxAfterNs: prev,
			Quality: schemas.QualityExact, Kind: kind, Bytes: bytesPerEv, ContentBytes: content, Tokens: tok})
		prev = t
	}
	p.rb = append(p.rb, schemas.RawRequest{Seq: seq, Worker: int32(p.worker), Shard: int32(p.host.shard), Conversation: -1,
		InputTokens: input, MaxTokens: int32(tokens), PlannedNs: planned, SentNs: sent, SentEndNs: ptr(sent + 5_000),
		SendStartNs: sent - 2_000, ConnReused: true, HeadersNs: ptr(first - 1_000_000), DoneNs: ptr(t), Status: 200,
		Chunks: int32(tokens + 2), ContentBytes: int64(tokens) * 6, UsagePrompt: ptr(input), UsageComplete: ptr(int32(tokens)),
		FinishReason: "length"})
	return tokens + 2
}

func ptr[T any](v T) *T { return &v }

// flush writes the buffered rows, opening the part's files first.
func (p *part) flush() error {
	if len(p.rb) == 0 {
		return nil
	}
	if p.reqs == nil {
		var err error
		if p.reqs, err = schemas.Create[schemas.RawRequest](filepath.Join(p.host.dir, schemas.KindOf[schemas.RawRequest]().PartPath(p.worker, p.num)), producer); err != nil {
			return err
		}
		if p.chunks, err = schemas.Create[schemas.RawChunk](filepath.Join(p.host.dir, schemas.KindOf[schemas.RawChunk]().PartPath(p.worker, p.num)), producer); err != nil {
			p.reqs.Abort()
			return err
		}
	}
	if err := p.reqs.Write(p.rb); err != nil {
		return err
	}
	if err := p.chunks.Write(p.cb); err != nil {
		return err
	}
	p.rb, p.cb = p.rb[:0], p.cb[:0]
	return nil
}

// roll closes the open part (recording its files) and starts part n.
func (p *part) roll(n int) error {
	err := p.close()
	p.num = n
	return err
}

// close flushes and closes the open part, if any.
func (p *part) close() error {
	if err := p.flush(); err != nil {
		return err
	}
	if p.reqs == nil {
		return nil
	}
	h := p.host
	reqs, chunks := schemas.KindOf[schemas.RawRequest](), schemas.KindOf[schemas.RawChunk]()
	for _, f := range []struct {
		path, kind string
		rows       int64
		close      func() error
	}{{reqs.PartPath(p.worker, p.num), reqs.Name, p.reqs.Rows(), p.reqs.Close}, {chunks.PartPath(p.worker, p.num), chunks.Name, p.chunks.Rows(), p.chunks.Close}} {
		if err := f.close(); err != nil {
			return err
		}
		st, err := os.Stat(filepath.Join(h.dir, f.path))
		if err != nil {
			return err
		}
		h.bytes += st.Size()
		h.files = append(h.files, schemas.FileEntry{Path: f.path, Kind: f.kind, Rows: f.rows, Worker: int32(p.worker), Part: int32(p.num)})
	}
	h.requests += p.reqs.Rows()
	h.chunks += p.chunks.Rows()
	p.reqs, p.chunks = nil, nil
	return nil
}

// manifest is the host's manifest after a complete capture of shard h/H; planned is the
// requests of the whole run (every host's manifest is a copy of the replay's).
func (h *host) manifest(planned int64) *schemas.Manifest {
	c := h.cfg
	name := fmt.Sprintf("synthetic-%dx%g", c.Hosts, c.Rate)
	cfg, _ := json.Marshal(schemas.Config{Name: name, Seed: int64(c.Seed), Tokenizer: "whitespace",
		Target: schemas.Target{URL: "http://server.test:8000", API: schemas.APICompletions, Model: "synthetic"},
		SLO:    schemas.SLO{TTFT: schemas.Duration(500 * time.Millisecond), TPOT: schemas.Duration(50 * time.Millisecond)}})
	created := time.Unix(0, StartNs-int64(time.Minute)).UTC()
	ended := time.Unix(0, StartNs+int64(c.Duration)+int64(time.Second)).UTC()
	m := &schemas.Manifest{RunID: fmt.Sprintf("synthetic-%016x", c.Seed), ToolVersion: "synthrun", Host: fmt.Sprintf("host-%02d", h.shard),
		CPUs: c.Workers, ClockSource: "CLOCK_REALTIME", Created: created, StartNs: StartNs, Shard: fmt.Sprintf("%d/%d", h.shard, c.Hosts),
		Clock: &schemas.Clock{Source: "adjtimex", Synchronized: true, State: "TIME_OK", MaxErrorNs: ClockMaxErrorNs, EstErrorNs: ClockMaxErrorNs / 10,
			BootID: fmt.Sprintf("synthetic-boot-%02d", h.shard), ReadAt: ended},
		Config: cfg, Status: schemas.StatusComplete, Files: h.files, ShardPlanned: map[int32]int64{0: h.requests},
		Stages: []schemas.StageInfo{{Index: 0, Name: name, Mode: schemas.ModeOpen, Arrival: schemas.ArrivalPoisson, Rate: c.Rate * float64(c.Hosts),
			DurationNs: int64(c.Duration), Requests: planned}},
		Steps: []schemas.Step{{Name: schemas.StepReplay, Started: created, Ended: created, Status: schemas.StepOK},
			{Name: schemas.StepCapture, Started: created, Ended: ended, Status: schemas.StatusComplete}}}
	for w := range c.Workers {
		m.Workers = append(m.Workers, schemas.WorkerStatus{Worker: int32(w), Shard: int32(h.shard), CPU: int32(w), Exit: "ok"})
	}
	return m
}
