package aggregate

import (
	"cmp"
	"encoding/json"
	"log/slog"
	"os"
	"strconv"

	"path/filepath"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/wirebench/wirebench/schemas"
)

// t0 is the fixtures' run start (CLOCK_REALTIME ns).
const t0 = int64(1_700_000_000_000_000_000)

const ms = int64(1e6)

// fixture is a hand-made run directory.
type fixture struct {
	runID   string
	status  string          // manifest status; "" = complete (planned: a directory without a capture)
	shard   string          // "i/n" for a host of a split run
	planned map[int32]int64 // shard_planned
	clock   *schemas.Clock  // the host's clock state
	stages  []schemas.StageInfo
	slo     schemas.SLO
	reqs    map[[2]int][]schemas.RawRequest // (worker, part) -> rows
	chunks  map[[2]int][]schemas.RawChunk
	workers []schemas.Worker
	server  []schemas.ServerMetric
	missing []string
	wexit   []schemas.WorkerStatus
}

func newFixture() *fixture {
	return &fixture{
		runID:  "run-1",
		stages: []schemas.StageInfo{{Index: 0, Name: "r10", Mode: "open", Rate: 10, OffsetNs: 0, DurationNs: 1e9, Requests: 10}},
		reqs:   map[[2]int][]schemas.RawRequest{},
		chunks: map[[2]int][]schemas.RawChunk{},
	}
}

// req adds a request row of worker 0 part 0 with sane defaults: P = S = t0 + at.
func (f *fixture) req(r schemas.RawRequest) *schemas.RawRequest {
	k := [2]int{int(r.Worker), 0}
	if r.Status == 0 && r.ErrorKind == "" {
		r.Status = 200
	}
	f.reqs[k] = append(f.reqs[k], r)
	return &f.reqs[k][len(f.reqs[k])-1]
}

func (f *fixture) chunk(worker int, c schemas.RawChunk) {
	k := [2]int{worker, 0}
	if c.Quality == "" {
		c.Quality = "exact"
		if c.RxKernelNs == 0 {
			c.Quality = "user"
		}
	}
	f.chunks[k] = append(f.chunks[k], c)
}

// write writes the run directory and returns its path. Like capture, it records in each
// request row how many events its part holds for it (chunks), unless the test set it; the last
// stage plans requests up to the highest seq (replay numbers the plan 0 to n − 1).
func (f *fixture) write(t testing.TB, dir string) string {
	t.Helper()
	f.fillChunkCounts()
	cfg, _ := json.Marshal(schemas.Config{SLO: f.slo})
	m := &schemas.Manifest{RunID: f.runID, StartNs: t0, Config: cfg, Stages: f.stages, Status: cmp.Or(f.status, schemas.StatusComplete), Missing: f.missing, Workers: f.wexit, Created: time.Unix(0, t0),
		Shard: f.shard, ShardPlanned: f.planned, Clock: f.clock}
	if m.Status != schemas.StatusPlanned {
		m.Steps = []schemas.Step{{Name: "capture", Status: m.Status}}
	}
	p := schemas.Producer{Command: "test"}
	for k, rows := range f.reqs {
		path := filepath.Join("raw", partName("requests", k))
		if err := schemas.WriteFile(filepath.Join(dir, path), rows, p); err != nil {
			t.Fatal(err)
		}
		m.AddFile(schemas.FileEntry{Path: path, Kind: "raw-requests", Rows: int64(len(rows)), Worker: int32(k[0]), Part: int32(k[1])})
		cpath := filepath.Join("raw", partName("chunks", k))
		if err := schemas.WriteFile(filepath.Join(dir, cpath), f.chunks[k], p); err != nil {
			t.Fatal(err)
		}
		m.AddFile(schemas.FileEntry{Path: cpath, Kind: "raw-chunks", Rows: int64(len(f.chunks[k])), Worker: int32(k[0]), Part: int32(k[1])})
	}
	if f.workers != nil {
		if err := schemas.WriteFile(filepath.Join(dir, "raw", "workers.parquet"), f.workers, p); err != nil {
			t.Fatal(err)
		}
	}
	if f.server != nil {
		if err := schemas.WriteFile(filepath.Join(dir, "raw", "server-metrics.parquet"), f.server, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Write(filepath.Join(dir, schemas.ManifestName)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fillChunkCounts sets each request row's chunks to its part's event rows for its seq (where
// the test left it 0), and makes the plan cover every seq.
func (f *fixture) fillChunkCounts() {
	maxSeq := int64(-1)
	for k, rows := range f.reqs {
		n := map[int64]int32{}
		for _, c := range f.chunks[k] {
			n[c.Seq]++
		}
		for i := range rows {
			if rows[i].Chunks == 0 {
				rows[i].Chunks = n[rows[i].Seq]
			}
			maxSeq = max(maxSeq, rows[i].Seq)
		}
	}
	var planned int64
	for _, st := range f.stages {
		planned += st.Requests
	}
	if last := len(f.stages) - 1; last >= 0 && maxSeq >= planned {
		f.stages[last].Requests += maxSeq + 1 - planned
	}
}

func partName(kind string, k [2]int) string {
	return kind + "-w" + pad(k[0], 2) + "-" + pad(k[1], 4) + ".parquet"
}

func pad(v, n int) string {
	s := []byte{}
	for i := 0; i < n; i++ {
		s = append([]byte{byte('0' + v%10)}, s...)
		v /= 10
	}
	return string(s)
}

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// readRequests reads metrics/requests.parquet keyed by seq.
func readRequests(t testing.TB, dir string) map[int64]schemas.MetricRequest {
	t.Helper()
	rows, err := schemas.ReadFile[schemas.MetricRequest](filepath.Join(dir, "metrics", "requests.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]schemas.MetricRequest{}
	for _, r := range rows {
		out[r.Seq] = r
	}
	return out
}

// writeOtherVersion writes a raw-requests file stamped with another schema version.
func writeOtherVersion(t testing.TB, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[schemas.RawRequest](f,
		parquet.KeyValueMetadata(schemas.MetaVersion, strconv.Itoa(schemas.SchemaVersion+1)),
		parquet.KeyValueMetadata(schemas.MetaKind, "raw-requests"))
	if _, err := w.Write([]schemas.RawRequest{{Seq: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// pointDist is a Dist's point figures, without its percentile bounds and dereferenced, for
// tests of the point figures; a null figure is -1.
type pointDist struct{ Count, P50, P90, P95, P99, P999, Max, Mean int64 }

func point(d schemas.Dist) pointDist {
	return pointDist{d.Count, orMinus(d.P50), orMinus(d.P90), orMinus(d.P95), orMinus(d.P99), orMinus(d.P999), orMinus(d.Max), orMinus(d.Mean)}
}

func orMinus(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

// val is *p, or the zero value for null (a test that wants a figure then sees 0 and says so).
func val[T any](p *T) (v T) {
	if p != nil {
		v = *p
	}
	return v
}
