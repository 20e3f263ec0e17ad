package synthrun

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/wirebench/wirebench/aggregate"
	"github.com/wirebench/wirebench/report"
	"github.com/wirebench/wirebench/schemas"
)

// small is a run small enough for -race: 3 hosts × 2 workers × 150 req/s × 3 s, parts every
// second (about 1,350 requests, 18 parts a host).
var small = Config{Hosts: 3, Workers: 2, Rate: 150, Duration: 3 * time.Second, PartEvery: time.Second, Seed: 7}

// TestWriteAggregates: the hosts merge as one run in aggregate, with the counts written and the
// figures the synthetic server was given.
func TestWriteAggregates(t *testing.T) {
	cfg := small
	cfg.Dir = t.TempDir()
	res, err := Write(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Dirs) != 3 || res.Requests < 1200 || res.Requests > 1500 || res.Bytes <= 0 {
		t.Fatalf("Write = %d dirs, %d requests, %d bytes; want 3 dirs, about 1,350 requests (450/s × 3 s)", len(res.Dirs), res.Requests, res.Bytes)
	}
	meanChunks := float64(res.Chunks) / float64(res.Requests)
	if want := float64(MinTokens+MaxTokens)/2 + 2; math.Abs(meanChunks-want) > 0.5 {
		t.Errorf("chunks per request %.2f; want about %.1f (the tokens, usage and [DONE])", meanChunks, want)
	}
	var shardPlanned int64
	for h, dir := range res.Dirs {
		m, err := schemas.ReadManifest(filepath.Join(dir, schemas.ManifestName))
		if err != nil {
			t.Fatal(err)
		}
		if m.Shard != []string{"0/3", "1/3", "2/3"}[h] || m.Stages[0].Requests < res.Requests || len(m.Files) != 2*2*3+1 {
			t.Errorf("%s: shard %q, planned %d, %d files; want %d/3, at least %d, 13 (2 workers × 3 parts × 2 + workers)", dir, m.Shard, m.Stages[0].Requests, len(m.Files), h, res.Requests)
		}
		shardPlanned += m.ShardPlanned[0]
	}
	if shardPlanned != res.Requests {
		t.Errorf("the hosts' shard_planned add up to %d; want the %d requests written", shardPlanned, res.Requests)
	}

	log := slog.New(slog.DiscardHandler)
	out := filepath.Join(cfg.Dir, "merged")
	sum, err := aggregate.Run(context.Background(), aggregate.Config{Runs: res.Dirs, Out: out, Strict: true}, log)
	if err != nil {
		t.Fatalf("aggregate --strict: %v", err)
	}
	if sum.Requests != res.Requests || sum.Chunks != res.Chunks || len(sum.Stages) != 1 {
		t.Fatalf("aggregate read %d requests, %d chunks, %d stages; want %d, %d, 1", sum.Requests, sum.Chunks, len(sum.Stages), res.Requests, res.Chunks)
	}
	s := sum.Stages[0]
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	if math.Abs(val(s.AchievedRate)-450)/450 > 0.1 || s.Completed != res.Requests {
		t.Errorf("stage: achieved %.0f req/s, %d ok; want about 450 and all %d", val(s.AchievedRate), s.Completed, res.Requests)
	}
	// TTFT = 40 ms + Exp(20 ms): median 40 + 20·ln 2 ≈ 53.9 ms. ITL uniform in [10, 20) ms (the
	// usage and [DONE] events come with the last token, 0 gap).
	if p := ms(val(s.TTFT.P50)); p < 50 || p > 58 {
		t.Errorf("TTFT p50 %.1f ms; want about 53.9", p)
	}
	if p := ms(val(s.TPOT.P50)); p < 13 || p > 17 {
		t.Errorf("TPOT p50 %.1f ms; want about 15 (mean of 10..20 ms gaps)", p)
	}
	if level, sentence := report.Trust(sum.Stages); level != "green" {
		t.Errorf("trust %s: %s; want green (sends as planned, exact stamps)", level, sentence)
	}
}

// TestWriteSeed: the same seed writes the same bytes; another seed other rows.
func TestWriteSeed(t *testing.T) {
	write := func(seed uint64) []byte {
		cfg := small
		cfg.Hosts, cfg.Duration, cfg.Seed, cfg.Dir = 2, time.Second, seed, t.TempDir()
		if _, err := Write(cfg); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(cfg.Dir, "host-01", "raw", "chunks-w01-0000.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b, c := write(1), write(1), write(2)
	if !bytes.Equal(a, b) {
		t.Errorf("seed 1 twice: the chunk files differ")
	}
	if bytes.Equal(a, c) {
		t.Errorf("seeds 1 and 2: the same chunk file")
	}
}

func TestWriteBadConfig(t *testing.T) {
	if _, err := Write(Config{Dir: t.TempDir(), Hosts: 0, Workers: 1, Rate: 1, Duration: time.Second}); err == nil {
		t.Errorf("Write(hosts 0) = nil error; want one")
	}
}

// val is *p, or the zero value for null.
func val[T any](p *T) (v T) {
	if p != nil {
		v = *p
	}
	return v
}
